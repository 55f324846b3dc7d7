"""Metrics over HTTP against the hand-worked scenario (tests/analytics/conftest.py), the same
figures whether the days come from the stored rollups, the backfill or live counting."""

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from analytics.models import ProjectDay, RollupState
from analytics.services import rollup_project
from analytics.stats import BORN_CLOSED
from issues.models import IssueHistory
from tests.analytics.conftest import NOW, at
from tests.conftest import assert_error, assert_ok

# period -> (from, issues, commits, pull requests), worked out by hand from the scenario.
EXPECTED = {
    "30d": (
        "2026-02-14T00:00:00Z",
        # Closings F, A, C, G, C, D; C's first closing undone by its reopening.
        {
            "total": 7,
            "open": 2,
            "closed": 5,
            "opened": 4,
            "reopened": 1,
            "closings": 6,
            "avg": 866880,
        },
        {"total": 3, "this_month": 3},
        {"opened": 3, "merged": 1, "avg": 194400},
    ),
    "2w": (
        "2026-03-02T00:00:00Z",
        {
            "total": 5,
            "open": 2,
            "closed": 3,
            "opened": 3,
            "reopened": 1,
            "closings": 4,
            "avg": 261600,
        },
        {"total": 1, "this_month": 3},
        {"opened": 3, "merged": 1, "avg": 194400},
    ),
    # C was closed before the period (03-02), reopened and closed again in it: closed once.
    "12d": (
        "2026-03-04T00:00:00Z",
        {
            "total": 4,
            "open": 2,
            "closed": 2,
            "opened": 2,
            "reopened": 1,
            "closings": 2,
            "avg": 392400,
        },
        {"total": 1, "this_month": 3},
        {"opened": 3, "merged": 1, "avg": 194400},
    ),
    "1m": (
        "2026-02-16T00:00:00Z",
        {
            "total": 6,
            "open": 2,
            "closed": 4,
            "opened": 4,
            "reopened": 1,
            "closings": 5,
            "avg": 1081800,
        },
        {"total": 3, "this_month": 3},
        {"opened": 3, "merged": 1, "avg": 194400},
    ),
    "1d": (
        "2026-03-15T00:00:00Z",
        {
            "total": 3,
            "open": 2,
            "closed": 1,
            "opened": 1,
            "reopened": 0,
            "closings": 1,
            "avg": 7200,
        },
        {"total": 1, "this_month": 3},
        {"opened": 0, "merged": 0, "avg": None},
    ),
    # 10:00 to now: D was created at 09:00, before it, and closed at 11:00, in it.
    "3h": (
        "2026-03-15T10:00:00Z",
        {
            "total": 3,
            "open": 2,
            "closed": 1,
            "opened": 0,
            "reopened": 0,
            "closings": 1,
            "avg": 7200,
        },
        {"total": 1, "this_month": 3},
        {"opened": 0, "merged": 0, "avg": None},
    ),
    "4h": (
        "2026-03-15T09:00:00Z",
        {
            "total": 3,
            "open": 2,
            "closed": 1,
            "opened": 1,
            "reopened": 0,
            "closings": 1,
            "avg": 7200,
        },
        {"total": 1, "this_month": 3},
        {"opened": 0, "merged": 0, "avg": None},
    ),
    # Starts inside a rolled-up day: its part of 03-14 is counted live (E created 10:00).
    "30h": (
        "2026-03-14T07:00:00Z",
        {
            "total": 3,
            "open": 2,
            "closed": 1,
            "opened": 2,
            "reopened": 0,
            "closings": 1,
            "avg": 7200,
        },
        {"total": 1, "this_month": 3},
        {"opened": 0, "merged": 0, "avg": None},
    ),
    "1y": (
        "2025-03-16T00:00:00Z",
        {
            "total": 7,
            "open": 2,
            "closed": 5,
            "opened": 7,
            "reopened": 1,
            "closings": 6,
            "avg": 866880,
        },
        {"total": 4, "this_month": 3},
        {"opened": 3, "merged": 1, "avg": 194400},
    ),
    "all": (
        "2026-01-05T00:00:00Z",
        {
            "total": 7,
            "open": 2,
            "closed": 5,
            "opened": 7,
            "reopened": 1,
            "closings": 6,
            "avg": 866880,
        },
        {"total": 4, "this_month": 3},
        {"opened": 3, "merged": 1, "avg": 194400},
    ),
}
HUMAN = {
    866880: "10 days 48 minutes",
    261600: "3 days 40 minutes",
    392400: "4 days 13 hours",
    1081800: "12 days 12 hours",
    7200: "2 hours",
    194400: "2 days 6 hours",
    None: None,
}


