"""The analytics' query plans: what a request reads, as the branches of one ``UNION ALL``
(``collab.db.unions.Rows``) compiled once per shape of its plan
(``collab.db.prepared.PreparedUnion``).

A span's plan (``SpanPlan``) says where each project's figures come from: its stored days, and
the sources (``stats.live_branches``) for the rest. A dashboard adds its breakdowns
(``BreakdownPlan``): issues grouped live, or a stored snapshot. Plans hold what decides the
SQL; their values go in as parameters.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, NamedTuple

from django.db.models import (
    BigIntegerField,
    Count,
    DateTimeField,
    F,
    JSONField,
    Q,
    QuerySet,
    Sum,
    TextField,
)

from collab.db.prepared import PreparedUnion
from collab.db.unions import Rows
from issues.models import Issue

from .models import BreakdownSnapshot, ProjectDay, ReopenRollup
from .periods import day_start
from .records import Facts
from .stats import DAY, ROWS, STAT_FIELDS, UNDONE, Stats, Window, live_branches, rows_read


@dataclass
class Span:
    """What happened in a span of time, summed over projects: by UTC day, and the closings
    undone by the span's reopenings, by the hour of the closing."""

    days: dict[date, Stats] = field(default_factory=lambda: defaultdict(Stats))
    undone: list[tuple[datetime, int, int]] = field(default_factory=list)

    def total(self) -> Stats:
        total = Stats()
        for stats in self.days.values():
            total.add(stats)
        return total

    def undone_since(self, start: datetime | None) -> tuple[int, int]:
        """Closings at or after ``start`` that a reopening in the span undid, and their
        resolution seconds."""
        count = seconds = 0
        for hour, undone_count, undone_seconds in self.undone:
            if start is None or hour >= start:
                count += undone_count
                seconds += undone_seconds
        return count, seconds


@dataclass(frozen=True)
class Ask:
    """A span one request wants: ``[start, end)`` (from the beginning when start is None),
    and, with ``only``, just these STAT_FIELDS."""

    start: datetime | None
    end: datetime
    only: tuple[str, ...] | None = None


class SpanPlan(NamedTuple):
    """How one asked span is read: from the sources in ``windows``; from the stored days,
    from ``first`` on (all of them when None), each group of projects up to its last day
    (``stored``: (project ids, last day)); ``only`` these STAT_FIELDS (all when None)."""

    only: tuple[str, ...] | None
    windows: tuple[Window, ...]
    stored: tuple[tuple[tuple[int, ...], date], ...]
    first: date | None


def span_plan(facts: list[Facts], ask: Ask) -> SpanPlan:
    """Where each project's figures for the span come from: its stored days within it, and
    the rest from the sources."""
    start, end = ask.start, ask.end
    rolled_first = None
    if start is not None:
        aligned = start == day_start(start.date())
        rolled_first = start.date() if aligned else start.date() + timedelta(days=1)
    # Projects are grouped by the last stored day read and by where their live part begins
    # (a project the job has not reached yet is counted live without making the others live).
    stored: dict[date, list[int]] = defaultdict(list)
    live: dict[datetime | None, list[int]] = defaultdict(list)
    heads: list[int] = []
    for project in facts:
        through, partial_through = project.through, project.partial_through
        rolled_last = min(through, end.date() - timedelta(days=1)) if through else None
        covered_until = day_start(rolled_last + timedelta(days=1)) if rolled_last else None
        # The day after ``through`` stored up to ``partial_through``: usable when the span
        # takes that day from its midnight and goes on past the moment.
        partial_day = partial_through.astimezone(UTC).date() if partial_through else None
        if (
            partial_day is not None
            and partial_through is not None
            and through is not None
            and partial_day == through + timedelta(days=1)
            and partial_through <= end
            and (rolled_first is None or rolled_first <= partial_day)
        ):
            rolled_last, covered_until = partial_day, partial_through
        if rolled_last is None or (rolled_first is not None and rolled_first > rolled_last):
            live[start].append(project.project_id)
            continue
        stored[rolled_last].append(project.project_id)
        if rolled_first is not None and start is not None and start < day_start(rolled_first):
            heads.append(project.project_id)
        if covered_until is not None and covered_until < end:
            live[covered_until].append(project.project_id)
    windows = [Window(tuple(ids), live_from, end) for live_from, ids in live.items()]
    if heads and rolled_first is not None:
        windows.append(Window(tuple(heads), start, day_start(rolled_first)))
    return SpanPlan(
        only=ask.only,
        windows=tuple(windows),
        stored=tuple((tuple(ids), last) for last, ids in stored.items()),
        first=rolled_first if stored else None,
    )


