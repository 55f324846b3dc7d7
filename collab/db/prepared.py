"""Querysets compiled to SQL once, for the lookups every API request makes.

Django compiles a queryset to SQL each time it is evaluated. For the few reads on the path of
every request (the API key, the project named in the URL, the list's counters), compiling
costs several times running the query: about 2 M CPU instructions to compile the key lookup
against 0.15 M to execute it. A ``PreparedQuery`` compiles its ``values()`` queryset once per
thread and database, with stand-ins for its parameters, then runs that SQL with each call's
values, and converts the rows exactly as the ORM does (the same compiler's converters).

Parameters are given by name; each must be a string or an integer used as a plain lookup
value (``=``, not ``icontains`` or ``in``, whose values the compiler rewrites). Compiling
checks that every stand-in reached the SQL's parameters, so a query that transforms one fails
loudly instead of running with the wrong value.

A locking read (``select_for_update()``) goes where Django would send it, to the database for
writes (which pins the rest of the request there, ``collab.db.routers``), and only inside a
transaction.
"""

import threading
from collections.abc import Callable
from contextlib import nullcontext

from django.db import connections, router, transaction
from django.db.models import Model, QuerySet
from django.db.transaction import TransactionManagementError

# Stand-ins: values no caller passes, of the type the field expects, so the compiler keeps
# them as they are (an integer field turns a string into a type error, and a string field
# turns an integer into a string).
_INT_BASE = -7_310_000_000


class PreparedQuery:
    """``PreparedQuery(lambda key_hash: ApiKey.objects.filter(key_hash=key_hash).values(...))``,
    then ``query.rows(key_hash="...")``: a list of dicts, as ``values()`` gives."""

    def __init__(self, build: Callable[..., QuerySet], **types: type):
        unsupported = [name for name, kind in types.items() if kind not in (int, str)]
        if unsupported:
            raise TypeError(f"Parameters must be int or str: {unsupported}")
        self.build = build
        self.types = types
        self._model: type[Model] | None = None
        self._for_write = False
        self._local = threading.local()

    def rows(self, **params) -> list[dict]:
        if params.keys() != self.types.keys():
            raise TypeError(f"Expected parameters {sorted(self.types)}, got {sorted(params)}")
        compiled = self._compiled()
        connection = connections[compiled.alias]
        if compiled.locks and connection.get_autocommit():
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction."
            )
        values = list(compiled.params)
        for name, positions in compiled.slots.items():
            value = params[name]
            if type(value) is not self.types[name]:
                raise TypeError(f"{name} must be {self.types[name].__name__}")
            for position in positions:
                values[position] = value
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, values)
            fetched = cursor.fetchall()
        names = compiled.names
        return [dict(zip(names, row, strict=True)) for row in compiled.convert(fetched)]

    @property
    def alias(self) -> str:
        """The database the query runs on (for ``Model.from_db``)."""
        return self._compiled().alias

    def _compiled(self) -> "_Compiled":
        # Per thread (a compiler is bound to its thread's connection) and per database: the
        # router may send this read to a replica now and to the primary later in a request.
        by_alias = self._local.__dict__.setdefault("by_alias", {})
        alias = None
        if self._model is not None:
            route = router.db_for_write if self._for_write else router.db_for_read
            alias = route(self._model)
        compiled = by_alias.get(alias)
        if compiled is None:
            compiled = _Compiled(self.build, self.types, using=alias)
            self._model, self._for_write = compiled.model, compiled.locks
            by_alias[alias] = by_alias[compiled.alias] = compiled
        return compiled


class _Compiled:
    def __init__(
        self, build: Callable[..., QuerySet], types: dict[str, type], using: str | None = None
    ):
        stand_ins = {
            name: (_INT_BASE - index if kind is int else f"\x00prepared:{name}:{index}\x00")
            for index, (name, kind) in enumerate(sorted(types.items()))
        }
        queryset = build(**stand_ins)
        if using is not None:
            queryset = queryset.using(using)
        self.model = queryset.model
        query = queryset.query
        if not query.values_select and not query.annotation_select:
            raise TypeError("A PreparedQuery needs a values() queryset.")
        self.alias = queryset.db  # for a locking read, the database for writes
        self.locks = bool(query.select_for_update)
        self.compiler = query.get_compiler(self.alias)
        # as_sql() refuses a locking read outside a transaction; its SQL is the same in one.
        with transaction.atomic(using=self.alias) if self.locks else nullcontext():
            self.sql, params = self.compiler.as_sql()
        self.params = tuple(params)
        self.slots = {
            name: [
                position
                for position, param in enumerate(self.params)
                if type(param) is type(stand_in) and param == stand_in
            ]
            for name, stand_in in stand_ins.items()
        }
        lost = [name for name, positions in self.slots.items() if not positions]
        if lost:
            raise ValueError(f"Parameters not found in the compiled query: {lost}")
        self.names = (
            list(query.selected)
            if query.selected
            else [*query.extra_select, *query.values_select, *query.annotation_select]
        )

    def convert(self, fetched: list[tuple]):
        return self.compiler.results_iter(results=[fetched])
