"""Reads of the analytics app: metrics, daily series and breakdowns.

Figures for a span come from the stored daily rollups for the days the rollup job has
covered, and from the sources (``stats.live_branches``) for the rest: today, the start of an
``h`` period that falls inside a day, and any day the job has not reached yet. A request
therefore reads at most one rollup row per day of its period plus what happened since
midnight, whatever the number of issues.

What a request needs to know of its projects first (how far their rollups go, their issue
counters, whether a breakdown snapshot is stored) comes with the projects' own row (``FACTS``,
annotations of the project lookup). Then the figures of every span the request asks for, and
a dashboard's breakdowns with them, are one statement whatever the number of projects: a
``UNION ALL`` of reads planned in ``analytics.plans`` (``SpanPlan``, ``BreakdownPlan``),
compiled to SQL once per shape of the plan; the figures are presented as ``analytics.records``
says.
"""

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import (
    Exists,
    OuterRef,
    QuerySet,
    Subquery,
    Sum,
)
from django.utils import timezone

from accounts.models import Membership, User
from accounts.roles import project_limit, role_remember
from collab.api.renderers import iso_z
from collab.db.prepared import PreparedQuery
from issues.models import IssueStatusCount, Status
from projects.models import Project, ProjectMember
from projects.selectors import PROJECT_FIELDS, project_visible

from .models import BreakdownSnapshot, RollupState
from .periods import Period, day_start
from .plans import (
    DASHBOARD,
    DASHBOARD_ROWS,
    ISSUES,
    LABELS,
    SNAPSHOT,
    SPANS,
    Ask,
    BreakdownPlan,
    Span,
    breakdown_branches,
    span_plan,
    spans_of,
)
from .records import (
    Facts,
    breakdown_entries,
    breakdowns_merge,
    human_duration,
    status_breakdown,
)
from .stats import Stats

# Facts ---------------------------------------------------------------------------------------

# What the analytics of a project read first, as annotations of its row (``OuterRef("pk")``):
# views ask for them with the project itself (``projects.selectors.ProjectLookup``).
FACTS: dict[str, Any] = {
    "analytics_through": Subquery(
        RollupState.objects.filter(project_id=OuterRef("pk")).values("through")[:1]
    ),
    "analytics_partial_through": Subquery(
        RollupState.objects.filter(project_id=OuterRef("pk")).values("partial_through")[:1]
    ),
    "analytics_snapshot": Exists(BreakdownSnapshot.objects.filter(project_id=OuterRef("pk"))),
    **{
        f"analytics_{status}": Subquery(
            IssueStatusCount.objects.filter(project_id=OuterRef("pk"), status=status).values(
                "count"
            )[:1]
        )
        for status in Status.values
    },
}


def _facts_of(project: Project, values: dict[str, Any]) -> Facts:
    return Facts(
        project_id=project.pk,
        created_at=project.created_at,
        through=values["analytics_through"],
        partial_through=values["analytics_partial_through"],
        statuses={status: values[f"analytics_{status}"] or 0 for status in Status.values},
        has_snapshot=bool(values["analytics_snapshot"]),
    )


def project_facts(projects: Iterable[Project]) -> list[Facts]:
    """The facts of these projects: from their rows when they were read with ``FACTS``, else
    in one query."""
    projects = list(projects)
    missing = [project.pk for project in projects if not hasattr(project, "analytics_through")]
    loaded = {}
    if missing:
        loaded = {
            row["pk"]: row
            for row in Project.objects.filter(pk__in=missing)
            .order_by()
            .annotate(**FACTS)
            .values("pk", *FACTS)
        }
    return [
        _facts_of(project, loaded[project.pk] if project.pk in loaded else vars(project))
        for project in projects
    ]


_READER = ("reader_role", "reader_on_team", *FACTS)


def _workspace_rows(*, workspace_id: int, user_id: int) -> QuerySet[Project, dict[str, Any]]:
    rows: QuerySet[Project, dict[str, Any]] = (
        Project.objects.filter(workspace_id=workspace_id)
        .annotate(
            reader_role=Subquery(
                Membership.objects.filter(
                    workspace_id=OuterRef("workspace_id"), user_id=user_id
                ).values("role")[:1]
            ),
            reader_on_team=Exists(
                ProjectMember.objects.filter(project_id=OuterRef("pk"), user_id=user_id)
            ),
            **FACTS,
        )
        .order_by("pk")
        .values(*PROJECT_FIELDS, *_READER)
    )
    return rows


