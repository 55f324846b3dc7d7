"""Writes sent to the database together: one statement on PostgreSQL, one by one elsewhere.

A change made of several writes whose values are all known before the first of them runs (an
issue's row, its label links, its history rows, its event, its counters) need not wait for one
another's answers. ``WriteBatch`` collects them as Django would write them (the ORM's own
insert, update and delete compilers, so every value is adapted as ``save()`` and ``update()``
adapt it) and sends them:

- on PostgreSQL, as the data-modifying ``WITH`` clauses of one statement: one round trip and
  one parse for the lot. PostgreSQL runs each clause exactly once and to completion; none sees
  another's rows (they share one snapshot), which writes whose values are known beforehand
  never need. Foreign keys are checked at commit (Django makes them deferrable), and unique
  constraints hold across the clauses as across statements;
- elsewhere (SQLite has no data-modifying ``WITH``), one statement each, in the order added.

Use it for writes that touch rows the transaction already holds, or new rows: a clause takes
row locks when it runs, in an order PostgreSQL does not promise between clauses, so rows other
transactions lock too (counters, say) should be locked in a fixed order within one clause. No
two writes of a batch may change the same row (in one statement PostgreSQL would apply only
one of them).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model, QuerySet
from django.db.models.sql import DeleteQuery, InsertQuery, UpdateQuery


@dataclass
class _Statement:
    sql: str
    params: tuple[Any, ...]
    # The rows whose primary keys the statement returns, in the order it returns them.
    returns_for: Sequence[Model] = field(default_factory=list)


class WriteBatch:
    """``batch.insert(objs)``, ``batch.update(queryset, **values)``, ``batch.delete(queryset)``,
    ``batch.add(sql, params)``, then ``batch.run()`` inside the change's transaction."""

    def __init__(self, using: str = DEFAULT_DB_ALIAS) -> None:
        self.using = using
        self._statements: list[_Statement] = []
        self._after: list[Callable[[], None]] = []

    @property
    def _connection(self) -> Any:
        return connections[self.using]

    def insert(self, objs: Sequence[Model], *, returning: bool = False) -> None:
        """Insert model instances (``bulk_create`` without its signals-free shortcuts: every
        field's ``pre_save`` runs). Either all have their primary key or none; with
        ``returning``, those without get theirs once the batch has run."""
        if not objs:
            return
        opts = objs[0]._meta
        with_pk = [obj.pk is not None for obj in objs]
        if any(with_pk) and not all(with_pk):
            raise ValueError("Insert rows that all have their primary key, or none of them.")
        fields = [
            f
            for f in opts.concrete_fields
            if not f.generated and (all(with_pk) or f is not opts.auto_field)
        ]
        query = InsertQuery(objs[0].__class__)
        query.insert_values(fields, list(objs), raw=False)
        compiler = query.get_compiler(using=self.using)
        if returning and not all(with_pk):
            compiler.returning_fields = [opts.pk]
        statements = compiler.as_sql()
        if len(statements) != 1:  # a backend without multi-row inserts: not one we run on
            raise NotImplementedError("WriteBatch needs a backend with multi-row inserts.")
        sql, params = statements[0]
        returns_for = list(objs) if compiler.returning_fields else []
        self._statements.append(_Statement(sql, tuple(params), returns_for))
        self._after.append(lambda: _mark_saved(objs, self.using))

    def update(self, queryset: QuerySet[Any], **values: Any) -> None:
        """``queryset.update(**values)``, as one of the batch's statements."""
        query: Any = queryset.query.chain(UpdateQuery)
        query.add_update_values(values)
        sql, params = query.get_compiler(using=self.using).as_sql()
        self._statements.append(_Statement(sql, tuple(params)))

    def delete(self, queryset: QuerySet[Any]) -> None:
        """A plain ``DELETE`` of the queryset's rows: no cascade, no signals (for rows nothing
        refers to, such as the links of a many-to-many relation)."""
        query = queryset.query.clone()
        query.__class__ = DeleteQuery
        sql, params = query.get_compiler(using=self.using).as_sql()
        self._statements.append(_Statement(sql, tuple(params)))

    def add(self, sql: str, params: Sequence[Any]) -> None:
        """A statement of one's own (no ``RETURNING``); ``%s`` placeholders."""
        self._statements.append(_Statement(sql, tuple(params)))

    def on_run(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the batch has run (the returned keys are set by then)."""
        self._after.append(callback)

    def run(self) -> None:
        statements, self._statements = self._statements, []
        after, self._after = self._after, []
        if not statements:
            return
        with self._connection.cursor() as cursor:
            if self._connection.vendor == "postgresql" and len(statements) > 1:
                _run_as_one(self._connection, cursor, statements)
            else:
                for statement in statements:
                    cursor.execute(statement.sql, statement.params)
                    if statement.returns_for:
                        _set_keys(statement.returns_for, [row[0] for row in cursor.fetchall()])
        for callback in after:
            callback()


def _run_as_one(connection: Any, cursor: Any, statements: list[_Statement]) -> None:
    clauses: list[str] = []
    params: list[Any] = []
    for index, statement in enumerate(statements):
        clauses.append(f"w{index} AS ({statement.sql})")
        params.extend(statement.params)
    returning = [index for index, statement in enumerate(statements) if statement.returns_for]
    if returning:
        # Each clause's keys in the order it returned them (its rows' order), tagged with it.
        main = " UNION ALL ".join(
            f"SELECT {index}, {_pk_column(connection, statements[index])} FROM w{index}"  # noqa: S608
            for index in returning
        )
    else:
        main = "SELECT NULL WHERE FALSE"  # every clause runs whether its rows are read or not
    cursor.execute(f"WITH {', '.join(clauses)} {main}", params)
    keys: dict[int, list[Any]] = {index: [] for index in returning}
    for index, key in cursor.fetchall():
        keys[index].append(key)
    for index in returning:
        _set_keys(statements[index].returns_for, keys[index])


def _pk_column(connection: Any, statement: _Statement) -> str:
    return connection.ops.quote_name(statement.returns_for[0]._meta.pk.column)


def _set_keys(objs: Sequence[Model], keys: list[Any]) -> None:
    if len(keys) != len(objs):
        raise RuntimeError(f"Expected {len(objs)} keys back from an insert, got {len(keys)}.")
    for obj, key in zip(objs, keys, strict=True):
        obj.pk = key


def _mark_saved(objs: Sequence[Model], using: str) -> None:
    for obj in objs:
        obj._state.adding = False
        obj._state.db = using