def _prepare(mode: str, project, pinned):
    with pinned(NOW):
        if mode == "rollups":
            rollup_project(project_id=project.pk)
        elif mode == "backfill":
            call_command("analytics_backfill", "--project", str(project.pk), verbosity=0)


@pytest.mark.parametrize("mode", ["live", "rollups", "backfill"])
@pytest.mark.parametrize("period", list(EXPECTED))
def test_metrics_match_the_hand_worked_figures(api, scenario, pinned, mode, period):
    _prepare(mode, scenario.project, pinned)
    start, issues, commits, pulls = EXPECTED[period]
    with pinned(NOW):
        body = assert_ok(
            api.viewer.get(f"/v1/projects/{scenario.project.pk}/metrics?period={period}")
        )
    data = body["data"]
    assert data["period"] == period
    assert data["from"] == start
    assert data["to"] == "2026-03-15T12:00:00Z"
    assert data["issues"] == {
        "total": issues["total"],
        "open": issues["open"],
        "closed": issues["closed"],
        "opened": issues["opened"],
        "reopened": issues["reopened"],
        "closings": issues["closings"],
        "average_resolution_seconds": issues["avg"],
        "average_resolution_time": HUMAN[issues["avg"]],
    }
    assert data["issues"]["open"] + data["issues"]["closed"] == data["issues"]["total"]
    assert data["commits"] == commits
    assert data["pull_requests"] == {
        "opened": pulls["opened"],
        "merged": pulls["merged"],
        "average_review_seconds": pulls["avg"],
        "average_review_time": HUMAN[pulls["avg"]],
    }


def test_default_period_is_30d(api, scenario, pinned):
    with pinned(NOW):
        data = assert_ok(api.owner.get(f"/v1/projects/{scenario.project.pk}/metrics"))["data"]
    assert data["period"] == "30d"
    assert data["issues"]["closed"] == 5


def test_past_days_are_read_from_the_rollups(api, scenario, pinned):
    """A stored day is not counted again: changing its row changes the answer."""
    _prepare("rollups", scenario.project, pinned)
    assert RollupState.objects.get(project=scenario.project).through == at(3, 14).date()
    ProjectDay.objects.filter(project=scenario.project, day=at(3, 1).date()).update(commits=40)
    with pinned(NOW):
        data = assert_ok(api.owner.get(f"/v1/projects/{scenario.project.pk}/metrics?period=30d"))[
            "data"
        ]
    assert data["commits"] == {"total": 41, "this_month": 41}


def test_today_is_always_live(api, scenario, pinned, world):
    """Rolled up this morning, then a new issue is closed: it counts at once."""
    with pinned(at(3, 15, 11, 20)):
        rollup_project(project_id=scenario.project.pk)
    from tests.analytics.conftest import close
    from tests.factories import make_issue

    with pinned(at(3, 15, 11, 30)):
        issue = make_issue(scenario.project, world.owner, title="late")
    with pinned(at(3, 15, 11, 45)):
        close(issue, world.owner)
    with pinned(NOW):
        data = assert_ok(api.owner.get(f"/v1/projects/{scenario.project.pk}/metrics?period=1d"))[
            "data"
        ]
    assert data["issues"]["closed"] == 2
    assert data["issues"]["opened"] == 2
    assert data["issues"]["total"] == 4


