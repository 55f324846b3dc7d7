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

A ``PreparedUnion`` does the same for a ``UNION ALL`` of reads (``collab.db.unions.Rows``)
whose SQL depends on the shape of what it reads (how many projects, which spans), compiled
once per shape; its values may also be dates and datetimes, passed as the adapter takes them.
Both compile through one ``Statement``.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from contextlib import nullcontext
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db import connections, router, transaction
from django.db.models import Model, QuerySet
from django.db.transaction import TransactionManagementError

from collab.db.planner import planned

# Stand-ins: values no caller passes, of the type the field expects, so the compiler keeps
# them as they are (an integer field turns a string into a type error, and a string field
# turns an integer into a string).
_INT_BASE = -7_310_000_000


class Statement:
    """A queryset compiled to SQL once, with stand-ins for its values: then run with each
    call's values in their places, its rows converted exactly as the ORM converts them (the
    same compiler's converters).

    ``stand_ins`` maps each value's key to its stand-in. Compiling checks that every stand-in
    reached the SQL's parameters (as the database adapter takes them: SQLite's dates are
    strings), so a value the query transforms fails loudly instead of running wrong.

    ``within`` maps keys to stand-ins of strings that the query may write into a parameter of
    its own (a search's words, which a prefix's ``'word':*`` or a phrase's ``word word``
    holds): each parameter holding any is rebuilt with each call's values in their places,
    written in as they are, not escaped as the query escapes what it is given (a ``LIKE``'s
    ``%``): for values the query writes in unchanged alone (a search's words are letters and
    digits). Such a stand-in must not occur in anything else (``\x00`` fences them).
    """

    def __init__(
        self,
        queryset: QuerySet[Any],
        stand_ins: Mapping[Any, Any],
        *,
        within: Mapping[Any, str] | None = None,
        lost: str = "Values not found in the compiled statement",
    ) -> None:
        self.model = queryset.model
        query = queryset.query
        self.alias = queryset.db  # for a locking read, the database for writes
        self.locks = bool(query.select_for_update)
        self.query = query
        self.compiler = query.get_compiler(self.alias)
        # as_sql() refuses a locking read outside a transaction; its SQL is the same in one.
        with transaction.atomic(using=self.alias) if self.locks else nullcontext():
            self.sql, params = self.compiler.as_sql()
        self.params = tuple(params)
        ops = connections[self.alias].ops

        def same(value: Any) -> Any:
            return value

        # Each stand-in as the adapter may have passed it on, and how to pass a value alike.
        forms: dict[Any, tuple[Hashable, Callable[[Any], Any]]] = {}
        for key, stand_in in stand_ins.items():
            forms[stand_in] = (key, same)
            if isinstance(stand_in, datetime):
                forms[ops.adapt_datetimefield_value(stand_in)] = (
                    key,
                    ops.adapt_datetimefield_value,
                )
            elif isinstance(stand_in, date):
                forms[ops.adapt_datefield_value(stand_in)] = (key, ops.adapt_datefield_value)
        self.slots: list[tuple[int, Hashable, Callable[[Any], Any]]] = [
            (position, *forms[param])
            for position, param in enumerate(self.params)
            if type(param) in (int, str, date, datetime) and param in forms
        ]
        # The parameters that hold stand-ins of ``within``: each position, with those keys.
        self.templates: list[tuple[int, list[tuple[str, Any]]]] = []
        for position, param in enumerate(self.params):
            if type(param) is str:
                held = [(token, key) for key, token in (within or {}).items() if token in param]
                if held:
                    self.templates.append((position, held))
        found = {key for _position, key, _adapt in self.slots}
        found |= {key for _position, held in self.templates for _token, key in held}
        missing = [key for key in [*stand_ins, *(within or {})] if key not in found]
        if missing:
            raise ValueError(f"{lost}: {missing}")

    def params_for(self, values: Mapping[Any, Any]) -> list[Any]:
        """The statement's parameters with ``values`` (by key) in their stand-ins' places."""
        params = list(self.params)
        for position, key, adapt in self.slots:
            params[position] = adapt(values[key])
        for position, held in self.templates:
            param = self.params[position]
            for token, key in held:
                param = param.replace(token, values[key])
            params[position] = param
        return params

    def rows(self, values: Mapping[Any, Any]) -> list[tuple[Any, ...]]:
        """The statement run with ``values`` (by key) in their stand-ins' places."""
        params = self.params_for(values)
        with connections[self.alias].cursor() as cursor:
            cursor.execute(self.sql, params)
            fetched = cursor.fetchall()
        return [tuple(row) for row in self.compiler.results_iter(results=[fetched])]


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
        for name, value in params.items():
            if type(value) is not self.types[name]:
                raise TypeError(f"{name} must be {self.types[name].__name__}")
        compiled = self._compiled()
        if compiled.locks and connections[compiled.alias].get_autocommit():
            raise TransactionManagementError(
                "select_for_update cannot be used outside of a transaction."
            )
        names = compiled.names
        return [dict(zip(names, row, strict=True)) for row in compiled.rows(params)]

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


