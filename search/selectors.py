"""Reads for ``/v1/search``: hits over every project the caller may see."""

from collections.abc import Sequence
from typing import Any

from django.db.models import (
    BigIntegerField,
    ExpressionWrapper,
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
    if set(scopes) >= set(READ_SCOPES):
        # Every hit is read by one of them (a comment has one parent, an issue or a pull
        # request): no condition, which each statement of the search would otherwise carry,
        # copied and compiled with it (a word at 1M, in process: 17.2 ms a request, 16.3 without).
        hits = SearchHit.objects.all()
    else:
        readable = Q(pk__in=[])
        for scope in scopes:
            readable |= READ_SCOPES[scope]
        hits = SearchHit.objects.filter(readable)
    if projects is None:
        return hits.filter(fulltext.AmongIds("project_id", visible_projects(user=user)))
    return hits.filter(project_id__in=projects) if projects else hits.none()


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
    if not issues_wanted or fulltext.parse(text).required == ():
        return fulltext.count(hits)
    project_ids = visible_projects(user=user) if projects is None else list(projects)
    others = hits.exclude(type=HitType.ISSUE).order_by()
    counter = facets.query_counter(text)
    if counter is None:
        issues = issue_search_total(text=text, project_ids=project_ids, statuses=None)
        return fulltext.count(hits) if issues is None else issues + others.count()
    # One word or a phrase of two: one statement, its counters summed plus the other kinds'
    # hits counted.
    facet, value = counter
    others_count = Subquery(others.annotate(n=Func(Value(1), function="COUNT")).values("n"))
    counters = IssueFacetCount.objects.filter(project_id__in=project_ids, facet=facet, value=value)
    total = counters.aggregate(
        total=ExpressionWrapper(
            Coalesce(Sum("count"), 0) + others_count, output_field=BigIntegerField()
        )
    )["total"]
    return int(total)