def test_today_is_stored_up_to_a_margin_before_the_rollup_and_counted_live_after(
    api, scenario, pinned, world, settings
):
    """The rollup stores today up to five minutes before it ran; a closing inside those five
    minutes (a transaction still open when the rollup read) and one after it count once each,
    and the figures are those of a project counted live from the sources."""
    from tests.analytics.conftest import close
    from tests.factories import make_issue

    settings.ANALYTICS_PARTIAL_DAY_MARGIN_SECONDS = 300
    with pinned(at(3, 15, 10, 30)):
        early = make_issue(scenario.project, world.owner, title="early")
        close(early, world.owner)
    with pinned(at(3, 15, 10, 57)):
        in_margin = make_issue(scenario.project, world.owner, title="in the margin")
        close(in_margin, world.owner)
    with pinned(at(3, 15, 11)):
        rollup_project(project_id=scenario.project.pk)
    state = RollupState.objects.get(project=scenario.project)
    assert state.partial_through == at(3, 15, 10, 55)
    today = ProjectDay.objects.get(project=scenario.project, day=at(3, 15).date())
    assert today.issues_opened >= 1 and today.issues_closed >= 1
    with pinned(at(3, 15, 11, 30)):
        late = make_issue(scenario.project, world.owner, title="late")
        close(late, world.owner)

    url = f"/v1/projects/{scenario.project.pk}/metrics?period=1d"
    with pinned(NOW):
        rolled = assert_ok(api.owner.get(url))["data"]
        dashboard = assert_ok(api.owner.get(url.replace("metrics", "dashboard")))["data"]
    RollupState.objects.all().delete()
    ProjectDay.objects.all().delete()
    with pinned(NOW):
        live = assert_ok(api.owner.get(url))["data"]
        live_dashboard = assert_ok(api.owner.get(url.replace("metrics", "dashboard")))["data"]
    assert rolled == live
    assert dashboard == live_dashboard
    assert live["issues"]["closed"] >= 3 and live["issues"]["opened"] >= 3


def test_a_partial_day_left_from_yesterday_is_replaced_by_the_whole_day(
    api, scenario, pinned, world
):
    """Rolled up late yesterday (the day stored up to 23:25), then nothing until today: the
    rest of yesterday is counted live until the next rollup stores the whole day."""
    from tests.analytics.conftest import close
    from tests.factories import make_issue

    with pinned(at(3, 14, 23, 30)):
        rollup_project(project_id=scenario.project.pk)
    assert RollupState.objects.get(project=scenario.project).partial_through == at(3, 14, 23, 25)
    with pinned(at(3, 14, 23, 50)):
        issue = make_issue(scenario.project, world.owner, title="before midnight")
        close(issue, world.owner)
    url = f"/v1/projects/{scenario.project.pk}/metrics?period=7d"
    with pinned(NOW):
        stale_state = assert_ok(api.owner.get(url))["data"]
        rollup_project(project_id=scenario.project.pk)
        rolled = assert_ok(api.owner.get(url))["data"]
    state = RollupState.objects.get(project=scenario.project)
    assert state.through == at(3, 14).date() and state.partial_through == at(3, 15, 11, 55)
    RollupState.objects.all().delete()
    with pinned(NOW):
        live = assert_ok(api.owner.get(url))["data"]
    assert stale_state == rolled == live


def test_a_project_without_activity_has_zeros_and_no_averages(api, world):
    data = assert_ok(api.owner.get(f"/v1/projects/{world.project.pk}/metrics?period=7d"))["data"]
    assert data["issues"] == {
        "total": 0,
        "open": 0,
        "closed": 0,
        "opened": 0,
        "reopened": 0,
        "closings": 0,
        "average_resolution_time": None,
        "average_resolution_seconds": None,
    }
    assert data["commits"] == {"total": 0, "this_month": 0}


@pytest.mark.parametrize(
    "period",
    ["xyz", "30", "d", "0d", "-1d", "30D", "1.5d", "30 d", "30s", "1000000d", "101y", "ALL", ""],
)
def test_bad_periods_are_refused(api, world, period):
    error = assert_error(
        api.owner.get(f"/v1/projects/{world.project.pk}/metrics", {"period": period}),
        400,
        "BAD_REQUEST",
    )
    assert "period" in error["details"]


@pytest.mark.parametrize("path", ["metrics", "dashboard", "reports/issues"])
def test_outsiders_get_404(api, world, path):
    assert_error(api.outsider.get(f"/v1/projects/{world.project.pk}/{path}"), 404, "NOT_FOUND")
    assert_error(api.owner.get(f"/v1/projects/987654321/{path}"), 404, "NOT_FOUND")


