"""A workspace that holds every record type an archive carries, made through the services and
the API as people would make it, with a real repository (tests/gitorigin.py) synced into the
service's mirrors."""

from dataclasses import dataclass

import pytest

from accounts.models import Role
from accounts.services import invitation_create
from comments.services import comment_create, comment_update
from gitintegration.models import PullRequest, Repository
from gitintegration.services import review_create
from issues.models import Issue
from issues.services import issue_delete, issue_update, label_create
from tests.conftest import assert_ok
from tests.factories import WebhookFactory, make_issue


@pytest.fixture(autouse=True)
def git_storage(tmp_path, settings):
    settings.GIT_STORAGE_DIR = tmp_path / "mirrors"
    return settings.GIT_STORAGE_DIR


@dataclass
class Full:
    workspace: object
    project: object
    repository: Repository
    merged: PullRequest
    open: PullRequest


@pytest.fixture
def full(world, api, origin, django_capture_on_commit_callbacks) -> Full:
    """The world's Acme workspace with issues (one deleted, one closed by a merged pull
    request's closing keyword), labels, comments with mentions and an edit, a repository with
    a merged and an open pull request and a review, a webhook and a pending invitation."""
    capture = django_capture_on_commit_callbacks
    project = world.project
    label_create(project=project, actor=world.owner, name="bug", color="#ff0000")
    label_create(project=project, actor=world.owner, name="ux")
    crash = make_issue(project, world.owner, title="Crash on start", labels=["bug"])
    assigned = make_issue(project, world.developer, title="Slow list", description="See #1.")
    gone = make_issue(project, world.owner, title="A mistake")
    with capture(execute=True):
        issue_update(
            issue=Issue.objects.get(pk=assigned.pk),
            actor=world.owner,
            assignee_id=world.developer.pk,
            labels=["ux", "bug"],
            priority="high",
        )
        issue_delete(issue=Issue.objects.get(pk=gone.pk), actor=world.owner)
        comment = comment_create(
            parent=Issue.objects.get(pk=crash.pk),
            actor=world.developer,
            body="I see it too, @owner. Steps in #2.",
        )
        comment_update(
            comment=comment_model(comment["id"]),
            actor=world.developer,
            body="I see it too, @owner. Steps in #2; **only** on Linux.",
        )
    with capture(execute=True):
        response = api.owner.post(
            f"/v1/projects/{project.pk}/repositories",
            {"name": "rocket", "clone_url": origin.url},
            format="json",
        )
    repository = Repository.objects.get(pk=assert_ok(response, 201)["data"]["id"])
    pulls = f"/v1/repositories/{repository.pk}/pulls"
    merged = assert_ok(
        api.developer.post(
            pulls,
            {"title": "The feature", "head": "feature", "base": "main", "description": "Fixes #1"},
            format="json",
        ),
        201,
    )["data"]
    with capture(execute=True):
        assert_ok(
            api.owner.post(f"/v1/pulls/{merged['id']}/merge", {"method": "merge"}, format="json")
        )
    opened = assert_ok(
        api.developer.post(
            pulls, {"title": "The docs", "head": "docs", "base": "main"}, format="json"
        ),
        201,
    )["data"]
    open_pull = PullRequest.objects.get(pk=opened["id"])
    review_create(pull=open_pull, actor=world.owner, state="approved", body="Good.")
    with capture(execute=True):
        comment_create(parent=open_pull, actor=world.owner, body="Thanks @dev!")
    WebhookFactory(project=project, created_by=world.owner, events=["issue.created"])
    with capture(execute=True):
        invitation_create(
            workspace=world.acme,
            inviter=world.owner,
            email="newcomer@example.test",
            role=Role.DEVELOPER,
            projects=[project],
        )
    return Full(
        world.acme, project, repository, PullRequest.objects.get(pk=merged["id"]), open_pull
    )


def comment_model(pk):
    from comments.models import Comment

    return Comment.objects.get(pk=pk)


@pytest.fixture(autouse=True)
def _exports_here(exports_storage):
    """Every test of exports keeps its archives in a folder of its own."""
    return exports_storage
