"""A project, or a workspace, deleted while rows are written under it
(docs/guide/envelope-and-errors.md, "Races are answered like any other input"): the deletion
succeeds, the write is done or answers 404, never a 500, never an orphan."""

import pytest

from accounts.models import Membership, Role, Workspace
from accounts.services import membership_add
from issues.models import Issue
from notifications.models import Webhook
from projects.models import Project
from tests.conftest import assert_error, assert_ok
from tests.factories import UserFactory
from tests.races import MOMENTS, assert_lost_to_the_deletion, postgresql_only, race

pytestmark = pytest.mark.django_db(transaction=True)


def assert_created_or_gone(response) -> None:
    if response.status_code == 404:
        assert_error(response, 404, "NOT_FOUND")
    else:
        assert_ok(response, 201)


@postgresql_only
@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("child", ["issues", "webhooks"])
def test_a_project_deleted_while_a_child_is_created(api, world, monkeypatch, moment, child):
    project = world.project
    body = (
        {"title": "Login fails"}
        if child == "issues"
        else {"url": "http://127.0.0.1:9/hooks", "events": ["*"], "secret": "s3cret-value"}
    )

    deleted, written = race(
        monkeypatch,
        delete=lambda: api.owner.delete(f"/v1/projects/{project.pk}"),
        write=lambda: api.owner.post(f"/v1/projects/{project.pk}/{child}", body, format="json"),
        moment=moment,
    )

    assert_ok(deleted.result())
    assert_created_or_gone(written.result())
    assert not Project.objects.filter(pk=project.pk).exists()
    assert not Issue.objects.filter(project_id=project.pk).exists()
    assert not Webhook.objects.filter(project_id=project.pk).exists()


@postgresql_only
@pytest.mark.parametrize("moment", MOMENTS)
def test_a_workspace_deleted_while_a_member_is_added(world, monkeypatch, moment):
    """No endpoint deletes a workspace; the admin (and the shell) do, in a transaction."""
    from django.db import transaction

    workspace = world.acme
    newcomer = UserFactory()

    def delete():
        with transaction.atomic():
            return Workspace.objects.get(pk=workspace.pk).delete()

    deleted, written = race(
        monkeypatch,
        delete=delete,
        write=lambda: membership_add(
            workspace=Workspace.objects.get(pk=workspace.pk),
            user=newcomer,
            role=Role.DEVELOPER,
            actor=world.owner,
        ),
        moment=moment,
    )

    deleted.result()
    assert_lost_to_the_deletion(written)
    assert not Workspace.objects.filter(pk=workspace.pk).exists()
    assert not Membership.objects.filter(workspace_id=workspace.pk).exists()


def test_an_issue_created_in_a_project_deleted_meanwhile_is_404(api, world, monkeypatch):
    """The writer's side, on SQLite as on PostgreSQL: the project is deleted after the view
    found it; the issue's commit fails on the foreign key and answers 404."""
    from issues import services

    real_create = services.issue_create

    def create_after_the_deletion(*, project, **kwargs):
        Project.objects.filter(pk=project.pk).delete()
        return real_create(project=project, **kwargs)

    monkeypatch.setattr(services, "issue_create", create_after_the_deletion)
    response = api.owner.post(
        f"/v1/projects/{world.project.pk}/issues", {"title": "Login fails"}, format="json"
    )

    assert_error(response, 404, "NOT_FOUND")
    assert not Issue.objects.exists()