_WORKSPACE_PROJECTS = PreparedQuery(_workspace_rows, workspace_id=int, user_id=int)


def workspace_projects(*, user: User, workspace_id: int) -> list[Project] | None:
    """The projects of a workspace the user may see, by id, with their facts; None when the
    user is not a member of the workspace (whether it exists or not).

    One query (compiled once): every project of the workspace with the reader's role and team
    seat (as ``ProjectLookup`` reads them), the visibility rule applied here
    (``project_visible``). A second only when the workspace shows no project, to tell a
    member from a stranger.
    """
    rows = _WORKSPACE_PROJECTS.rows(workspace_id=workspace_id, user_id=user.pk)
    if rows:
        role = rows[0]["reader_role"]
    else:
        role = (
            Membership.objects.filter(workspace_id=workspace_id, user_id=user.pk)
            .values_list("role", flat=True)
            .first()
        )
    limit = project_limit(user)  # a credential limited to projects sees their workspaces
    if role is None or (limit is not None and not any(row["id"] in limit for row in rows)):
        return None
    role_remember(user, workspace_id, role)
    projects: list[Project] = []
    for row in rows:
        project = Project.from_db(
            _WORKSPACE_PROJECTS.alias, PROJECT_FIELDS, [row[name] for name in PROJECT_FIELDS]
        )
        for name in _READER:
            setattr(project, name, row[name])
        # Whom reader_role and reader_on_team describe.
        project.reader_id = user.pk
        if project_visible(user=user, project=project):
            projects.append(project)
    return projects


# Spans ---------------------------------------------------------------------------------------


def spans_read(*, facts: list[Facts], asks: list[Ask]) -> list[Span]:
    """What happened in each asked span in these projects, in one query."""
    plans = tuple(span_plan(facts, ask) for ask in asks)
    return spans_of(SPANS.fetch(plans), len(asks))


def _average(total: int, count: int) -> int | None:
    return round(total / count) if count else None


def _first_day(days: dict[date, Stats], facts: list[Facts], end: datetime) -> date:
    candidates = [day for day, stats in days.items() if not stats.is_empty()]
    candidates += [project.created_at.astimezone(UTC).date() for project in facts]
    return min(candidates, default=end.astimezone(UTC).date())


def metrics(*, projects: list[Project], period: Period) -> dict[str, Any]:
    """The metrics object (docs/guide/analytics.md defines each figure)."""
    facts = project_facts(projects)
    month_start = day_start(period.end.astimezone(UTC).date().replace(day=1))
    asks = [Ask(period.start, period.end)]
    # The commits of this month are the period's days from the 1st on, when the period covers
    # the month so far (``all`` always does: its days run from the first activity on).
    if period.start is not None and period.start > month_start:
        asks.append(Ask(month_start, period.end, only=("commits",)))
    span, *month = spans_read(facts=facts, asks=asks)
    total = span.total()
    start = period.start or day_start(_first_day(span.days, facts, period.end))
    if month:
        this_month = month[0].total().commits
    else:
        this_month = sum(
            stats.commits for day, stats in span.days.items() if day >= month_start.date()
        )
    # Closed in the period and still closed: the period's closings, less those undone by a
    # reopening (which, following its closing, falls in the period too).
    undone, undone_seconds = span.undone_since(period.start)
    closed = total.issues_closed - undone
    open_now = sum(project.open_issues for project in facts)
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
    facts = project_facts(projects)
    end = period.end
    start = day_start(period.start.astimezone(UTC).date()) if period.start else None
    # The figures and the breakdowns in one statement.
    breakdowns = Breakdowns(facts)
    rows = DASHBOARD.fetch(((span_plan(facts, Ask(start, end)),), breakdowns.plan))
    days = spans_of(rows, 1, layout=DASHBOARD_ROWS)[0].days
    first = start.date() if start else _first_day(days, facts, end)
    last = end.astimezone(UTC).date()
    series = []
    open_at_end = sum(project.open_issues for project in facts)
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
    breakdown, as_of = breakdowns.result(rows)
    return {
        "period": period.name,
        "from": iso_z(day_start(first)),
        "to": iso_z(end),
        "series": series,
        "breakdowns": breakdown,
        "breakdowns_as_of": iso_z(as_of),
    }


# Breakdowns ---------------------------------------------------------------------------------


