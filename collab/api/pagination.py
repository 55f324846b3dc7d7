"""Pagination of every list: ``page``/``per_page`` carrying both meta shapes of the contract and
a Link header, and beside it opaque cursors (``cursor``/``per_page``) that walk the same rows by
keyset, stable under concurrent writes and as cheap at the thousandth page as at the first.

A cursor positions; it grants nothing. It holds the sort values of the last row given (its
primary key last) and a fingerprint of the list it came from (path, filters, ordering), signed
with the secret key: a cursor that was changed, or that is reused on another list, sort or
filter, answers 400 instead of quietly positioning somewhere else. Rows come from the queryset
the view built for the caller, so a cursor cannot reach a row its holder could not list.
"""

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from django.core.exceptions import FieldDoesNotExist
from django.db.models import F, Q, QuerySet
from django.db.models.expressions import OrderBy
from rest_framework.pagination import BasePagination
from rest_framework.response import Response

from .cursors import CURSOR_PATTERN, MAX_CURSOR_LENGTH, bad_cursor, cursor_decode, cursor_encode
from .exceptions import BadRequest
from .renderers import Envelope
from .routers import MAX_ID

DEFAULT_PER_PAGE = 20
MAX_PER_PAGE = 100
# Query parameters that choose a page, not rows: a list's filters are everything else.
PAGING_PARAMS = frozenset({"page", "per_page", "cursor"})
# Where the sort values of a row are read from: annotations of the page's own query, so any
# ordering (a column a ``.values()`` row leaves out, a related field) costs no extra query.
_ALIAS = "_cursor_{}"


