"""Dashboard data over HTTP: daily series and breakdowns, per project and per workspace."""

import pytest
from django.test import override_settings

from analytics.models import BreakdownSnapshot
from analytics.services import breakdown_refresh, rollup_project
from projects.models import Project
from tests.analytics.conftest import NOW
from tests.conftest import assert_error, assert_ok
from tests.factories import ProjectFactory, make_issue

SEVEN_DAYS = {
    "date": ["03-09", "03-10", "03-11", "03-12", "03-13", "03-14", "03-15"],
    "issues_opened": [0, 0, 0, 0, 0, 1, 1],
    "issues_closed": [0, 1, 0, 0, 0, 0, 1],
    "issues_reopened": [0, 0, 0, 0, 0, 0, 0],
    "open_issues": [2, 1, 1, 1, 1, 2, 2],
    "commits": [0, 0, 0, 0, 0, 0, 1],
    "pull_requests_opened": [0, 1, 1, 0, 1, 0, 0],
    "pull_requests_merged": [0, 0, 0, 1, 0, 0, 0],
    "comments": [0, 0, 0, 1, 0, 0, 2],
}


def columns(series: list[dict]) -> dict[str, list]:
    result = {name: [point[name] for point in series] for name in SEVEN_DAYS}
    result["date"] = [value[5:] for value in result["date"]]
    return result


@pytest.mark.parametrize("rolled_up", [False, True])
def test_series_by_hand(api, scenario, pinned, rolled_up):
    if rolled_up:
        with pinned(NOW):
            rollup_project(project_id=scenario.project.pk)
    with pinned(NOW):
        data = assert_ok(api.viewer.get(f"/v1/projects/{scenario.project.pk}/dashboard?period=7d"))[
            "data"
        ]
    assert data["from"] == "2026-03-09T00:00:00Z"
    assert data["to"] == "2026-03-15T12:00:00Z"
    assert columns(data["series"]) == SEVEN_DAYS


@pytest.mark.parametrize("rolled_up", [False, True])
def test_comments_per_day_by_hand(api, scenario, pinned, rolled_up):
    """Comments written each day on the project's issues and pull requests; the one deleted
    on 03-14 and the other workspace's are not counted."""
    if rolled_up:
        with pinned(NOW):
            rollup_project(project_id=scenario.project.pk)
    with pinned(NOW):
        series = assert_ok(
            api.viewer.get(f"/v1/projects/{scenario.project.pk}/dashboard?period=30d")
        )["data"]["series"]
    comments = {point["date"][5:]: point["comments"] for point in series if point["comments"]}
    assert comments == {"03-01": 2, "03-12": 1, "03-15": 2}
    assert len(series) == 30


def test_the_schema_documents_comments_per_day():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    point = schema["components"]["schemas"]["DayPoint"]
    assert point["properties"]["comments"]["type"] == "integer"
    assert "comments" in point["required"]
    dashboard = schema["paths"]["/v1/projects/{project_id}/dashboard"]["get"]
    assert "DayPoint" in str(dashboard["responses"]["200"]) or "Dashboard" in str(
        dashboard["responses"]["200"]
    )


def test_open_issues_at_the_end_of_each_day_through_a_reopening(api, scenario, pinned):
    with pinned(NOW):
        rollup_project(project_id=scenario.project.pk)
        series = assert_ok(
            api.owner.get(f"/v1/projects/{scenario.project.pk}/dashboard?period=all")
        )["data"]["series"]
    open_at = {point["date"][5:]: point["open_issues"] for point in series}
    # A, B open; F opened 02-13 and closed 02-14; A closed 02-20; C opened 03-01, closed 03-02,
    # reopened 03-05, closed 03-10.
    assert series[0]["date"] == "2026-01-05"
    assert open_at["01-09"] == 0 and open_at["01-10"] == 1
    assert open_at["02-13"] == 3 and open_at["02-14"] == 2 and open_at["02-20"] == 1
    assert open_at["03-01"] == 2 and open_at["03-02"] == 1 and open_at["03-05"] == 2
    assert open_at["03-10"] == 1 and open_at["03-15"] == 2
    assert len(series) == 70  # 01-05 .. 03-15


def test_an_hours_period_covers_the_whole_days_it_touches(api, scenario, pinned):
    with pinned(NOW):
        data = assert_ok(api.owner.get(f"/v1/projects/{scenario.project.pk}/dashboard?period=30h"))[
            "data"
        ]
    assert [point["date"] for point in data["series"]] == ["2026-03-14", "2026-03-15"]
    assert data["from"] == "2026-03-14T00:00:00Z"


EXPECTED_BREAKDOWNS = {
    "status": {"open": (1, 0), "in_progress": (1, 0), "closed": (0, 5)},
    "type": {"bug": (1, 1), "feature": (0, 1), "task": (1, 3)},
    "priority": {"high": (0, 1), "critical": (0, 1), "medium": (2, 3)},
    "label": {"backend": (1, 1), "ui": (1, 1)},
}


def _by_key(entries):
    return {entry["key"]: (entry["open"], entry["closed"]) for entry in entries}