def breakdown_needs_snapshot(*, project_ids: list[int]) -> bool:
    limit: int = settings.ANALYTICS_LIVE_BREAKDOWN_MAX_ISSUES
    total = IssueStatusCount.objects.filter(project_id__in=project_ids).aggregate(n=Sum("count"))
    return (total["n"] or 0) > limit


class _Grouped:
    """Live breakdown rows of some projects, summed."""

    def __init__(self) -> None:
        self.by: dict[str, dict[Any, Any]] = {
            name: defaultdict(dict) for name in ("type", "priority", "assignee", "label")
        }
        self.people: dict[str, str] = {}

    def add(self, row: tuple[Any, ...]) -> None:
        column = DASHBOARD_ROWS.index
        status, count = row[column["status"]], int(row[column["n"]])
        if row[column["kind"]] == LABELS:
            keys = [("label", row[column["label"]])]
        else:
            assignee_id = row[column["assignee"]]
            assignee = str(assignee_id) if assignee_id is not None else None
            if assignee is not None and row[column["assignee_email"]] is not None:
                self.people[assignee] = (
                    row[column["assignee_name"]] or row[column["assignee_email"]]
                )
            keys = [
                ("type", row[column["type"]]),
                ("priority", row[column["priority"]]),
                ("assignee", assignee),
            ]
        for name, key in keys:
            self.by[name][key][status] = self.by[name][key].get(status, 0) + count

    def result(self) -> dict[str, Any]:
        return {
            "type": breakdown_entries(self.by["type"]),
            "priority": breakdown_entries(self.by["priority"]),
            "assignee": breakdown_entries(self.by["assignee"], {None: "unassigned", **self.people}),
            "label": breakdown_entries(self.by["label"]),
        }


def breakdowns_compute(*, project_ids: list[int]) -> dict[str, Any]:
    """Issues of these projects by type, priority, assignee and label, each split into open
    (open or in progress) and closed, in one query: a pass over the issues for the first three
    (few combinations), one over their labels."""
    grouped = _Grouped()
    plan = BreakdownPlan(live=tuple(project_ids), stored=())
    for row in DASHBOARD_ROWS.fetch(breakdown_branches(plan)):
        grouped.add(row)
    return grouped.result()


class Breakdowns:
    """The breakdowns of some projects: now for those small enough to group live
    (``ANALYTICS_LIVE_BREAKDOWN_MAX_ISSUES``), the last snapshot for larger ones (grouped live
    too while they have none: the rollup job has not run since they grew), and the status
    breakdown always live (the issue services keep those counters). ``plan`` says what to
    read, ``result`` gives the breakdowns from the rows read, with the time they describe."""

    def __init__(self, facts: list[Facts]) -> None:
        self.facts = facts
        limit = settings.ANALYTICS_LIVE_BREAKDOWN_MAX_ISSUES
        self.large = [project.project_id for project in facts if project.issues > limit]
        self.small = [project.project_id for project in facts if project.issues <= limit]
        stored = {project.project_id for project in facts if project.has_snapshot}
        self.plan = BreakdownPlan(
            live=(*self.small, *(pk for pk in self.large if pk not in stored)),
            stored=tuple(pk for pk in self.large if pk in stored),
        )
        self.now = timezone.now()

    def result(self, rows: list[tuple[Any, ...]]) -> tuple[dict[str, Any], datetime]:
        large = set(self.large)
        grouped: dict[int, _Grouped] = defaultdict(_Grouped)
        snapshots: dict[int, tuple[dict[str, Any], datetime]] = {}
        column = DASHBOARD_ROWS.index
        for row in rows:
            kind = row[column["kind"]]
            if kind not in (ISSUES, LABELS, SNAPSHOT):
                continue
            project_id = int(row[column["project"]])
            if kind == SNAPSHOT:
                snapshots[project_id] = (row[column["data"]], row[column["computed_at"]])
            else:
                grouped[project_id if project_id in large else 0].add(row)
        parts = [grouped[0].result()] if self.small else []
        as_of = self.now
        for pk in self.large:
            if pk in snapshots:
                data, computed_at = snapshots[pk]
                parts.append(data)
                as_of = min(as_of, computed_at)
            elif pk in self.plan.stored:
                # Deleted since the project's row was read (it has become small): group live.
                parts.append(breakdowns_compute(project_ids=[pk]))
            else:
                parts.append(grouped[pk].result())
        result = parts[0] if len(parts) == 1 else breakdowns_merge(parts)
        return {"status": status_breakdown(self.facts), **result}, as_of