class _Compiled(Statement):
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
        query = queryset.query
        if not query.values_select and not query.annotation_select:
            raise TypeError("A PreparedQuery needs a values() queryset.")
        super().__init__(queryset, stand_ins, lost="Parameters not found in the compiled query")
        self.names = (
            list(query.selected)
            if query.selected
            else [*query.extra_select, *query.values_select, *query.annotation_select]
        )


# Compiled once per shape --------------------------------------------------------------------

# Stand-ins: values no plan holds, each of the type of the value it stands for.
_PLAN_INT_BASE = -7_320_000_000
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
    return _PLAN_INT_BASE - index


class PreparedUnion:
    """A ``UNION ALL`` of ``Rows`` branches compiled to SQL once per shape of its plan, then
    run with each call's values: the statement's reads are built and compiled by the ORM once,
    not on every request (as ``PreparedQuery`` does for one query).

    ``build(plan)`` gives the branches for a plan: nested tuples (named tuples too) and lists
    whose leaves are values (integers, dates, datetimes, each used as a plain lookup value or
    an element of an ``__in`` list) or anything else hashable, which, like the lengths of the
    lists, is part of the shape. ``build`` must depend on the values only through the lookups
    they are given to: decisions taken on values belong in the plan, before.

    Compiling puts a stand-in for each value and checks that every one reached the SQL's
    parameters (as the database adapter takes them: SQLite's are strings), so a value the
    query transforms fails loudly instead of running wrong. Compiled statements are kept per
    thread and database (a compiler belongs to its thread's connection), the ``size`` last
    used shapes of each. ``planner``: the planner's parameters for the statement
    (``collab.db.planner.planned``).
    """

    def __init__(
        self,
        build: Callable[[Any], list[QuerySet[Any]]],
        *,
        size: int = 32,
        planner: Mapping[str, bool | str] | None = None,
    ) -> None:
        self.build = build
        self.size = size
        self.planner = dict(planner or {})  # collab.db.planner.planned's parameters
        self._local = threading.local()

    def fetch(self, plan: object) -> list[tuple[Any, ...]]:
        values = _values(plan, [])
        shape = _shape(plan)
        compiled = self._compiled(shape, plan)
        if compiled is None:
            return []
        with planned(compiled.alias, **self.planner):
            return compiled.rows(dict(enumerate(values)))

    def _compiled(self, shape: object, plan: object) -> "Statement | None":
        cache: OrderedDict[tuple[str | None, object], Statement | None] = (
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
        statement = _union_statement(branches, _values(stand_in, []), key[0]) if branches else None
        if statement is not None:
            self._local.model = statement.model
            key = (statement.alias, shape)
        cache[key] = statement
        while len(cache) > self.size:
            cache.popitem(last=False)
        return statement


def _union_statement(
    branches: list[QuerySet[Any]], stand_ins: list[Any], alias: str | None
) -> Statement:
    first, *others = branches
    union = first.union(*others, all=True) if others else first
    if alias is not None:
        union = union.using(alias)
    return Statement(union, dict(enumerate(stand_ins)))
