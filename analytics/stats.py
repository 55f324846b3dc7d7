"""The figures behind every metric, counted from the sources (issues, their history, commits,
pull requests, comments) for a span of time, bucketed by project and UTC day.

The same function fills the stored rollups and answers the live part of a request (today,
or the days the rollup job has not reached), so stored and live figures cannot disagree.
Each query filters on an indexed time column, so a span costs what happened in it, not what
the project holds.
"""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from datetime import UTC, date, datetime

from django.db.models import Count, DurationField, ExpressionWrapper, F, OuterRef, Subquery, Sum
from django.db.models.functions import Coalesce, TruncDate

from comments.models import Comment
from gitintegration.models import Commit, PullRequest
from issues.models import Issue, IssueHistory, Status

CLOSED = Status.CLOSED.value


@dataclass
class Stats:
    issues_opened: int = 0
    issues_closed: int = 0
    issues_reopened: int = 0
    resolution_seconds: int = 0
    commits: int = 0
    pull_requests_opened: int = 0
    pull_requests_merged: int = 0
    review_seconds: int = 0
    comments: int = 0

    def add(self, other: "Stats") -> "Stats":
        for name in STAT_FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self

    def is_empty(self) -> bool:
        return not any(getattr(self, name) for name in STAT_FIELDS)

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in STAT_FIELDS}


STAT_FIELDS = tuple(stat.name for stat in fields(Stats))

Buckets = dict[tuple[int, date], Stats]
# (project id, day of the reopening, hour of the closing it undid) -> [count, resolution seconds]
Reopens = dict[tuple[int, date, datetime], list[int]]


@dataclass
class Collected:
    days: Buckets = field(default_factory=lambda: defaultdict(Stats))
    reopens: Reopens = field(default_factory=lambda: defaultdict(lambda: [0, 0]))


def _span(queryset, column: str, start: datetime | None, end: datetime | None):
    if start is not None:
        queryset = queryset.filter(**{f"{column}__gte": start})
    if end is not None:
        queryset = queryset.filter(**{f"{column}__lt": end})
    return queryset


def _by_day(queryset, project: str, column: str, **aggregates):
    return (
        queryset.annotate(day=TruncDate(column, tzinfo=UTC))
        .order_by()
        .values_list(project, "day")
        .annotate(**aggregates)
    )


def _seconds(value) -> int:
    return int(value.total_seconds()) if value is not None else 0


def _duration(later: str, earlier: str):
    return ExpressionWrapper(F(later) - F(earlier), output_field=DurationField())


def stats_collect(
    *, project_ids: Iterable[int], start: datetime | None, end: datetime | None
) -> Collected:
    """What happened in ``[start, end)`` (open-ended where None), by (project id, UTC day).

    - issues_opened: issues created (issues deleted since are gone from the sources);
    - issues_closed / resolution_seconds: closings (a status change to closed, or an issue
      created closed) and the sum of (closing time - the issue's creation) over them;
    - issues_reopened: status changes from closed to open or in progress, and in
      ``reopens`` the closings they undid, by the hour of the closing;
    - commits: distinct commit shas of the project's repositories, by commit time;
    - pull_requests_opened, pull_requests_merged / review_seconds: pull requests opened,
      merged, and the sum of (merge time - opening) over the merged ones;
    - comments: comments written on the project's issues and pull requests, by the time they
      were written (comments deleted since are gone from the sources, as deleted issues are).
    """
    ids = list(project_ids)
    collected = Collected()
    buckets = collected.days
    if not ids:
        return collected

    issues = _span(Issue.objects.filter(project_id__in=ids), "created_at", start, end)
    for project_id, day, count in _by_day(issues, "project_id", "created_at", n=Count("id")):
        buckets[project_id, day].issues_opened += count

    # Status changes: the partial index on (created_at) WHERE field = 'status' finds them.
    changes = _span(
        IssueHistory.objects.filter(field="status", issue__project_id__in=ids),
        "created_at",
        start,
        end,
    )
    closings = _by_day(
        changes.filter(new_value=CLOSED),
        "issue__project_id",
        "created_at",
        n=Count("id"),
        total=Sum(_duration("created_at", "issue__created_at")),
    )
    for project_id, day, count, total in closings:
        bucket = buckets[project_id, day]
        bucket.issues_closed += count
        bucket.resolution_seconds += _seconds(total)
    # Each reopening undoes the issue's closing before it: the last change to closed, or the
    # creation of an issue created closed. Reopenings are few; they are read one by one.
    undone_closing = (
        IssueHistory.objects.filter(
            issue_id=OuterRef("issue_id"), field="status", new_value=CLOSED, id__lt=OuterRef("id")
        )
        .order_by("-id")
        .values("created_at")[:1]
    )
    reopenings = (
        changes.filter(old_value=CLOSED)
        .annotate(closed_at=Coalesce(Subquery(undone_closing), F("issue__created_at")))
        .values_list("issue__project_id", "created_at", "closed_at", "issue__created_at")
    )
    for project_id, reopened_at, closed_at, created_at in reopenings:
        day = reopened_at.astimezone(UTC).date()
        buckets[project_id, day].issues_reopened += 1
        hour = closed_at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        undone = collected.reopens[project_id, day, hour]
        undone[0] += 1
        undone[1] += _seconds(closed_at - created_at)

    # Created closed: closed at the moment of creation, resolved in no time.
    born_closed = _span(
        IssueHistory.objects.filter(
            field="created", new_value__status=CLOSED, issue__project_id__in=ids
        ),
        "issue__created_at",
        start,
        end,
    )
    for project_id, day, count in _by_day(
        born_closed, "issue__project_id", "issue__created_at", n=Count("id")
    ):
        buckets[project_id, day].issues_closed += count

    commits = _span(
        Commit.objects.filter(repository__project_id__in=ids), "committed_at", start, end
    )
    for project_id, day, count in _by_day(
        commits, "repository__project_id", "committed_at", n=Count("sha", distinct=True)
    ):
        buckets[project_id, day].commits += count

    pulls = PullRequest.objects.filter(repository__project_id__in=ids)
    for project_id, day, count in _by_day(
        _span(pulls, "created_at", start, end),
        "repository__project_id",
        "created_at",
        n=Count("id"),
    ):
        buckets[project_id, day].pull_requests_opened += count
    merged = _span(
        pulls.filter(state=PullRequest.State.MERGED, merged_at__isnull=False),
        "merged_at",
        start,
        end,
    )
    for project_id, day, count, total in _by_day(
        merged,
        "repository__project_id",
        "merged_at",
        n=Count("id"),
        total=Sum(_duration("merged_at", "created_at")),
    ):
        bucket = buckets[project_id, day]
        bucket.pull_requests_merged += count
        bucket.review_seconds += _seconds(total)

    comments = _span(Comment.objects.filter(project_id__in=ids), "created_at", start, end)
    for project_id, day, count in _by_day(comments, "project_id", "created_at", n=Count("id")):
        buckets[project_id, day].comments += count
    return collected
