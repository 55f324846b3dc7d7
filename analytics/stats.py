"""The figures behind every metric, counted from the sources (issues, their history, commits,
pull requests, comments) for spans of time, bucketed by project and UTC day.

The same reads fill the stored rollups and answer the live part of a request (today, or the
days the rollup job has not reached), so stored and live figures cannot disagree. Each read
filters on an indexed time column, so a span costs what happened in it, not what the project
holds.

Every read gives rows of one shape (``ROWS``), so that all of them, with the stored rollups'
own (``analytics.selectors``), go to the database as one ``UNION ALL``: a request makes one
round trip for its figures, whatever the number of sources, spans and projects.
"""

import operator
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, date, datetime, timedelta
from functools import reduce
from typing import NamedTuple

from django.db.models import (
    BigIntegerField,
    Count,
    DateField,
    DateTimeField,
    DurationField,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
)
from django.db.models.functions import Coalesce, TruncDate

from collab.db.unions import Rows
from comments.models import Comment
from gitintegration.models import Commit, PullRequest
from issues.models import Issue, IssueHistory, Status

CLOSED = Status.CLOSED.value
# Issues created closed: their "created" history row (analytics_history_born_closed indexes
# these rows alone; its migration compiles the same condition).
BORN_CLOSED = Q(field="created", new_value__status=CLOSED)


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


class Window(NamedTuple):
    """What to count from the sources: these projects' ``[start, end)`` (open-ended where
    None). A tuple, so it can be part of an ``collab.db.prepared.PreparedUnion`` plan."""

    project_ids: tuple[int, ...]
    start: datetime | None
    end: datetime | None


# The rows of every analytics read. ``tag`` tells apart the spans one request asks for at once
# (a period and the month so far); ``kind`` what a row holds:
#
# - DAY: counts of one project (or, for stored days, of all) on one day, in the STAT_FIELDS
#   columns, with the live reads' summed durations in ``resolution_time``/``review_time``;
# - REOPENING: one reopening (``issues_reopened`` 1) counted live, with the moment of the
#   closing it undid (``closed_at``) and the issue's creation (``created_at``);
# - UNDONE: stored closings undone by the day's reopenings: ``closed_at`` the hour of those
#   closings, ``issues_reopened`` their number, ``resolution_seconds`` theirs.
ROWS = Rows(
    tag=BigIntegerField(),
    kind=BigIntegerField(),
    project=BigIntegerField(),
    day=DateField(),
    **{name: BigIntegerField() for name in STAT_FIELDS},
    resolution_time=DurationField(),
    review_time=DurationField(),
    closed_at=DateTimeField(),
    created_at=DateTimeField(),
)
DAY, REOPENING, UNDONE = 0, 1, 2
KINDS = (DAY, REOPENING, UNDONE)


def _within(windows: Iterable[Window], project: str, column: str) -> Q:
    """Rows of the windows' projects whose ``column`` falls in their window."""
    parts = []
    for window in windows:
        part = Q(**{f"{project}__in": window.project_ids})
        if window.start is not None:
            part &= Q(**{f"{column}__gte": window.start})
        if window.end is not None:
            part &= Q(**{f"{column}__lt": window.end})
        parts.append(part)
    return reduce(operator.or_, parts)


def _day(column: str) -> TruncDate:
    return TruncDate(column, tzinfo=UTC)


def _duration(later: str, earlier: str):
    return ExpressionWrapper(F(later) - F(earlier), output_field=DurationField())