@pytest.mark.parametrize("path", ["metrics", "dashboard", "reports/issues"])
def test_projects_read_scope_is_needed(world, path):
    from tests.conftest import client_for

    denied = client_for(world.owner, scopes=["issues:read"])
    error = assert_error(denied.get(f"/v1/projects/{world.project.pk}/{path}"), 403, "FORBIDDEN")
    assert error["details"]["required_scope"] == "projects:read"
    allowed = client_for(world.viewer, scopes=["projects:read"])
    assert allowed.get(f"/v1/projects/{world.project.pk}/{path}").status_code == 200


@pytest.mark.parametrize("path", ["metrics", "dashboard", "reports/issues"])
def test_anonymous_gets_401_and_writes_405(api, world, path):
    assert_error(api.anonymous.get(f"/v1/projects/{world.project.pk}/{path}"), 401, "UNAUTHORIZED")
    assert_error(
        api.owner.post(f"/v1/projects/{world.project.pk}/{path}", {}, format="json"),
        405,
        "METHOD_NOT_ALLOWED",
    )


@pytest.mark.parametrize("path", ["metrics?period=1y", "dashboard?period=1y"])
def test_the_same_queries_whatever_the_number_of_issues(api, world, pinned, path):
    """Past days come from one rollup query; only today is counted from the sources."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.factories import make_issue

    def count_queries() -> int:
        with pinned(NOW), CaptureQueriesContext(connection) as captured:
            assert_ok(api.owner.get(f"/v1/projects/{world.project.pk}/{path}"))
        return len(captured)

    with pinned(at(3, 1)):
        make_issue(world.project, world.owner, labels=["first"], assignee_id=world.owner.pk)
    with pinned(NOW):
        rollup_project(project_id=world.project.pk)
    count_queries()  # the key's first use is recorded once
    few = count_queries()
    for day in range(2, 14):
        with pinned(at(3, day)):
            for _ in range(5):
                make_issue(
                    world.project,
                    world.owner,
                    status="closed",
                    type="bug",
                    labels=[f"label-{day}"],
                    assignee_id=world.developer.pk,
                )
    with pinned(NOW):
        rollup_project(project_id=world.project.pk)
    assert count_queries() == few


@pytest.mark.parametrize("mode", ["live", "rollups"])
@pytest.mark.parametrize(
    ("name", "undone_seconds"),
    [("D", 7200), ("A", 41 * 86400)],  # closed today; closed on a day already rolled up
)
def test_reopened_today_is_no_longer_closed(
    api, scenario, pinned, world, mode, name, undone_seconds
):
    from tests.analytics.conftest import reopen

    _prepare(mode, scenario.project, pinned)
    # Within the rollup's margin: it ran at noon and stored today up to 11:55.
    with pinned(at(3, 15, 11, 58)):
        reopen(scenario.issues[name], world.owner)
    with pinned(NOW):
        issues = assert_ok(api.owner.get(f"/v1/projects/{scenario.project.pk}/metrics?period=30d"))[
            "data"
        ]["issues"]
    assert (issues["open"], issues["closed"], issues["total"]) == (3, 4, 7)
    assert (issues["closings"], issues["reopened"]) == (6, 2)
    assert issues["average_resolution_seconds"] == (4420800 - 86400 - undone_seconds) // 4


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's index alone")
def test_the_issues_created_closed_are_read_through_their_own_index(scenario):
    """The live count of issues created closed (G in the scenario) reads the partial index of
    their "created" rows (analytics_history_born_closed), never every row of the history: the
    index's condition, compiled in its migration, is the query's (``stats.BORN_CLOSED``), or
    no planner would use it. With a scan of the table priced out, the plan names the index."""
    sql, params = (
        IssueHistory.objects.filter(BORN_CLOSED).values("issue_id").query.sql_with_params()
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "analytics_history_born_closed" in plan, plan
    assert list(
        IssueHistory.objects.filter(BORN_CLOSED).values_list("issue__title", flat=True)
    ) == ["Issue G"]
