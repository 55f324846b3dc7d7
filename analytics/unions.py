"""Reads of several tables as rows of one shape, so that they go to the database as one
``UNION ALL`` statement: one round trip for what would be a query per table.

A ``Rows`` names its columns and their types. Each branch fills the columns it has and leaves
the others blank: a zero for a number, a NULL of the column's type for anything else (a bare
NULL in the first of several inputs would be read as text by PostgreSQL, which then refuses
to unite it with a date). The same ORM expressions run on PostgreSQL and SQLite.

Building and compiling a dozen querysets costs more than running their statement, so
``Prepared`` compiles a statement once per shape of what it reads (which projects, which
spans, not their values) and then runs it with each request's values.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db import connections, router
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


# Compiled once per shape --------------------------------------------------------------------

# Stand-ins: values no plan holds, each of the type of the value it stands for.
_INT_BASE = -7_320_000_000
_EPOCH = datetime(1901, 1, 1, tzinfo=UTC)


def _is_value(leaf: object) -> bool:
    return isinstance(leaf, (int, date)) and not isinstance(leaf, bool)


def _shape(plan: object) -> object:
    """The plan with its values replaced by their types: what decides the statement's SQL."""
    if isinstance(plan, (tuple, list)):
        return (type(plan).__name__, tuple(_shape(part) for part in plan))
    if _is_value(plan):
        return type(plan).__name__
    return ("=", plan)


def _values(plan: object, into: list[Any]) -> list[Any]:
    if isinstance(plan, (tuple, list)):
        for part in plan:
            _values(part, into)
    elif _is_value(plan):
        into.append(plan)
    return into


def _stand_in(plan: object, counter: list[int]) -> Any:
    if isinstance(plan, (tuple, list)):
        parts = [_stand_in(part, counter) for part in plan]
        if isinstance(plan, list):
            return parts
        # A named tuple is rebuilt from its fields, a plain one from the items.
        return type(plan)(*parts) if hasattr(plan, "_fields") else tuple(parts)
    if not _is_value(plan):
        return plan
    index = counter[0]
    counter[0] += 1
    if isinstance(plan, datetime):
        return _EPOCH + timedelta(microseconds=index + 1)
    if isinstance(plan, date):
        return _EPOCH.date() + timedelta(days=index + 1)
    return _INT_BASE - index


class Prepared:
    """A ``UNION ALL`` of ``Rows`` branches compiled to SQL once per shape of its plan, then
    run with each call's values: the statement's reads are built and compiled by the ORM once,
    not on every request (as ``collab.db.prepared.PreparedQuery`` does for one query).

    ``build(plan)`` gives the branches for a plan: nested tuples (named tuples too) and lists
    whose leaves are values (integers, dates, datetimes, each used as a plain lookup value or
    an element of an ``__in`` list) or anything else hashable, which, like the lengths of the
    lists, is part of the shape. ``build`` must depend on the values only through the lookups
    they are given to: decisions taken on values belong in the plan, before.

    Compiling puts a stand-in for each value and checks that every one reached the SQL's
    parameters (as the database adapter takes them: SQLite's are strings), so a value the
    query transforms fails loudly instead of running wrong. Compiled statements are kept per
    thread and database (a compiler belongs to its thread's connection), the ``size`` last
    used shapes of each.
    """

    def __init__(self, build: Callable[[Any], list[QuerySet[Any]]], *, size: int = 32) -> None:
        self.build = build
        self.size = size
        self._local = threading.local()

    def fetch(self, plan: object) -> list[tuple[Any, ...]]:
        values = _values(plan, [])
        shape = _shape(plan)
        compiled = self._compiled(shape, plan)
        if compiled is None:
            return []
        return compiled.rows(values)

    def _compiled(self, shape: object, plan: object) -> "_Statement | None":
        cache: OrderedDict[tuple[str | None, object], _Statement | None] = (
            self._local.__dict__.setdefault("cache", OrderedDict())
        )
        # Per database: the router may send this read to a replica now, to the primary later.
        model = getattr(self._local, "model", None)
        key = (router.db_for_read(model) if model is not None else None, shape)
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
        stand_in = _stand_in(plan, [0])
        branches = self.build(stand_in)
        statement = _Statement(branches, _values(stand_in, []), key[0]) if branches else None
        if statement is not None:
            self._local.model = statement.model
            key = (statement.alias, shape)
        cache[key] = statement
        while len(cache) > self.size:
            cache.popitem(last=False)
        return statement


class _Statement:
    def __init__(
        self, branches: list[QuerySet[Any]], stand_ins: list[Any], alias: str | None
    ) -> None:
        first, *others = branches
        union = first.union(*others, all=True) if others else first
        if alias is not None:
            union = union.using(alias)
        self.model = union.model
        self.alias = union.db
        self.compiler = union.query.get_compiler(self.alias)
        self.sql, params = self.compiler.as_sql()
        self.params = list(params)
        ops = connections[self.alias].ops

        def same(value: Any) -> Any:
            return value

        # Each stand-in as the adapter may have passed it on, and how to pass a value alike.
        forms: dict[Any, tuple[int, Callable[[Any], Any]]] = {}
        for index, stand_in in enumerate(stand_ins):
            forms[stand_in] = (index, same)
            if isinstance(stand_in, datetime):
                forms[ops.adapt_datetimefield_value(stand_in)] = (
                    index,
                    ops.adapt_datetimefield_value,
                )
            elif isinstance(stand_in, date):
                forms[ops.adapt_datefield_value(stand_in)] = (index, ops.adapt_datefield_value)
        self.slots: list[tuple[int, int, Callable[[Any], Any]]] = [
            (position, *forms[param])
            for position, param in enumerate(self.params)
            if type(param) in (int, str, date, datetime) and param in forms
        ]
        lost = set(range(len(stand_ins))) - {index for _position, index, _adapt in self.slots}
        if lost:
            raise ValueError(f"Values not found in the compiled statement: {sorted(lost)}")

    def rows(self, values: list[Any]) -> list[tuple[Any, ...]]:
        params = list(self.params)
        for position, index, adapt in self.slots:
            params[position] = adapt(values[index])
        with connections[self.alias].cursor() as cursor:
            cursor.execute(self.sql, params)
            fetched = cursor.fetchall()
        return [tuple(row) for row in self.compiler.results_iter(results=[fetched])]