def _check_breakdowns(breakdowns, world, *, skip=()):
    for dimension, expected in EXPECTED_BREAKDOWNS.items():
        if dimension in skip:
            continue
        assert _by_key(breakdowns[dimension]) == expected, dimension
    assignees = {entry["key"]: entry for entry in breakdowns["assignee"]}
    assert (
        assignees[str(world.developer.pk)]["open"],
        assignees[str(world.developer.pk)]["closed"],
    ) == (1, 1)
    assert assignees[str(world.developer.pk)]["label"] == world.developer.name
    assert (assignees[str(world.owner.pk)]["open"], assignees[str(world.owner.pk)]["closed"]) == (
        1,
        0,
    )
    assert (assignees[None]["open"], assignees[None]["closed"], assignees[None]["label"]) == (
        0,
        4,
        "unassigned",
    )
    for entries in breakdowns.values():
        for entry in entries:
            assert entry["total"] == entry["open"] + entry["closed"]


def test_breakdowns_by_hand(api, scenario, pinned, world):
    with pinned(NOW):
        data = assert_ok(api.owner.get(f"/v1/projects/{scenario.project.pk}/dashboard"))["data"]
    _check_breakdowns(data["breakdowns"], world)
    assert data["breakdowns_as_of"] == "2026-03-15T12:00:00Z"


@override_settings(ANALYTICS_LIVE_BREAKDOWN_MAX_ISSUES=3)
def test_large_projects_read_the_stored_breakdowns(api, scenario, pinned, world):
    with pinned(NOW):
        rollup_project(project_id=scenario.project.pk)
    snapshot = BreakdownSnapshot.objects.get(project=scenario.project)
    assert snapshot.computed_at == NOW
    with pinned(NOW.replace(hour=13)):
        make_issue(scenario.project, world.owner, type="bug")
        data = assert_ok(api.owner.get(f"/v1/projects/{scenario.project.pk}/dashboard"))["data"]
    # The snapshot (as of noon) for the groups, live counters for the status.
    _check_breakdowns(data["breakdowns"], world, skip=["status"])
    assert _by_key(data["breakdowns"]["status"])["open"] == (2, 0)
    assert data["breakdowns_as_of"] == "2026-03-15T12:00:00Z"
    # Small again: the snapshot goes, live grouping comes back.
    with override_settings(ANALYTICS_LIVE_BREAKDOWN_MAX_ISSUES=100):
        assert breakdown_refresh(project_id=scenario.project.pk, only_large=True) is None
    assert not BreakdownSnapshot.objects.exists()


def test_workspace_dashboard_sums_the_visible_projects(api, scenario, pinned, world):
    second = ProjectFactory(workspace=world.acme, visibility=Project.Visibility.INTERNAL)
    hidden = ProjectFactory(workspace=world.acme, visibility=Project.Visibility.PRIVATE)
    with pinned(NOW.replace(hour=11)):
        make_issue(second, world.owner, type="bug")
        make_issue(hidden, world.owner, type="bug")
    with pinned(NOW):
        rollup_project(project_id=scenario.project.pk)
        viewer = assert_ok(api.viewer.get(f"/v1/workspaces/{world.acme.pk}/dashboard?period=7d"))
        owner = assert_ok(api.owner.get(f"/v1/workspaces/{world.acme.pk}/dashboard?period=7d"))
    # The viewer sits on the team of the first project and sees the internal one.
    assert viewer["data"]["project_ids"] == [scenario.project.pk, second.pk]
    assert owner["data"]["project_ids"] == [scenario.project.pk, second.pk, hidden.pk]
    expected = dict(
        SEVEN_DAYS, issues_opened=[0, 0, 0, 0, 0, 1, 2], open_issues=[2, 1, 1, 1, 1, 2, 3]
    )
    assert columns(viewer["data"]["series"]) == expected
    assert _by_key(viewer["data"]["breakdowns"]["type"])["bug"] == (2, 1)
    assert _by_key(owner["data"]["breakdowns"]["type"])["bug"] == (3, 1)


def test_workspace_dashboard_outsider_and_errors(api, world):
    assert_error(api.outsider.get(f"/v1/workspaces/{world.acme.pk}/dashboard"), 404, "NOT_FOUND")
    assert_error(api.owner.get("/v1/workspaces/987654321/dashboard"), 404, "NOT_FOUND")
    assert_error(
        api.owner.get(f"/v1/workspaces/{world.acme.pk}/dashboard?period=soon"), 400, "BAD_REQUEST"
    )
    assert_error(
        api.anonymous.get(f"/v1/workspaces/{world.acme.pk}/dashboard"), 401, "UNAUTHORIZED"
    )


def test_dashboard_bad_period(api, world):
    error = assert_error(
        api.owner.get(f"/v1/projects/{world.project.pk}/dashboard?period=30x"), 400, "BAD_REQUEST"
    )
    assert list(error["details"]) == ["period"]


def test_a_project_not_rolled_up_yet_leaves_the_others_on_their_rollups(
    api, scenario, pinned, world
):
    from analytics.models import ProjectDay
    from tests.analytics.conftest import at

    fresh = ProjectFactory(workspace=world.acme, visibility=Project.Visibility.INTERNAL)
    with pinned(at(3, 12, 9)):
        make_issue(fresh, world.owner)
    with pinned(NOW):
        rollup_project(project_id=scenario.project.pk)
    # The stored day is what is read for the rolled-up project: changing it shows.
    ProjectDay.objects.filter(project=scenario.project, day=at(3, 12).date()).update(commits=9)
    with pinned(NOW):
        series = assert_ok(api.owner.get(f"/v1/workspaces/{world.acme.pk}/dashboard?period=7d"))[
            "data"
        ]["series"]
    day = {point["date"]: point for point in series}["2026-03-12"]
    assert (day["commits"], day["issues_opened"], day["pull_requests_merged"]) == (9, 1, 1)