def positive_int_param(request, name: str, default: int) -> int:
    """The query parameter ``name`` as an integer from 1; absent gives ``default``, and
    anything else (``abc``, ``0``, ``1.0``, an empty value) answers 400."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    # At most 19 digits: past that the value is out of range anyway, and int() of thousands
    # of digits raises.
    value = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 19 else 0
    if not 1 <= value <= MAX_ID:
        raise BadRequest(
            f"'{name}' must be a positive integer.",
            details={name: [f"Expected an integer from 1 to {MAX_ID}, got '{raw}'."]},
        )
    return value


@runtime_checkable
class Pinnable(Protocol):
    """A list that is no queryset but can be walked by cursor without shifting: ``snapshot``
    names its present content and ``at(snapshot)`` gives that content again later (a branch's
    history from the tip it had). Its cursors hold an offset into the pinned content."""

    @property
    def snapshot(self) -> str: ...

    def at(self, snapshot: str) -> Sequence: ...


class PagePagination(BasePagination):
    """Page numbers from 1, or a cursor; ``per_page`` defaults to 20 and is clamped to 100.

    A page past the last answers an empty list, not an error. The total comes from
    ``view.page_counter`` when the view set one: a cheaper exact source than ``COUNT(*)``.
    Every page, by number or by cursor, gives ``meta.next_cursor`` (null on the last page),
    read from the page's own rows: a client can switch from page 1 to cursors at no cost.
    """

    def paginate_queryset(self, queryset, request, view=None):
        self.request = request
        params = request.query_params
        # Everything the request names is checked before anything is counted or read.
        raw_cursor = params.get("cursor")
        if raw_cursor is not None and "page" in params:
            message = "Give either 'page' or 'cursor', not both."
            raise BadRequest(message, details={"page": [message], "cursor": [message]})
        self.page = positive_int_param(request, "page", 1)
        self.per_page = min(positive_int_param(request, "per_page", DEFAULT_PER_PAGE), MAX_PER_PAGE)
        position = None if raw_cursor is None else cursor_decode(raw_cursor)
        self.by_cursor = position is not None
        walk = _walk(queryset)
        fingerprint = _fingerprint(request, walk.signature())
        if position is not None:
            if position.get("f") != fingerprint:
                message = (
                    "This cursor belongs to another list, sort or filter: send the parameters "
                    "it was given with, or start again without it."
                )
                raise BadRequest(message, details={"cursor": [message]})
            walk = walk.resume(position)
        counter = getattr(view, "page_counter", None)
        self.total = counter(walk.source) if counter else _count(walk.source)
        walk.counted(self.total)

        if position is None:
            offset = (self.page - 1) * self.per_page
            # No more rows than the total leaves: a walk that reads a list in parts (by
            # bands) then knows the list ends, without asking the next part.
            remaining = self.total - offset
            rows = [] if remaining <= 0 else walk.slice(offset, min(self.per_page, remaining))
            more = offset + self.per_page < self.total
        else:
            rows = walk.after(position, self.per_page + 1)
            more = len(rows) > self.per_page
            rows = rows[: self.per_page]
            offset = position.get("o", 0)
        self.next_cursor = None
        if more and rows:
            self.next_cursor = cursor_encode(
                {"f": fingerprint, **walk.position(rows[-1], offset + len(rows))}
            )
        return walk.output(rows)

    @property
    def total_pages(self) -> int:
        return max(1, math.ceil(self.total / self.per_page))

    def get_paginated_response(self, data):
        if self.by_cursor:
            meta = {
                "total": self.total,
                "per_page": self.per_page,
                "total_count": self.total,
                "next_cursor": self.next_cursor,
            }
            link = self._cursor_link_header()
        else:
            meta = {
                "total": self.total,
                "page": self.page,
                "per_page": self.per_page,
                "current_page": self.page,
                "total_pages": self.total_pages,
                "total_count": self.total,
                "next_cursor": self.next_cursor,
            }
            link = self._link_header()
        response = Response(Envelope(success=True, data=data, meta=meta))
        response["Link"] = link
        return response

    def _link_header(self) -> str:
        # The URL is parsed once for all four links (as DRF's replace_query_param would each
        # time: same encoding, parameters in sorted order).
        scheme, netloc, path, query, fragment = urlsplit(self.request.build_absolute_uri())
        params = parse_qs(query, keep_blank_values=True)
        params["per_page"] = [str(self.per_page)]
        links = [("first", 1)]
        if self.page > 1:
            links.append(("prev", min(self.page - 1, self.total_pages)))
        if self.page < self.total_pages:
            links.append(("next", self.page + 1))
        links.append(("last", self.total_pages))
        parts = []
        for rel, number in links:
            params["page"] = [str(number)]
            query = urlencode(sorted(params.items()), doseq=True)
            parts.append(f'<{urlunsplit((scheme, netloc, path, query, fragment))}>; rel="{rel}"')
        return ", ".join(parts)

    def _cursor_link_header(self) -> str:
        """``first`` (page 1 of the same list) and, unless this is the last page, ``next``
        (the next cursor): a cursor can go forward only, and a last page is unknown."""
        scheme, netloc, path, query, fragment = urlsplit(self.request.build_absolute_uri())
        params = parse_qs(query, keep_blank_values=True)
        params.pop("cursor", None)
        params["per_page"] = [str(self.per_page)]
        links = [("first", {"page": ["1"]})]
        if self.next_cursor is not None:
            links.append(("next", {"cursor": [self.next_cursor]}))
        parts = []
        for rel, extra in links:
            query = urlencode(sorted({**params, **extra}.items()), doseq=True)
            parts.append(f'<{urlunsplit((scheme, netloc, path, query, fragment))}>; rel="{rel}"')
        return ", ".join(parts)

    def get_paginated_response_schema(self, schema):
        # Imported here: the schema module imports DRF's generics, which import this class.
        from .schema import paginated_envelope

        return paginated_envelope(schema)

    def get_schema_operation_parameters(self, view):
        return [
            {
                "name": "page",
                "in": "query",
                "required": False,
                "description": "Page number, from 1. Not with `cursor` (400).",
                "schema": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_ID,
                    "default": 1,
                },
            },
            {
                "name": "per_page",
                "in": "query",
                "required": False,
                "description": f"Page size, {DEFAULT_PER_PAGE} by default; larger values are "
                f"clamped to {MAX_PER_PAGE}.",
                "schema": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_ID,
                    "default": DEFAULT_PER_PAGE,
                },
            },
            {
                "name": "cursor",
                "in": "query",
                "required": False,
                "description": "The page after the one that gave this `meta.next_cursor`: "
                "opaque, sent back as it came, with the same filters and sort (another list, "
                "sort or filter, or an altered cursor, answers 400). Rows are walked by their "
                "sort keys, not counted off, so rows written meanwhile neither repeat nor "
                "skip any, and a deep page costs what the first does. Not with `page` (400).",
                "schema": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_CURSOR_LENGTH,
                    "pattern": CURSOR_PATTERN,
                },
            },
        ]


def _fingerprint(request, signature: list[str]) -> str:
    """What a cursor is valid for: the path, every filter parameter, and the ordering."""
    filters = sorted(
        (name, request.query_params.getlist(name))
        for name in request.query_params
        if name not in PAGING_PARAMS
    )
    material = json.dumps([request.path, filters, signature], separators=(",", ":"))
    return hashlib.blake2b(material.encode(), digest_size=8).hexdigest()


# Walks: how a page of rows is found, from an offset or after a cursor's position ------------


class _Walk(Protocol):
    source: Any

    def signature(self) -> list[str]: ...

    def resume(self, position: dict[str, Any]) -> "_Walk": ...

    def counted(self, total: int) -> None: ...

    def slice(self, offset: int, limit: int) -> list: ...

    def after(self, position: dict[str, Any], limit: int) -> list: ...

    def position(self, row: Any, offset: int) -> dict[str, Any]: ...

    def output(self, rows: list) -> list: ...


def _walk(rows: QuerySet | Sequence) -> _Walk:
    if not isinstance(rows, QuerySet) or _walked_by_offset(rows):
        return _SequenceWalk(rows)
    bands = _banded(rows)
    if bands is not None:
        return _BandedWalk(rows, bands)
    return _KeysetWalk(rows)


Band = tuple[QuerySet, Callable[..., QuerySet] | None]


def _banded(queryset: QuerySet) -> Callable[[int | None], list[Band]] | None:
    """For a queryset ordered first by an expression that splits it into bands
    (``bands(queryset, rest, total=)``: each band's rows and their ordering, every row of a
    band before every row of the next, and optionally how to narrow it; search's "best
    first", collab.db.fulltext.CandidateScore): what gives its bands, each ordered as it
    says with its narrowing or None, from the number of rows when known. None for any other
    ordering."""
    terms = queryset.query.order_by
    if not terms or not isinstance(terms[0], OrderBy) or not terms[0].descending:
        return None
    split = getattr(terms[0].expression, "bands", None)
    if split is None:
        return None

    def bands(total: int | None) -> list[Band]:
        return [
            (rows.order_by(*ordering), narrow[0] if narrow else None)
            for rows, ordering, *narrow in split(queryset, list(terms[1:]), total=total)
        ]

    return bands


def _walked_by_offset(queryset: QuerySet) -> bool:
    """Whether the queryset is ordered by one expression that says it is walked by offset
    (``walked_by_offset``): an order an index gives, its ties in an order of the index's own,
    which no keyset condition can restate (search's rank, collab.db.fulltext.RankDistance).
    Its pages and cursors then read the same rows, by offset."""
    terms = queryset.query.order_by
    if len(terms) != 1 or not isinstance(terms[0], OrderBy):
        return False
    return bool(getattr(terms[0].expression, "walked_by_offset", False))


@dataclass(frozen=True)
class _SortKey:
    """One term of a total ordering: an expression, its direction, and where NULLs go in the
    output when it can be NULL (``nulls_first`` None: it never is)."""

    expression: Any
    descending: bool
    nulls_first: bool | None

    def order_by(self) -> OrderBy:
        if self.nulls_first is None:
            return OrderBy(self.expression, descending=self.descending)
        if self.nulls_first:
            return OrderBy(self.expression, descending=self.descending, nulls_first=True)
        return OrderBy(self.expression, descending=self.descending, nulls_last=True)

    def equal(self, alias: str, value: Any) -> Q:
        if value is None:
            return Q(**{f"{alias}__isnull": True})
        return Q(**{alias: value})

    def after(self, alias: str, value: Any) -> Q | None:
        """Rows that come after ``value`` on this term alone (None: none can)."""
        if value is None:
            # NULLs first: every value follows; NULLs last: nothing does.
            return Q(**{f"{alias}__isnull": False}) if self.nulls_first else None
        beyond = Q(**{f"{alias}__{'lt' if self.descending else 'gt'}": value})
        if self.nulls_first is False:
            beyond |= Q(**{f"{alias}__isnull": True})
        return beyond

    def bound(self, alias: str, value: Any) -> Q:
        """``after`` or equal, stated on this term alone: redundant with the whole condition,
        but it lets the database start an index scan at the cursor instead of filtering."""
        return Q(**{f"{alias}__{'lte' if self.descending else 'gte'}": value})


class _KeysetWalk:
    """A queryset, by its own ordering made total (the primary key last), walked by keyset:
    the rows after a position are those whose sort values come after the position's.

    ``narrow(count, after=None)``, where given, is a smaller queryset of the same rows that
    holds the first ``count`` of them (with ``after``, a position's sort values, the first
    ``count`` after it): a page reads it instead (search's ranked candidates,
    collab.db.fulltext.CandidateScore).
    """

    def __init__(self, queryset: QuerySet, narrow: Callable[..., QuerySet] | None = None) -> None:
        self.keys = _sort_keys(queryset)
        self.aliases = [_ALIAS.format(index) for index in range(len(self.keys))]
        self.source = queryset
        self.narrow = narrow

    @cached_property
    def rows(self) -> QuerySet:
        # Made when first read: a walk may only sign the list (``_BandedWalk.whole``) or
        # never be reached (a band after the page).
        return self._ordered(self.source)

    def _ordered(self, queryset: QuerySet) -> QuerySet:
        return queryset.order_by(*[key.order_by() for key in self.keys]).annotate(
            **{alias: key.expression for alias, key in zip(self.aliases, self.keys, strict=True)}
        )

    def _rows_holding(self, count: int, after: list | None = None) -> QuerySet:
        if self.narrow is None:
            return self.rows
        return self._ordered(self.narrow(count, after))

    def signature(self) -> list[str]:
        return [repr(key.order_by()) for key in self.keys]

    def counted(self, total: int) -> None:
        pass  # read the same way whatever it holds

    def resume(self, position: dict[str, Any]) -> "_KeysetWalk":
        values = position.get("k")
        if not isinstance(values, list) or len(values) != len(self.keys):
            raise bad_cursor()
        return self

    def slice(self, offset: int, limit: int) -> list:
        return list(self._rows_holding(offset + limit)[offset : offset + limit])

    def after(self, position: dict[str, Any], limit: int) -> list:
        values = position["k"]
        clauses: list[Q] = []
        equal = Q()
        for alias, key, value in zip(self.aliases, self.keys, values, strict=True):
            after = key.after(alias, value)
            if after is not None:
                clauses.append(equal & after)
            equal &= key.equal(alias, value)
        if not clauses:
            return []
        condition = clauses[0]
        for clause in clauses[1:]:
            condition |= clause
        first = self.keys[0]
        if first.nulls_first is None:
            condition &= first.bound(self.aliases[0], values[0])
        return list(self._rows_holding(limit, values).filter(condition)[:limit])

    def position(self, row: Any, offset: int) -> dict[str, Any]:
        if isinstance(row, dict):
            return {"k": [row[alias] for alias in self.aliases]}
        return {"k": [getattr(row, alias) for alias in self.aliases]}

    def output(self, rows: list) -> list:
        for row in rows:
            if isinstance(row, dict):  # a .values() row: the sort values are not the API's
                for alias in self.aliases:
                    del row[alias]
        return rows


class _BandedWalk:
    """A queryset whose ordering splits it into bands (``_banded``), walked band by band: a
    page is read from the band its position is in, and from the next ones when that band
    ends before the page does. A cursor holds its band and the keys of its rows' ordering."""

    def __init__(self, queryset: QuerySet, bands: Callable[[int | None], list[Band]]) -> None:
        self.source = queryset
        self.whole = _KeysetWalk(queryset)
        self.split = bands
        self.total: int | None = None
        self.band_of: dict[int, int] = {}  # id() of a row given: its band

    def counted(self, total: int) -> None:
        self.total = total

    @cached_property
    def bands(self) -> list["_KeysetWalk"]:
        # Made when first read, after the count: the bands may be found by the total.
        return [_KeysetWalk(band, narrow) for band, narrow in self.split(self.total)]

    def signature(self) -> list[str]:
        return self.whole.signature()

    def resume(self, position: dict[str, Any]) -> "_BandedWalk":
        # Which bands there are is known after the count: the band is checked when read.
        band = position.get("b")
        if not isinstance(band, int) or isinstance(band, bool) or band < 0:
            raise bad_cursor()
        return self

    def _read(self, band: int, rows: list, limit: int, read) -> list:
        for row in read:
            self.band_of[id(row)] = band
            rows.append(row)
        return rows[:limit]

    def slice(self, offset: int, limit: int) -> list:
        rows: list = []
        for index, band in enumerate(self.bands):
            read = band.slice(offset, limit - len(rows))
            rows = self._read(index, rows, limit, read)
            if len(rows) >= limit:
                break
            # This band ends within the page (the next one starts at its top), or before it:
            # the next starts that many rows past its top.
            offset = 0 if read else max(0, offset - band.source.count())
        return rows

    def after(self, position: dict[str, Any], limit: int) -> list:
        start = position["b"]
        if start >= len(self.bands):
            raise bad_cursor()
        self.bands[start].resume(position)
        rows = self._read(start, [], limit, self.bands[start].after(position, limit))
        for index in range(start + 1, len(self.bands)):
            if len(rows) >= limit:
                break
            rows = self._read(index, rows, limit, self.bands[index].slice(0, limit - len(rows)))
        return rows

    def position(self, row: Any, offset: int) -> dict[str, Any]:
        band = self.band_of[id(row)]
        return {"b": band, **self.bands[band].position(row, offset)}

    def output(self, rows: list) -> list:
        for row in rows:
            self.bands[self.band_of[id(row)]].output([row])
        return rows


class _SequenceWalk:
    """A list that is no queryset (git's order of a branch's commits): walked by offset, into
    its content pinned at the first page when it can be pinned (``Pinnable``), so what is
    added meanwhile does not shift it. Only for small or immutable lists."""

    def __init__(self, sequence: Sequence | QuerySet) -> None:
        self.source = sequence

    def signature(self) -> list[str]:
        return ["offset"]

    def counted(self, total: int) -> None:
        pass  # read the same way whatever it holds

    def resume(self, position: dict[str, Any]) -> "_SequenceWalk":
        offset, snapshot = position.get("o"), position.get("s")
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise bad_cursor()
        if not isinstance(self.source, Pinnable):
            return self
        if not isinstance(snapshot, str):
            raise bad_cursor()
        return _SequenceWalk(self.source.at(snapshot))

    def slice(self, offset: int, limit: int) -> list:
        return list(self.source[offset : offset + limit])

    def after(self, position: dict[str, Any], limit: int) -> list:
        return self.slice(position["o"], limit)

    def position(self, row: Any, offset: int) -> dict[str, Any]:
        pinned = {"s": self.source.snapshot} if isinstance(self.source, Pinnable) else {}
        return {"o": offset, **pinned}

    def output(self, rows: list) -> list:
        return rows


def _sort_keys(queryset: QuerySet) -> list[_SortKey]:
    """The queryset's ordering as sort keys, made total with the primary key when it lacks it.

    Terms that can be NULL get an explicit place for NULLs, PostgreSQL's (after every value
    ascending, before every value descending) on every database, so the keyset condition and
    the order agree."""
    query = queryset.query
    meta = queryset.model._meta
    terms: Sequence[Any] = query.order_by or (meta.ordering if query.default_ordering else [])
    pk_names = {"pk", meta.pk.name, meta.pk.attname}
    keys: list[_SortKey] = []
    for term in terms:
        if isinstance(term, str):
            if term == "?":
                raise TypeError("A random order cannot be walked by cursor.")
            descending = term.startswith("-")
            name = term.removeprefix("-")
            expression: Any = F(name)
            nullable = _nullable(queryset, name)
            explicit: bool | None = None
        else:
            order = term if isinstance(term, OrderBy) else term.asc()
            expression, descending = order.expression, order.descending
            name = expression.name if isinstance(expression, F) else ""
            nullable = _nullable(queryset, name) if name else True
            explicit = True if order.nulls_first else False if order.nulls_last else None
        nulls_first = None
        if nullable:
            nulls_first = descending if explicit is None else explicit
        keys.append(_SortKey(expression, descending, nulls_first))
        if name in pk_names:
            # Unique from here on: any further term could never decide anything.
            return keys
    descending = keys[-1].descending if keys else False
    keys.append(_SortKey(F("pk"), descending, None))
    return keys


def _nullable(queryset: QuerySet, path: str) -> bool:
    """Whether a field path can be NULL in a row (a NULL column, or an outer join on the way).
    Anything not a model field (an annotation) is taken as possibly NULL."""
    model = queryset.model
    for part in path.split("__"):
        try:
            field = model._meta.pk if part == "pk" else model._meta.get_field(part)
        except FieldDoesNotExist:
            return True
        # Reverse relations (their ``null`` is True) and many-to-many ones join outward.
        if field.null or field.many_to_many:
            return True
        if field.is_relation and field.related_model is not None:
            model = field.related_model
    return False


def _count(queryset) -> int:
    try:
        return queryset.count()
    except (AttributeError, TypeError):
        return len(queryset)
