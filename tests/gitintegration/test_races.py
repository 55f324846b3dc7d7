"""Repositories and pull requests deleted while rows are written under them
(docs/guide/envelope-and-errors.md, "Races are answered like any other input"): a project
deleted while a repository is registered, a repository deleted (itself or with its project)
while its sync writes branches and commits, a pull request deleted with its repository while it
is reviewed or commented on. The deletion succeeds; the write is done, answers 404, or (the
sync, a worker) stops quietly; never a 500, never an orphan."""

import pytest

from comments.models import Comment
from gitintegration import services
from gitintegration.models import Branch, Commit, PullRequest, Repository, Review
from tests.conftest import assert_error, assert_ok
from tests.factories import PullRequestFactory, RepositoryFactory
from tests.gitintegration.conftest import register
from tests.races import MOMENTS, postgresql_only, race

pytestmark = [postgresql_only, pytest.mark.django_db(transaction=True)]


def assert_created_or_gone(response) -> None:
    if response.status_code == 404:
        assert_error(response, 404, "NOT_FOUND")
    else:
        assert_ok(response, 201)


@pytest.mark.parametrize("moment", MOMENTS)
def test_a_project_deleted_while_a_repository_is_registered(
    api, world, origin, monkeypatch, moment
):
    project = world.project

    deleted, written = race(
        monkeypatch,
        delete=lambda: api.owner.delete(f"/v1/projects/{project.pk}"),
        write=lambda: register(api.owner, project, origin.url),
        moment=moment,
    )

    assert_ok(deleted.result())
    assert_created_or_gone(written.result())
    assert not Repository.objects.filter(project_id=project.pk).exists()


@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("deleted_with", ["repository", "project"])
def test_a_repository_deleted_while_its_sync_writes(
    api, world, origin, monkeypatch, moment, deleted_with
):
    repository = Repository.objects.create(
        project=world.project, name="rocket", clone_url=origin.url, created_by=world.owner
    )
    path = (
        f"/v1/repositories/{repository.pk}"
        if deleted_with == "repository"
        else f"/v1/projects/{world.project.pk}"
    )

    deleted, written = race(
        monkeypatch,
        delete=lambda: api.owner.delete(path),
        write=lambda: services.repository_sync(repository_id=repository.pk),
        moment=moment,
    )

    assert_ok(deleted.result())
    written.result()  # the worker's sync stops quietly
    assert not Repository.objects.filter(pk=repository.pk).exists()
    assert not Branch.objects.filter(repository_id=repository.pk).exists()
    assert not Commit.objects.filter(repository_id=repository.pk).exists()


@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("child", ["reviews", "comments"])
def test_a_pull_request_deleted_while_it_is_reviewed(api, world, monkeypatch, moment, child):
    """No endpoint deletes a pull request alone: it goes with its repository."""
    repository = RepositoryFactory(project=world.project)
    pull = PullRequestFactory(repository=repository, author=world.developer)
    body = {"state": "approved", "body": "Ship it."} if child == "reviews" else {"body": "Nice."}

    deleted, written = race(
        monkeypatch,
        delete=lambda: api.owner.delete(f"/v1/repositories/{repository.pk}"),
        write=lambda: api.owner.post(f"/v1/pulls/{pull.pk}/{child}", body, format="json"),
        moment=moment,
    )

    assert_ok(deleted.result())
    assert_created_or_gone(written.result())
    assert not PullRequest.objects.filter(pk=pull.pk).exists()
    assert not Review.objects.filter(pull_request_id=pull.pk).exists()
    assert not Comment.objects.filter(pull_request_id=pull.pk).exists()
