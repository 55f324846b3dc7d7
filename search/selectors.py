"""Reads for ``/v1/search``: hits over every project the caller may see."""

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import (
    BigIntegerField,
    ExpressionWrapper,
    F,
    Func,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce

from accounts.models import User
from collab.db import fulltext
from collab.db.prepared import Statement
from issues import facets
from issues.models import IssueFacetCount
from issues.selectors import issue_search_total, visible_projects
from projects.models import Project
from projects.selectors import project_get, project_visibility_q

from .models import HitType, SearchHit

# Each kind of hit is read as the lists it comes from are: issues, and comments on issues,
# with ``issues:read``; pull requests, and comments on them, with ``projects:read``.
READ_SCOPES: dict[str, Q] = {
    "issues:read": Q(type=HitType.ISSUE) | Q(type=HitType.COMMENT, issue_id__isnull=False),
    "projects:read": Q(type=HitType.PULL_REQUEST)
    | Q(type=HitType.COMMENT, pull_request_id__isnull=False),
}
HIT_FIELDS = ("id", "type", "object_id", "project_id", "title", "issue_id", "pull_request_id")


def search_projects(
    *, user: User, project_id: int | None, workspace_id: int | None
) -> list[int] | None:
    """The ids of the projects a search is narrowed to (``project_id``, the projects of
    ``workspace_id``, or both), those of them ``user`` may see: read here once, so that each
    statement of the search names them as values instead of restating who may see what
    (as a subquery, built and compiled into each of them: for a word at a million issues,
    12.0 ms of Python a request, 7.6 ms without). None: not narrowed, every project ``user``
    may see."""
    if project_id is not None:
        project = project_get(user=user, project_id=project_id, with_team_count=False)
        if project is None or workspace_id not in (None, project.workspace_id):
            return []
        return [project.pk]
    if workspace_id is None:
        return None
    # The workspace's projects, as values: PostgreSQL then plans with what they hold. As an
    # array read while the query runs, their share of the rows was a guess: for a word in a
    # workspace of 10,000 issues beside one of a million, it read every match of both
    # (470 ms), where through the projects' index it reads the workspace's (9 ms).
    seen = Project.objects.filter(project_visibility_q(user), workspace_id=workspace_id)
    return list(seen.order_by("pk").values_list("pk", flat=True))


def search_hits(
    *, user: User, scopes: list[str], projects: list[int] | None = None
) -> QuerySet[SearchHit]:
    """What ``user`` may find, with a credential holding ``scopes`` (of ``READ_SCOPES``), in
    ``projects`` (``search_projects``: ids of projects they may see) or, with None, in every
    project they may see."""
    hits = _readable(scopes)
    if projects is None:
        return hits.filter(fulltext.AmongIds("project_id", visible_projects(user=user)))
    return hits.filter(project_id__in=projects) if projects else hits.none()


def _readable(scopes: Sequence[str]) -> QuerySet[SearchHit]:
    """The hits a credential holding ``scopes`` (of ``READ_SCOPES``) reads, in any project."""
    if set(scopes) >= set(READ_SCOPES):
        # Every hit is read by one of them (a comment has one parent, an issue or a pull
        # request): no condition, which each statement of the search would otherwise carry,
        # copied and compiled with it (a word at 1M, in process: 17.2 ms a request, 16.3 without).
        return SearchHit.objects.all()
    readable = Q(pk__in=[])
    for scope in scopes:
        readable |= READ_SCOPES[scope]
    return SearchHit.objects.filter(readable)


def hit_values(hits: QuerySet[SearchHit], *, text: str) -> QuerySet[SearchHit, dict[str, Any]]:
    """Rows for ``search_hit_record``: each hit's fields, its score, and where the database
    marks a page's rows alone (``fulltext.marked_after_the_cut``) its marked snippet as
    ``marked``; elsewhere ``hit_snippets_attach`` reads the snippets of the page's rows.
    (In the page's query on PostgreSQL, a word at a million issues: 1 ms of the database and
    0.7 ms of Python less than a query of its own.)"""
    fields: dict[str, Any] = {"score": fulltext.score(text, among=hits)}
    if fulltext.marked_after_the_cut(hits.db):
        fields["marked"] = fulltext.Highlight(fulltext.parse(text), "body", snippet=True)
    rows: QuerySet[SearchHit, dict[str, Any]] = hits.values(*HIT_FIELDS, **fields)
    return rows


def hit_snippets_attach(rows: list[dict[str, Any]], *, text: str) -> list[dict[str, Any]]:
    """Each row's marked snippet as ``marked``, where ``hit_values`` did not read it, read for
    these rows alone in one query: in the ranked query SQLite could work one out for every
    match before the page is cut (a second per row for ``a*`` over 5,000 issues)."""
    if not rows or "marked" in rows[0]:
        return rows
    # By kind and object id, which each table of the view has indexed (the view's own id is
    # computed, and would be read off every row of the union).
    by_kind = Q(pk__in=[])
    for kind in {row["type"] for row in rows}:
        ids = [row["object_id"] for row in rows if row["type"] == kind]
        by_kind |= Q(type=kind, object_id__in=ids)
    query = fulltext.parse(text)
    marked = dict(
        SearchHit.objects.filter(by_kind)
        .order_by()
        .values_list("id", fulltext.Highlight(query, "body", snippet=True))
    )
    for row in rows:
        row["marked"] = marked.get(row["id"], "")
    return rows


def search_hit_record(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": row["type"],
        "id": row["object_id"],
        "project_id": row["project_id"],
        "title": row["title"],
        "snippet": fulltext.marked_html(row["marked"]),
        "score": float(f"{row['score'] or 0.0:.6g}"),  # six significant digits
        "issue_id": row["issue_id"],
        "pull_request_id": row["pull_request_id"],
    }


def hit_total(
    hits: QuerySet[SearchHit, Any],
    *,
    user: User,
    text: str,
    scopes: Sequence[str],
    projects: Sequence[int] | None,
    types: list[str] | None,
) -> int:
    """Exact number of ``hits`` (the hits of ``text`` that ``user`` may find with ``scopes``,
    in ``projects``, as ``search_hits`` has them, and of ``types``). Where the issues' word
    counters answer the issues among them (``issues.selectors.issue_search_total``: one word
    or a phrase of two, either with an exclusion, a prefix), only the other kinds are
    counted; otherwise every hit is."""
    if hits.query.is_empty():  # narrowed to nothing (a workspace without projects)
        return 0
    issues_wanted = "issues:read" in scopes and (not types or HitType.ISSUE in types)
    terms = fulltext.parse(text).terms
    if not issues_wanted or all(term.excluded for term in terms):
        return fulltext.count(hits)
    project_ids = visible_projects(user=user) if projects is None else list(projects)
    # The hits of the other kinds, which the issues' counters leave to be counted.
    others = hits.exclude(type=HitType.ISSUE).order_by()
    counter = facets.query_counter(text)
    if counter is None:
        issues = issue_search_total(text=text, project_ids=project_ids, statuses=None)
        return fulltext.count(hits) if issues is None else issues + others.count()
    # One word or a phrase of two: one statement, its counters summed plus the other kinds'
    # hits counted.
    facet, value = counter
    if projects is None:  # every project the user sees: named by a subquery
        counters = IssueFacetCount.objects.filter(
            project_id__in=project_ids, facet=facet, value=value
        )
        total = counters.aggregate(
            total=ExpressionWrapper(
                Coalesce(Sum("count"), 0) + _counted(others), output_field=BigIntegerField()
            )
        )["total"]
        return int(total)
    shape = _TotalShape(
        alias=hits.db,
        scopes=tuple(scopes),
        projects=len(project_ids),
        types=tuple(types or ()),
        terms=tuple((len(term.words), term.prefix, term.excluded, term.lexeme) for term in terms),
        facet=facet,
    )
    values: dict[Any, Any] = {("project", n): pk for n, pk in enumerate(project_ids)}
    values["value"] = value
    for n, term in enumerate(terms):
        values.update({("word", n, at): word for at, word in enumerate(term.words)})
    [(total,)] = _total_statement(shape).rows(values)
    return int(total)


def _counted(hits: QuerySet[SearchHit, Any]) -> Subquery:
    """How many ``hits`` there are, as a subquery."""
    return Subquery(hits.order_by().annotate(n=Func(Value(1), function="COUNT")).values("n"))


# Counted from the counters, a total's statement is compiled once per shape (``_TotalShape``):
# built and compiled for each request, it cost 1 ms of Python where the database took 0.6 ms
# (a word at a million issues, in process). The filters of ``SearchFilter`` that narrow the
# hits are those the shape restates: the projects, the kinds (``type``) and the text.
TOTAL_NARROWED_BY = frozenset({"q", "type", "project_id", "workspace_id"})


@dataclass(frozen=True)
class _TotalShape:
    alias: str
    scopes: tuple[str, ...]
    projects: int  # how many
    types: tuple[str, ...]
    terms: tuple[tuple[int, bool, bool, bool], ...]  # each: words, prefix, excluded, lexeme
    facet: str


_totals = threading.local()


def _total_statement(shape: _TotalShape) -> Statement:
    """The statement of a total from the counters, of this shape, for this thread (a compiler
    belongs to its thread's connection): the counters of the issues summed, plus the other
    kinds' hits counted. Its values: ``("project", n)`` each project's id, ``"value"`` the
    counter's value, ``("word", n, at)`` each word of each term."""
    cache: OrderedDict[_TotalShape, Statement] = _totals.__dict__.setdefault("cache", OrderedDict())
    statement = cache.get(shape)
    if statement is not None:
        cache.move_to_end(shape)
        return statement
    projects = {("project", n): _STAND_IN - n for n in range(shape.projects)}
    words = {
        ("word", n, at): f"\x00word:{n}:{at}\x00"
        for n, (count, *_flags) in enumerate(shape.terms)
        for at in range(count)
    }
    terms = tuple(
        fulltext.Term(
            words=tuple(words["word", n, at] for at in range(count)),
            prefix=prefix,
            excluded=excluded,
            lexeme=lexeme,
        )
        for n, (count, prefix, excluded, lexeme) in enumerate(shape.terms)
    )
    hits = _readable(shape.scopes).filter(project_id__in=list(projects.values()))
    if shape.types:
        hits = hits.filter(type__in=list(shape.types))
    others = hits.filter(fulltext.Matches(fulltext.Query(terms))).exclude(type=HitType.ISSUE)
    counters = IssueFacetCount.objects.using(shape.alias).filter(
        project_id__in=list(projects.values()), facet=shape.facet, value=_VALUE
    )
    # The sum as a plain function, not an aggregate: one row, with no GROUP BY to add.
    summed = Coalesce(Func(F("count"), function="SUM"), 0)
    total = counters.values(
        total=ExpressionWrapper(
            summed + _counted(others.using(shape.alias)), output_field=BigIntegerField()
        )
    )
    statement = Statement(total, {**projects, "value": _VALUE}, within=words)
    cache[shape] = statement
    while len(cache) > TOTAL_SHAPES_KEPT:
        cache.popitem(last=False)
    return statement


# Stand-ins: values no query holds.
_STAND_IN = -7_340_000_000
_VALUE = "\x00value\x00"
TOTAL_SHAPES_KEPT = 64