def live_branches(
    windows: Sequence[Window],
    *,
    tag: int = 0,
    only: Iterable[str] | None = None,
    layout: Rows = ROWS,
) -> list[QuerySet]:
    """The reads counting the windows from the sources, by (project id, UTC day), as rows of
    ``layout`` (``ROWS`` or one extending it), ``only`` the reads that fill these STAT_FIELDS:

    - issues_opened: issues created (issues deleted since are gone from the sources);
    - issues_closed / resolution_seconds: closings (a status change to closed, or an issue
      created closed) and the sum of (closing time - the issue's creation) over them;
    - issues_reopened: status changes from closed to open or in progress, each with the
      closing it undid;
    - commits: distinct commit shas of the project's repositories, by commit time;
    - pull_requests_opened, pull_requests_merged / review_seconds: pull requests opened,
      merged, and the sum of (merge time - opening) over the merged ones;
    - comments: comments written on the project's issues and pull requests, by the time they
      were written (comments deleted since are gone from the sources, as deleted issues are).
    """
    windows = [window for window in windows if window.project_ids]
    if not windows:
        return []
    wanted = set(STAT_FIELDS if only is None else only)
    branches: list[QuerySet] = []

    def add(fills: set[str], queryset: QuerySet, project: str, column: str, **values) -> None:
        if fills & wanted:
            branches.append(
                layout.of(
                    queryset,
                    keys={"project": F(project), "day": _day(column)},
                    values=values,
                    constants={"tag": tag, "kind": DAY},
                )
            )

    issues = Issue.objects.filter(_within(windows, "project_id", "created_at"))
    add({"issues_opened"}, issues, "project_id", "created_at", issues_opened=Count("id"))

    # Status changes: the partial index on (created_at) WHERE field = 'status' finds them.
    changes = IssueHistory.objects.filter(
        _within(windows, "issue__project_id", "created_at"), field="status"
    )
    add(
        {"issues_closed", "resolution_seconds"},
        changes.filter(new_value=CLOSED),
        "issue__project_id",
        "created_at",
        issues_closed=Count("id"),
        resolution_time=Sum(_duration("created_at", "issue__created_at")),
    )
    if wanted & {"issues_reopened", "issues_closed", "resolution_seconds"}:
        # Each reopening undoes the issue's closing before it: the last change to closed, or
        # the creation of an issue created closed. Reopenings are few; they are read one by
        # one.
        undone_closing = (
            IssueHistory.objects.filter(
                issue_id=OuterRef("issue_id"),
                field="status",
                new_value=CLOSED,
                id__lt=OuterRef("id"),
            )
            .order_by("-id")
            .values("created_at")[:1]
        )
        branches.append(
            layout.of(
                changes.filter(old_value=CLOSED),
                values={
                    "project": F("issue__project_id"),
                    "day": _day("created_at"),
                    "closed_at": Coalesce(Subquery(undone_closing), F("issue__created_at")),
                    "created_at": F("issue__created_at"),
                },
                constants={"tag": tag, "kind": REOPENING, "issues_reopened": 1},
            )
        )

    # Created closed: closed at the moment of creation, resolved in no time.
    born_closed = IssueHistory.objects.filter(
        BORN_CLOSED, _within(windows, "issue__project_id", "issue__created_at")
    )
    add(
        {"issues_closed"},
        born_closed,
        "issue__project_id",
        "issue__created_at",
        issues_closed=Count("id"),
    )

    commits = Commit.objects.filter(_within(windows, "repository__project_id", "committed_at"))
    add(
        {"commits"},
        commits,
        "repository__project_id",
        "committed_at",
        commits=Count("sha", distinct=True),
    )

    opened = PullRequest.objects.filter(_within(windows, "repository__project_id", "created_at"))
    add(
        {"pull_requests_opened"},
        opened,
        "repository__project_id",
        "created_at",
        pull_requests_opened=Count("id"),
    )
    merged = PullRequest.objects.filter(
        _within(windows, "repository__project_id", "merged_at"),
        state=PullRequest.State.MERGED,
        merged_at__isnull=False,
    )
    add(
        {"pull_requests_merged", "review_seconds"},
        merged,
        "repository__project_id",
        "merged_at",
        pull_requests_merged=Count("id"),
        review_time=Sum(_duration("merged_at", "created_at")),
    )

    comments = Comment.objects.filter(_within(windows, "project_id", "created_at"))
    add({"comments"}, comments, "project_id", "created_at", comments=Count("id"))
    return branches


def _seconds(value: timedelta | None) -> int:
    return int(value.total_seconds()) if value is not None else 0


def _hour(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


@dataclass(frozen=True)
class Row:
    """One row of ``ROWS``, read."""

    tag: int
    kind: int
    project: int
    day: date
    stats: Stats
    # For REOPENING and UNDONE rows: the hour of the undone closings, their number and their
    # resolution seconds.
    undone: tuple[datetime, int, int] | None


def rows_read(rows: Iterable[tuple], *, layout: Rows = ROWS) -> Iterator[Row]:
    """Rows of ``layout`` as fetched (those of the kinds above), with durations in whole
    seconds (summed per row, as the rollups store them)."""
    column = layout.index
    stat_at = [column[name] for name in STAT_FIELDS]
    resolution, review = column["resolution_time"], column["review_time"]
    closed_at, created_at = column["closed_at"], column["created_at"]
    for row in rows:
        kind = int(row[column["kind"]])
        if kind not in KINDS:
            continue
        tag, project, day = int(row[column["tag"]]), int(row[column["project"]]), row[column["day"]]
        counts = dict(zip(STAT_FIELDS, (int(row[index]) for index in stat_at), strict=True))
        undone = None
        if kind == UNDONE:
            stats = Stats()
            undone = (row[closed_at], counts["issues_reopened"], counts["resolution_seconds"])
        else:
            stats = Stats(**counts)
            stats.resolution_seconds += _seconds(row[resolution])
            stats.review_seconds += _seconds(row[review])
            if kind == REOPENING:
                closed, created = row[closed_at], row[created_at]
                undone = (_hour(closed), 1, _seconds(closed - created))
        yield Row(tag=tag, kind=kind, project=project, day=day, stats=stats, undone=undone)


def stats_collect(
    *, project_ids: Iterable[int], start: datetime | None, end: datetime | None
) -> Collected:
    """What happened in ``[start, end)`` (open-ended where None), by (project id, UTC day),
    in one query (``live_branches`` says what each figure counts); ``reopens`` holds the
    closings the span's reopenings undid, by the hour of the closing."""
    collected = Collected()
    window = Window(project_ids=tuple(project_ids), start=start, end=end)
    for row in rows_read(ROWS.fetch(live_branches([window]))):
        collected.days[row.project, row.day].add(row.stats)
        if row.undone is not None:
            hour, count, seconds = row.undone
            undone = collected.reopens[row.project, row.day, hour]
            undone[0] += count
            undone[1] += seconds
    return collected
