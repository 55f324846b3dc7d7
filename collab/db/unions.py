"""Reads of several tables as rows of one shape, so that they go to the database as one
``UNION ALL`` statement: one round trip for what would be a query per table.

A ``Rows`` names its columns and their types. Each branch fills the columns it has and leaves
the others blank: a zero for a number, a NULL of the column's type for anything else (a bare
NULL in the first of several inputs would be read as text by PostgreSQL, which then refuses
to unite it with a date). The same ORM expressions run on PostgreSQL and SQLite.

Building and compiling a dozen querysets costs more than running their statement, so
``collab.db.prepared.PreparedUnion`` compiles a statement once per shape of what it reads
(which projects, which spans, not their values) and then runs it with each request's values.
"""

from collections.abc import Sequence
from typing import Any

from django.db.models import Field, IntegerField, QuerySet, Value
from django.db.models.functions import Cast


class Rows:
    """``Rows(kind=BigIntegerField(), day=DateField(), ...)``: a shape of rows, in order."""

    def __init__(self, **columns: Field) -> None:
        self.columns = columns
        self.index = {name: position for position, name in enumerate(columns)}

    def extended(self, **columns: Field) -> "Rows":
        """These rows with more columns after theirs: reads of both kinds then go in one
        statement, each leaving the other's columns blank."""
        shared = sorted(set(columns) & set(self.columns))
        if shared:
            raise ValueError(f"Columns already there: {shared}")
        return Rows(**self.columns, **columns)

    def _blank(self, name: str) -> Any:
        column = self.columns[name]
        if isinstance(column, IntegerField):
            return Value(0, output_field=column)
        return Cast(Value(None), column)

    def of(
        self,
        queryset: QuerySet,
        *,
        values: dict[str, Any],
        keys: dict[str, Any] | None = None,
        constants: dict[str, Any] | None = None,
    ) -> QuerySet:
        """``queryset`` as these rows: one row per distinct ``keys`` (expressions) with
        ``values`` (aggregates) over its rows, or, without ``keys``, one row per row with
        ``values`` (expressions); ``constants`` (plain values) the same on every row; a
        blank in every other column. Columns are selected under ``row_<name>``, so that the
        model's own fields keep their names."""
        keys = keys or {}
        constants = constants or {}
        given = [*keys, *values, *constants]
        unknown = sorted(set(given) - set(self.columns))
        if unknown or len(set(given)) != len(given):
            raise ValueError(f"Unknown or repeated columns: {unknown or given}")
        rows = queryset.order_by().annotate(**{f"row_{name}": key for name, key in keys.items()})
        renamed = {f"row_{name}": value for name, value in values.items()}
        if keys:
            rows = rows.values(*(f"row_{name}" for name in keys)).annotate(**renamed)
        else:
            rows = rows.annotate(**renamed)
        fixed = {
            f"row_{name}": Value(value, output_field=self.columns[name])
            for name, value in constants.items()
        }
        blanks = {f"row_{name}": self._blank(name) for name in self.columns if name not in given}
        names = [f"row_{name}" for name in self.columns]
        return rows.annotate(**fixed, **blanks).values_list(*names)

    @staticmethod
    def fetch(branches: Sequence[QuerySet]) -> list[tuple]:
        """The rows of every branch, in one statement (none, and no query, without branches)."""
        if not branches:
            return []
        first, *others = branches
        return list(first.union(*others, all=True) if others else first)
