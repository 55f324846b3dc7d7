"""Metrics and dashboards answer in a fixed number of queries: the caller's key, the project
(or the workspace's projects) with what the figures need to know of it, and one statement for
the figures and the breakdowns, whatever the number of issues, events, days, projects and
how far each project's rollups go.

``BUDGET`` holds every query of the request after the key's first use (which records the use,
once a minute). The exact counts leave out the rate limiter's counter, which is in the
database only without Redis and the same for every request (tests/issues/test_query_counts.py
does the same).
"""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from analytics.services import rollup_project
from comments.services import comment_create
from issues.services import issue_update
from projects.models import Project
from tests.analytics.conftest import NOW, at
from tests.conftest import client_for
from tests.factories import (
    CommitFactory,
    MembershipFactory,
    ProjectFactory,
    PullRequestFactory,
    RepositoryFactory,
    WorkspaceFactory,
    make_issue,
)

BUDGET = 4
# The key with its user; the project(s) with the reader's role and team seat, rollup state,
# issue counters and snapshot; the figures (and breakdowns) in one UNION ALL.
QUERIES = 3

PATHS = [
    "projects/{project}/metrics?period=30d",
    "projects/{project}/metrics?period=12h",  # starts inside a stored day
    "projects/{project}/metrics?period=1d",  # this month's commits read apart
    "projects/{project}/metrics?period=all",
    "projects/{project}/dashboard?period=30d",
    "projects/{project}/dashboard?period=all",
    "workspaces/{workspace}/dashboard?period=30d",
    "workspaces/{workspace}/dashboard?period=all",
]


