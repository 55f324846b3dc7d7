"""Writes of the analytics app: the daily rollups and the breakdown snapshots.

Every write is an upsert on a unique key or a delete of rows that no longer hold anything,
recomputed from the sources, so a rollup can run twice, or in two workers at once, and leave
the same rows.
"""

from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Min
from django.utils import timezone

from gitintegration.models import Commit, PullRequest
from issues.models import Issue
from projects.models import Project

from . import selectors
from .models import BreakdownSnapshot, ProjectDay, ReopenRollup, RollupState
from .periods import day_start
from .stats import STAT_FIELDS, Collected, stats_collect

# Days recomputed per transaction (and per step of the backfill's progress bar).
CHUNK_DAYS = 31


def rollup_days(*, project_id: int, first: date, last: date) -> int:
    """Recompute and store the days ``first``..``last`` (inclusive) of one project; returns
    the number of days with activity."""
    collected = stats_collect(
        project_ids=[project_id], start=day_start(first), end=day_start(last + timedelta(days=1))
    )
    with transaction.atomic():
        return _days_store(project_id=project_id, first=first, last=last, collected=collected)


def rollup_partial_day(*, project_id: int, until: datetime) -> None:
    """Store the day of ``until`` from its midnight up to ``until``, and say so in the
    project's state, in one transaction: readers then count only what came after live."""
    day = until.astimezone(UTC).date()
    collected = stats_collect(project_ids=[project_id], start=day_start(day), end=until)
    with transaction.atomic():
        _days_store(project_id=project_id, first=day, last=day, collected=collected)
        RollupState.objects.filter(project_id=project_id).update(partial_through=until)


def _days_store(*, project_id: int, first: date, last: date, collected: Collected) -> int:
    """Replace the stored rows of days ``first``..``last`` with ``collected`` (inside the
    caller's transaction)."""
    rows = [
        ProjectDay(project_id=project_id, day=day, **stats.as_dict())
        for (_project, day), stats in sorted(collected.days.items())
        if not stats.is_empty()
    ]
    reopens = [
        ReopenRollup(
            project_id=project_id,
            day=day,
            closed_hour=hour,
            count=count,
            resolution_seconds=seconds,
        )
        for (_project, day, hour), (count, seconds) in sorted(collected.reopens.items())
    ]
    # A day whose activity vanished (deleted issues, a removed repository) loses its rows.
    ProjectDay.objects.filter(project_id=project_id, day__gte=first, day__lte=last).exclude(
        day__in=[row.day for row in rows]
    ).delete()
    ProjectDay.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["project", "day"],
        update_fields=list(STAT_FIELDS),
    )
    kept = {(row.day, row.closed_hour) for row in reopens}
    stored = ReopenRollup.objects.filter(
        project_id=project_id, day__gte=first, day__lte=last
    ).values_list("pk", "day", "closed_hour")
    ReopenRollup.objects.filter(
        pk__in=[pk for pk, day, hour in stored if (day, hour) not in kept]
    ).delete()
    ReopenRollup.objects.bulk_create(
        reopens,
        update_conflicts=True,
        unique_fields=["project", "day", "closed_hour"],
        update_fields=["count", "resolution_seconds"],
    )
    return len(rows)


def _first_activity_day(project_id: int) -> date | None:
    # Comments are left out: none is older than the issue or pull request it is written on.
    candidates = [
        Issue.objects.filter(project_id=project_id).aggregate(at=Min("created_at"))["at"],
        Commit.objects.filter(repository__project_id=project_id).aggregate(at=Min("committed_at"))[
            "at"
        ],
        PullRequest.objects.filter(repository__project_id=project_id).aggregate(
            at=Min("created_at")
        )["at"],
    ]
    moments = [moment for moment in candidates if moment is not None]
    return min(moments).astimezone(UTC).date() if moments else None


def _chunks(first: date, last: date) -> Iterator[tuple[date, date]]:
    while first <= last:
        end = min(last, first + timedelta(days=CHUNK_DAYS - 1))
        yield first, end
        first = end + timedelta(days=1)


def rollup_project(
    *,
    project_id: int,
    full: bool = False,
    now: datetime | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Bring a project's rollups up to yesterday (UTC); returns the number of days computed.

    Without ``full``: the days after the last run, plus the past days of commits synced since
    (a sync brings commits with their own, older dates). With ``full``: every day from the
    project's first activity, which also forgets what deleted issues or repositories left.
    """
    now = now or timezone.now()
    yesterday = now.astimezone(UTC).date() - timedelta(days=1)
    if not Project.objects.filter(pk=project_id).exists():
        return 0
    # Two runs may start at once (the frequent and the nightly one): neither fails on the row.
    RollupState.objects.bulk_create([RollupState(project_id=project_id)], ignore_conflicts=True)
    state = RollupState.objects.get(project_id=project_id)
    # Read before counting, so commits synced meanwhile are looked at again next time.
    last_commit_id = (
        Commit.objects.filter(repository__project_id=project_id).aggregate(top=Max("id"))["top"]
        or 0
    )
    spans: list[tuple[date, date]] = []
    if full or state.through is None:
        first = _first_activity_day(project_id)
        if first is not None and first <= yesterday:
            spans.extend(_chunks(first, yesterday))
    else:
        if state.through < yesterday:
            spans.extend(_chunks(state.through + timedelta(days=1), yesterday))
        late_days = Commit.objects.filter(
            repository__project_id=project_id,
            id__gt=state.last_commit_id,
            committed_at__lt=day_start(state.through + timedelta(days=1)),
        ).datetimes("committed_at", "day", tzinfo=UTC)
        spans.extend((moment.date(), moment.date()) for moment in late_days)
    days = 0
    for first, last in spans:
        rollup_days(project_id=project_id, first=first, last=last)
        days += (last - first).days + 1
        if progress is not None:
            progress((last - first).days + 1)
    RollupState.objects.filter(project_id=project_id).update(
        through=yesterday, partial_through=None, last_commit_id=last_commit_id, updated_at=now
    )
    # Today up to a few minutes ago: a request then counts live only what is newer. The margin
    # leaves out what a transaction still open now may yet commit with an earlier time.
    until = now - timedelta(seconds=settings.ANALYTICS_PARTIAL_DAY_MARGIN_SECONDS)
    if until > day_start(yesterday + timedelta(days=1)):
        rollup_partial_day(project_id=project_id, until=until)
    breakdown_refresh(project_id=project_id, only_large=True)
    return days


def breakdown_refresh(*, project_id: int, only_large: bool = False) -> dict[str, Any] | None:
    """Store the project's breakdowns (only if it is large, with ``only_large``)."""
    if only_large and not selectors.breakdown_needs_snapshot(project_ids=[project_id]):
        BreakdownSnapshot.objects.filter(project_id=project_id).delete()
        return None
    data = selectors.breakdowns_compute(project_ids=[project_id])
    BreakdownSnapshot.objects.update_or_create(
        project_id=project_id, defaults={"data": data, "computed_at": timezone.now()}
    )
    return data
