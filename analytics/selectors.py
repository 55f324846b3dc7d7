"""Reads of the analytics app: metrics, daily series and breakdowns.

Figures for a span come from the stored daily rollups for the days the rollup job has
covered, and from the sources (``stats.stats_collect``) for the rest: today, the start of an
``h`` period that falls inside a day, and any day the job has not reached yet. A request
therefore reads at most one rollup row per day of its period plus what happened since
midnight, whatever the number of issues.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, QuerySet, Sum
from django.utils import timezone

from accounts.models import User
from collab.api.renderers import iso_z
from issues.models import Issue, IssueStatusCount, Status
from projects.models import Project
from projects.selectors import project_visibility_q

from .models import BreakdownSnapshot, ProjectDay, ReopenRollup, RollupState
from .periods import Period, day_start
from .stats import STAT_FIELDS, Stats, stats_collect

OPEN_STATUSES = (Status.OPEN.value, Status.IN_PROGRESS.value)


def workspace_projects(*, user: User, workspace_id: int) -> QuerySet[Project]:
    return Project.objects.filter(project_visibility_q(user), workspace_id=workspace_id)


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


def daily_stats(*, project_ids: list[int], start: datetime | None, end: datetime) -> Span:
    """What happened in ``[start, end)`` in these projects."""
    span = Span()
    states = {
        project_id: (through, partial_through)
        for project_id, through, partial_through in RollupState.objects.filter(
            project_id__in=project_ids
        ).values_list("project_id", "through", "partial_through")
    }
    # Projects are grouped by how far their rollups go (almost always one group): a project
    # the job has not reached yet is counted live without making the others live too.
    groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for project_id in project_ids:
        groups[states.get(project_id, (None, None))].append(project_id)
    for (through, partial_through), ids in groups.items():
        _span_add(
            span,
            project_ids=ids,
            through=through,
            partial_through=partial_through,
            start=start,
            end=end,
        )
    return span


def _span_add(
    span: Span,
    *,
    project_ids: list[int],
    through: date | None,
    partial_through: datetime | None,
    start: datetime | None,
    end: datetime,
) -> None:
    live: list[tuple[datetime | None, datetime]] = []
    rolled_first = None
    if start is not None:
        aligned = start == day_start(start.date())
        rolled_first = start.date() if aligned else start.date() + timedelta(days=1)
    rolled_last = min(through, end.date() - timedelta(days=1)) if through else None
    covered_until = day_start(rolled_last + timedelta(days=1)) if rolled_last else None
    # The day after ``through`` stored up to ``partial_through``: usable when the span takes
    # that day from its midnight and goes on past the moment.
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
        live.append((start, end))
    else:
        days = ProjectDay.objects.filter(project_id__in=project_ids, day__lte=rolled_last)
        reopens = ReopenRollup.objects.filter(project_id__in=project_ids, day__lte=rolled_last)
        if rolled_first is not None:
            days = days.filter(day__gte=rolled_first)
            reopens = reopens.filter(day__gte=rolled_first)
            if start is not None and start < day_start(rolled_first):
                live.append((start, day_start(rolled_first)))
        sums = days.order_by().values("day").annotate(**{f: Sum(f) for f in STAT_FIELDS})
        for row in sums:
            day = row.pop("day")
            span.days[day].add(Stats(**row))
        span.undone.extend(reopens.values_list("closed_hour", "count", "resolution_seconds"))
        if covered_until is not None and covered_until < end:
            live.append((covered_until, end))
    for live_start, live_end in live:
        collected = stats_collect(project_ids=project_ids, start=live_start, end=live_end)
        for (_project, day), stats in collected.days.items():
            span.days[day].add(stats)
        for (_project, _day, hour), (count, seconds) in collected.reopens.items():
            span.undone.append((hour, count, seconds))


def open_count(*, project_ids: list[int]) -> int:
    """Issues open or in progress now, from the counters the issue services keep."""
    counts = IssueStatusCount.objects.filter(
        project_id__in=project_ids, status__in=OPEN_STATUSES
    ).values_list("count", flat=True)
    return sum(counts)


def human_duration(seconds: float | None) -> str | None:
    """``"2 days 3 hours"``: the two largest units, rounded down."""
    if seconds is None:
        return None
    remaining = int(seconds)
    parts = []
    for name, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        amount, remaining = divmod(remaining, size)
        if amount:
            parts.append(f"{amount} {name}{'s' if amount != 1 else ''}")
    return " ".join(parts[:2]) or "0 seconds"


def _average(total: int, count: int) -> int | None:
    return round(total / count) if count else None


def _first_day(days: dict[date, Stats], projects: list[Project], end: datetime) -> date:
    candidates = [day for day, stats in days.items() if not stats.is_empty()]
    candidates += [project.created_at.astimezone(UTC).date() for project in projects]
    return min(candidates, default=end.astimezone(UTC).date())


def metrics(*, projects: list[Project], period: Period) -> dict[str, Any]:
    """The metrics object of CONTRACT section 5 (see the README, Analytics, for each figure)."""
    ids = [project.pk for project in projects]
    span = daily_stats(project_ids=ids, start=period.start, end=period.end)
    total = span.total()
    start = period.start or day_start(_first_day(span.days, projects, period.end))
    month_start = day_start(period.end.astimezone(UTC).date().replace(day=1))
    if start <= month_start:
        this_month = sum(
            stats.commits for day, stats in span.days.items() if day >= month_start.date()
        )
    else:
        this_month = daily_stats(project_ids=ids, start=month_start, end=period.end).total().commits
    # Closed in the period and still closed: the period's closings, less those undone by a
    # reopening (which, following its closing, falls in the period too).
    undone, undone_seconds = span.undone_since(period.start)
    closed = total.issues_closed - undone
    open_now = open_count(project_ids=ids)
    resolution = _average(total.resolution_seconds - undone_seconds, closed)
    review = _average(total.review_seconds, total.pull_requests_merged)
    return {
        "period": period.name,
        "from": iso_z(start),
        "to": iso_z(period.end),
        "issues": {
            "total": open_now + closed,
            "open": open_now,
            "closed": closed,
            "opened": total.issues_opened,
            "reopened": total.issues_reopened,
            "closings": total.issues_closed,
            "average_resolution_time": human_duration(resolution),
            "average_resolution_seconds": resolution,
        },
        "commits": {"total": total.commits, "this_month": this_month},
        "pull_requests": {
            "opened": total.pull_requests_opened,
            "merged": total.pull_requests_merged,
            "average_review_time": human_duration(review),
            "average_review_seconds": review,
        },
    }


def dashboard(*, projects: list[Project], period: Period) -> dict[str, Any]:
    """Daily series over the whole UTC days the period touches, and the breakdowns.

    ``comments`` of a day are the comments written that day on the projects' issues and pull
    requests that still exist: like deleted issues, a deleted comment leaves at once the days
    counted live, and the stored days at the next full rollup (nightly).
    """
    ids = [project.pk for project in projects]
    end = period.end
    start = day_start(period.start.astimezone(UTC).date()) if period.start else None
    days = daily_stats(project_ids=ids, start=start, end=end).days
    first = start.date() if start else _first_day(days, projects, end)
    last = end.astimezone(UTC).date()
    series = []
    open_at_end = open_count(project_ids=ids)
    day = last
    # Walked back from today's live count: the open issues at the end of the day before are
    # those at the end of this one, less the day's openings and reopenings, plus its closings.
    while day >= first:
        stats = days.get(day) or Stats()
        series.append(
            {
                "date": day.isoformat(),
                "issues_opened": stats.issues_opened,
                "issues_closed": stats.issues_closed,
                "issues_reopened": stats.issues_reopened,
                "open_issues": open_at_end,
                "commits": stats.commits,
                "pull_requests_opened": stats.pull_requests_opened,
                "pull_requests_merged": stats.pull_requests_merged,
                "comments": stats.comments,
            }
        )
        open_at_end = max(
            0, open_at_end - stats.issues_opened - stats.issues_reopened + stats.issues_closed
        )
        day -= timedelta(days=1)
    series.reverse()
    breakdown, as_of = breakdowns(project_ids=ids)
    return {
        "period": period.name,
        "from": iso_z(day_start(first)),
        "to": iso_z(end),
        "series": series,
        "breakdowns": breakdown,
        "breakdowns_as_of": iso_z(as_of),
    }


# Breakdowns ---------------------------------------------------------------------------------


def _issue_total(project_ids: list[int]) -> dict[int, int]:
    totals: dict[int, int] = defaultdict(int)
    for project_id, count in IssueStatusCount.objects.filter(
        project_id__in=project_ids
    ).values_list("project_id", "count"):
        totals[project_id] += count
    return totals


def breakdown_needs_snapshot(*, project_ids: list[int]) -> bool:
    limit: int = settings.ANALYTICS_LIVE_BREAKDOWN_MAX_ISSUES
    return sum(_issue_total(project_ids).values()) > limit


def _entries(counts: dict[Any, Any], labels: dict[Any, Any] | None = None) -> list[dict[str, Any]]:
    entries = []
    for key, by_status in counts.items():
        closed = by_status.get(Status.CLOSED.value, 0)
        total = sum(by_status.values())
        entries.append(
            {
                "key": key,
                "label": (labels or {}).get(key, key if key is not None else "none"),
                "open": total - closed,
                "closed": closed,
                "total": total,
            }
        )
    entries.sort(key=lambda entry: (-entry["total"], str(entry["key"])))
    return entries


def breakdowns_compute(*, project_ids: list[int]) -> dict[str, Any]:
    """Issues of these projects by type, priority, assignee and label, each split into open
    (open or in progress) and closed. Two grouped queries: one pass over the issues for the
    first three (few combinations), one over their labels."""
    by: dict[str, dict[Any, Any]] = {
        name: defaultdict(dict) for name in ("type", "priority", "assignee")
    }
    groups = (
        Issue.objects.filter(project_id__in=project_ids)
        .order_by()
        .values_list("type", "priority", "assignee_id", "status")
        .annotate(n=Count("id"))
    )
    for issue_type, priority, assignee_id, status, count in groups:
        assignee = str(assignee_id) if assignee_id is not None else None
        for name, key in (("type", issue_type), ("priority", priority), ("assignee", assignee)):
            by[name][key][status] = by[name][key].get(status, 0) + count
    people = {
        str(pk): name or email
        for pk, name, email in User.objects.filter(
            pk__in=[int(key) for key in by["assignee"] if key is not None]
        ).values_list("pk", "name", "email")
    }
    result = {
        "type": _entries(by["type"]),
        "priority": _entries(by["priority"]),
        "assignee": _entries(by["assignee"], {None: "unassigned", **people}),
    }
    labels: dict[str, Any] = defaultdict(dict)
    # Labels belong to their issue's project: reaching the pairs through the project's labels
    # reads that project's rows only (by the label index), not the whole pairs table.
    pairs = (
        Issue.labels.through.objects.filter(label__project_id__in=project_ids)
        .order_by()
        .values_list("label__name", "issue__status")
        .annotate(n=Count("id"))
    )
    for key, status, count in pairs:
        labels[key][status] = labels[key].get(status, 0) + count
    result["label"] = _entries(labels)
    return result


def _merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for dimension in ("type", "priority", "assignee", "label"):
        by_key: dict[str, Any] = {}
        for part in parts:
            for entry in part.get(dimension, []):
                into = by_key.setdefault(
                    entry["key"],
                    {"key": entry["key"], "label": entry["label"], "open": 0, "closed": 0},
                )
                into["open"] += entry["open"]
                into["closed"] += entry["closed"]
        entries = [{**entry, "total": entry["open"] + entry["closed"]} for entry in by_key.values()]
        entries.sort(key=lambda entry: (-entry["total"], str(entry["key"])))
        merged[dimension] = entries
    return merged


def _status_breakdown(project_ids: list[int]) -> list[dict[str, Any]]:
    counts = dict.fromkeys(Status.values, 0)
    for status, count in IssueStatusCount.objects.filter(project_id__in=project_ids).values_list(
        "status", "count"
    ):
        counts[status] += count
    return [
        {
            "key": status,
            "label": status,
            "open": 0 if status == Status.CLOSED else count,
            "closed": count if status == Status.CLOSED else 0,
            "total": count,
        }
        for status, count in counts.items()
    ]


def breakdowns(*, project_ids: list[int]) -> tuple[dict[str, Any], datetime]:
    """The breakdowns and the time they describe: now for projects small enough to group
    live (``ANALYTICS_LIVE_BREAKDOWN_MAX_ISSUES``), the last snapshot for larger ones. The
    status breakdown is always live: the issue services keep those counters."""
    now = timezone.now()
    totals = _issue_total(project_ids)
    limit = settings.ANALYTICS_LIVE_BREAKDOWN_MAX_ISSUES
    large = [pk for pk in project_ids if totals.get(pk, 0) > limit]
    small = [pk for pk in project_ids if pk not in large]
    parts = [breakdowns_compute(project_ids=small)] if small else []
    as_of = now
    snapshots = {
        snapshot.project_id: snapshot
        for snapshot in BreakdownSnapshot.objects.filter(project_id__in=large)
    }
    for pk in large:
        snapshot = snapshots.get(pk)
        if snapshot is None:
            # Not stored yet (the rollup job has not run since the project grew): group live.
            parts.append(breakdowns_compute(project_ids=[pk]))
            continue
        parts.append(snapshot.data)
        as_of = min(as_of, snapshot.computed_at)
    result = parts[0] if len(parts) == 1 else _merge(parts)
    return {"status": _status_breakdown(project_ids), **result}, as_of