def span_branches(plan: SpanPlan, *, tag: int, layout: Rows) -> list[QuerySet[Any]]:
    branches = live_branches(plan.windows, tag=tag, only=plan.only, layout=layout)
    if plan.stored:
        days = Q()
        for ids, last in plan.stored:
            days |= Q(project_id__in=ids, day__lte=last)
        if plan.first is not None:
            days &= Q(day__gte=plan.first)
        sums = {name: Sum(name) for name in STAT_FIELDS if plan.only is None or name in plan.only}
        branches.append(
            layout.of(
                ProjectDay.objects.filter(days),
                keys={"day": F("day")},
                values=sums,
                constants={"tag": tag, "kind": DAY},
            )
        )
        if plan.only is None:
            branches.append(
                layout.of(
                    ReopenRollup.objects.filter(days),
                    values={
                        "day": F("day"),
                        "closed_at": F("closed_hour"),
                        "issues_reopened": F("count"),
                        "resolution_seconds": F("resolution_seconds"),
                    },
                    constants={"tag": tag, "kind": UNDONE},
                )
            )
    return branches


def spans_branches(plans: tuple[SpanPlan, ...], *, layout: Rows = ROWS) -> list[QuerySet[Any]]:
    return [
        branch
        for tag, plan in enumerate(plans)
        for branch in span_branches(plan, tag=tag, layout=layout)
    ]


def spans_of(rows: list[tuple[Any, ...]], count: int, *, layout: Rows = ROWS) -> list[Span]:
    spans = [Span() for _tag in range(count)]
    for row in rows_read(rows, layout=layout):
        span = spans[row.tag]
        if row.kind != UNDONE:
            span.days[row.day].add(row.stats)
        if row.undone is not None:
            span.undone.append(row.undone)
    return spans


# The rows of the breakdowns' reads, in the same statement as the dashboard's figures (``kind``
# and ``project`` are the figures' columns): ISSUES, issues of a project grouped by type,
# priority, assignee (with the assignee's name and email) and status; LABELS, label links
# grouped by label name and the issue's status; SNAPSHOT, a stored snapshot.
DASHBOARD_ROWS = ROWS.extended(
    type=TextField(),
    priority=TextField(),
    assignee=BigIntegerField(null=True),
    assignee_name=TextField(),
    assignee_email=TextField(),
    label=TextField(),
    status=TextField(),
    n=BigIntegerField(),
    data=JSONField(),
    computed_at=DateTimeField(),
)
ISSUES, LABELS, SNAPSHOT = 10, 11, 12  # apart from the figures' kinds


class BreakdownPlan(NamedTuple):
    """Projects whose issues are grouped live, and those whose snapshot is read."""

    live: tuple[int, ...]
    stored: tuple[int, ...]


def breakdown_branches(plan: BreakdownPlan) -> list[QuerySet[Any]]:
    branches = []
    if plan.live:
        branches.append(
            DASHBOARD_ROWS.of(
                Issue.objects.filter(project_id__in=plan.live),
                keys={
                    "project": F("project_id"),
                    "type": F("type"),
                    "priority": F("priority"),
                    "assignee": F("assignee_id"),
                    # One per assignee: grouping by them changes no group, and names the people.
                    "assignee_name": F("assignee__name"),
                    "assignee_email": F("assignee__email"),
                    "status": F("status"),
                },
                values={"n": Count("id")},
                constants={"kind": ISSUES},
            )
        )
        # Labels belong to their issue's project: reaching the pairs through the project's
        # labels reads that project's rows only (by the label index), not the whole table.
        branches.append(
            DASHBOARD_ROWS.of(
                Issue.labels.through.objects.filter(label__project_id__in=plan.live),
                keys={
                    "project": F("label__project_id"),
                    "label": F("label__name"),
                    "status": F("issue__status"),
                },
                values={"n": Count("id")},
                constants={"kind": LABELS},
            )
        )
    if plan.stored:
        branches.append(
            DASHBOARD_ROWS.of(
                BreakdownSnapshot.objects.filter(project_id__in=plan.stored),
                values={
                    "project": F("project_id"),
                    "data": F("data"),
                    "computed_at": F("computed_at"),
                },
                constants={"kind": SNAPSHOT},
            )
        )
    return branches


def dashboard_branches(plan: tuple[tuple[SpanPlan, ...], BreakdownPlan]) -> list[QuerySet[Any]]:
    spans, breakdowns = plan
    return spans_branches(spans, layout=DASHBOARD_ROWS) + breakdown_branches(breakdowns)


# Each reads the stored days and the few rows written since the last rollup: never enough for
# a parallel worker to pay its start (on the bench's million issues, the planner gave one to a
# branch that read no row: 4 ms of each metrics request, more under load).
SERIAL = {"max_parallel_workers_per_gather": "0"}
# The statement of every metrics request, compiled once per shape of its plan.
SPANS = PreparedUnion(spans_branches, planner=SERIAL)


# The statement of every dashboard request, compiled once per shape of its plan.
DASHBOARD = PreparedUnion(dashboard_branches, planner=SERIAL)
