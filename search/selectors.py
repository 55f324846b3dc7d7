"""Reads for ``/v1/search``: hits over every project the caller may see."""

from typing import Any

from django.db.models import Q, QuerySet

from accounts.models import User
from collab import fulltext
from issues.selectors import visible_projects

from .models import HitType, SearchHit

# Each kind of hit is read as the lists it comes from are: issues, and comments on issues,
# with ``issues:read``; pull requests, and comments on them, with ``projects:read``.
READ_SCOPES: dict[str, Q] = {
    "issues:read": Q(type=HitType.ISSUE) | Q(type=HitType.COMMENT, issue_id__isnull=False),
    "projects:read": Q(type=HitType.PULL_REQUEST)
    | Q(type=HitType.COMMENT, pull_request_id__isnull=False),
}
HIT_FIELDS = ("id", "type", "object_id", "project_id", "title", "issue_id", "pull_request_id")


def search_hits(*, user: User, scopes: list[str]) -> QuerySet[SearchHit]:
    """What ``user`` may find, with a credential holding ``scopes`` (of ``READ_SCOPES``)."""
    readable = Q(pk__in=[])
    for scope in scopes:
        readable |= READ_SCOPES[scope]
    return SearchHit.objects.filter(readable, project_id__in=visible_projects(user=user))


def hit_values(hits: QuerySet[SearchHit], *, text: str) -> QuerySet[SearchHit, dict[str, Any]]:
    """Rows for ``search_hit_record``: each hit's fields, its score and its marked snippet."""
    query = fulltext.parse(text)
    rows: QuerySet[SearchHit, dict[str, Any]] = hits.values(
        *HIT_FIELDS,
        score=fulltext.Score(query),
        marked=fulltext.Highlight(query, "body", snippet=True),
    )
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
