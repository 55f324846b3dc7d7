"""Every git list costs the same number of queries for a page of 5 as for a page of 50."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from gitintegration.models import Branch, Commit, PullRequest, Repository, Review
from gitintegration.services import repository_sync
from tests.gitorigin import git


def queries(client, path: str, per_page: int) -> tuple[int, list[str]]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(f"{path}{'&' if '?' in path else '?'}per_page={per_page}")
    assert response.status_code == 200, response.content
    assert len(response.json()["data"]) == per_page
    return len(captured), [q["sql"] for q in captured.captured_queries]


def assert_constant(client, path: str) -> None:
    # The key's first use of the minute writes last_used_at: out of the measured requests.
    client.get(path)
    small, small_sql = queries(client, path, 5)
    large, large_sql = queries(client, path, 50)
    assert small == large, "\n".join([*small_sql, "", *large_sql])


@pytest.fixture
def many(world, synced, origin):
    now = timezone.now()
    for n in range(55):
        Repository.objects.create(project=world.project, name=f"r{n}", clone_url=origin.url)
        Branch.objects.create(repository=synced, name=f"b{n:02}", commit_sha="0" * 40)
        PullRequest.objects.create(
            repository=synced,
            number=n + 1,
            title=f"P{n}",
            head=f"b{n:02}",
            base="main",
            author=world.developer,
            state="closed",
        )
        Commit.objects.create(
            repository=synced,
            sha=f"{n:040x}",
            authored_at=now,
            committed_at=now,
            message="m",
        )
    pull = PullRequest.objects.first()
    for n in range(55):
        Review.objects.create(pull_request=pull, author=world.owner, state="commented", body=str(n))
    return synced, pull


@pytest.mark.parametrize(
    "path",
    [
        "/v1/projects/{project}/repositories",
        "/v1/repositories/{repository}/branches",
        "/v1/repositories/{repository}/commits",
        "/v1/repositories/{repository}/pulls",
        "/v1/repositories/{repository}/pulls?state=closed",
        "/v1/pulls/{pull}/reviews",
    ],
)
def test_lists_cost_constant_queries(api, world, many, path):
    repository, pull = many
    path = path.format(project=world.project.pk, repository=repository.pk, pull=pull.pk)
    assert_constant(api.viewer, path)


def test_a_branch_history_costs_constant_queries(api, synced, origin):
    for n in range(55):
        origin.commit("feature", {"n.txt": f"{n}\n"}, f"Commit {n}")
    repository_sync(repository_id=synced.pk)
    assert_constant(api.viewer, f"/v1/repositories/{synced.pk}/commits?branch=feature")
    assert git("rev-list", "--count", "feature", cwd=origin.path) == "58"