def counted(client, path: str) -> tuple[int, list[str]]:
    """Every query of the request, and those of the request's own work."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    assert response.status_code == 200, response.content
    queries = [query["sql"] for query in captured.captured_queries]
    return len(queries), [sql for sql in queries if "ratelimitcounter" not in sql]


class Activity:
    """Issues (labelled, assigned, closed, one reopened), comments, commits and pull requests
    in a project, ``per_day`` of each on every one of the ``days`` days before today."""

    def __init__(self, world, pinned):
        self.world, self.pinned = world, pinned
        self.repositories: dict[int, object] = {}
        self.numbers = 0

    def add(self, project, *, days: int, per_day: int) -> None:
        world = self.world
        repository = self.repositories.get(project.pk)
        if repository is None:
            repository = self.repositories[project.pk] = RepositoryFactory(project=project)
        for back in range(days, 0, -1):
            day = NOW - timedelta(days=back)
            for n in range(per_day):
                with self.pinned(day + timedelta(minutes=n)):
                    issue = make_issue(
                        project,
                        world.owner,
                        type=("bug", "task", "feature")[n % 3],
                        # People who see every project of the workspace.
                        assignee_id=(None, world.admin.pk, world.owner.pk)[n % 3],
                        labels=[f"label-{n % 4}", f"day-{back % 5}"],
                    )
                    comment_create(parent=issue, actor=world.developer, body="Seen.")
                if n % 2:
                    with self.pinned(day + timedelta(hours=2, minutes=n)):
                        issue = issue_update(issue=issue, actor=world.owner, status="closed")[0]
                if n % 4 == 3:
                    with self.pinned(day + timedelta(hours=3, minutes=n)):
                        issue_update(issue=issue, actor=world.owner, status="open")
                CommitFactory(repository=repository, authored_at=day + timedelta(minutes=n))
                self.numbers += 1
                PullRequestFactory(
                    repository=repository,
                    number=self.numbers,
                    created_at=day,
                    state="merged",
                    merged_at=day + timedelta(hours=5),
                    closed_at=day + timedelta(hours=5),
                )

    def today(self, project, *, count: int) -> None:
        """Activity of the last minutes: after any rollup, so counted live."""
        for n in range(count):
            with self.pinned(NOW - timedelta(minutes=2)):
                issue = make_issue(project, self.world.owner, labels=["today"])
                issue_update(issue=issue, actor=self.world.owner, status="closed")
                comment_create(parent=issue, actor=self.world.owner, body="Done.")
            CommitFactory(
                repository=self.repositories[project.pk],
                authored_at=NOW - timedelta(minutes=1, seconds=n),
            )


@pytest.fixture
def projects(world):
    """The world's project (the viewer's team) and two more in Acme: an internal one the
    viewer sees, and a private one only the owner and admin see."""
    internal = ProjectFactory(workspace=world.acme, visibility=Project.Visibility.INTERNAL)
    private = ProjectFactory(workspace=world.acme, visibility=Project.Visibility.PRIVATE)
    return [world.project, internal, private]


def roll_up(projects, pinned) -> None:
    """Each project as far as the rollup job left it, all differently: stored up to a few
    minutes ago, stored up to late yesterday, never stored."""
    first, second, _never = projects
    with pinned(NOW - timedelta(minutes=10)):
        rollup_project(project_id=first.pk)
    with pinned(at(3, 14, 23, 30)):
        rollup_project(project_id=second.pk)


def counts(world, projects) -> dict[tuple[str, str], tuple[int, list[str]]]:
    found = {}
    for persona in ("owner", "viewer"):
        client = client_for(getattr(world, persona))
        for template in PATHS:
            path = "/v1/" + template.format(project=projects[0].pk, workspace=world.acme.pk)
            client.get(path)  # the key's first use is recorded once
            found[persona, path] = counted(client, path)
    return found


def assert_budget(found) -> None:
    for (persona, path), (everything, own) in found.items():
        assert everything <= BUDGET, (persona, path, own)
        assert len(own) == QUERIES, "\n".join([persona, path, *own])


def test_metrics_and_dashboards_cost_the_same_queries_whatever_the_data(world, pinned, projects):
    activity = Activity(world, pinned)
    for project in projects:
        activity.add(project, days=2, per_day=1)
        activity.today(project, count=1)
    roll_up(projects, pinned)
    with pinned(NOW):
        few = counts(world, projects)
    assert_budget(few)

    for project in projects:
        activity.add(project, days=12, per_day=4)
        activity.today(project, count=3)
    roll_up(projects, pinned)
    with pinned(NOW):
        many = counts(world, projects)
    assert_budget(many)
    assert {key: len(own) for key, (_n, own) in many.items()} == {
        key: len(own) for key, (_n, own) in few.items()
    }


def test_large_projects_read_their_snapshots_in_the_same_statement(
    world, pinned, projects, settings
):
    """Past the live limit, a project's breakdowns come from its snapshot; one not stored yet
    is grouped live: neither costs a query of its own."""
    activity = Activity(world, pinned)
    for project in projects:
        activity.add(project, days=3, per_day=2)
    settings.ANALYTICS_LIVE_BREAKDOWN_MAX_ISSUES = 4
    first, second, _private = projects
    roll_up(projects, pinned)  # the first two get a snapshot, the third none
    assert_budget(counts(world, projects))


@pytest.mark.parametrize("has_projects", [False, True])
def test_a_workspace_without_a_visible_project(world, has_projects):
    """Its dashboard is empty, read without a statement for the figures; when the workspace
    shows no project at all, one query tells a member from a stranger (who gets a 404)."""
    empty = WorkspaceFactory()
    MembershipFactory(workspace=empty, user=world.viewer)
    if has_projects:
        ProjectFactory(workspace=empty, visibility=Project.Visibility.PRIVATE)
    path = f"/v1/workspaces/{empty.pk}/dashboard"
    for user, status in ((world.viewer, 200), (world.outsider, 404)):
        client = client_for(user)
        client.get(path)
        with CaptureQueriesContext(connection) as captured:
            response = client.get(path)
        assert response.status_code == status, response.content
        own = [q["sql"] for q in captured.captured_queries if "ratelimitcounter" not in q["sql"]]
        assert len(captured) <= BUDGET and len(own) == (2 if has_projects else 3), own
        if status == 200:
            assert response.json()["data"]["project_ids"] == []


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's parallel workers")
def test_metrics_and_dashboards_are_planned_without_parallel_workers(world, projects):
    """Their statement reads stored days and the rows written since the last rollup: a
    parallel worker would cost more to start than it could read (one was planned for a
    branch that read no row, on a project of a million issues). Every request's statement of
    its figures says so to the planner, in its own query string."""
    client = client_for(world.owner)
    for template in PATHS:
        path = "/v1/" + template.format(project=projects[0].pk, workspace=world.acme.pk)
        _count, own = counted(client, path)
        [figures] = [sql for sql in own if "UNION ALL" in sql]
        assert figures.startswith("SET LOCAL max_parallel_workers_per_gather = '0'; "), path
