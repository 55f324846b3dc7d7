"""The swept world: one of every record a route's path can name, for the sweeps over every
route (test_methods.py, test_hostile_input.py)."""

import pytest

from accounts.services import invitation_create
from comments.services import comment_create
from events.services import event_record
from notifications.models import Delivery
from tests.factories import (
    PullRequestFactory,
    RepositoryFactory,
    WebhookFactory,
    completed_export,
    make_api_key,
    make_issue,
)


@pytest.fixture
def swept(world, exports_storage):
    """The world, with one of every record a route's path can name."""
    issue = make_issue(world.project, actor=world.owner, title="Swept issue", labels=["bug"])
    label = issue.labels.get()
    webhook = WebhookFactory(project=world.project, created_by=world.owner)
    event = event_record(
        type="webhook.ping",
        workspace_id=world.acme.pk,
        project_id=world.project.pk,
        data={"webhook": {"id": webhook.pk}},
    )
    delivery = Delivery.objects.create(webhook=webhook, event=event)
    repository = RepositoryFactory(project=world.project)
    pull = PullRequestFactory(repository=repository, author=world.developer)
    comment = comment_create(parent=issue, actor=world.owner, body="A swept comment")
    invitation, _ = invitation_create(
        workspace=world.acme,
        inviter=world.owner,
        email="pending@example.test",
        role="viewer",
        projects=[],
    )
    key_id = world.owner.api_keys.order_by("pk").values_list("pk", flat=True).first()
    if key_id is None:
        make_api_key(world.owner, ["users:read"], name="listed")
        key_id = world.owner.api_keys.get().pk
    export = completed_export(world.acme, world.owner)
    ids = {
        "export": export.pk,
        "project": world.project.pk,
        "admin": world.admin.pk,
        "issue": issue.pk,
        "label": label.pk,
        "webhook": webhook.pk,
        "delivery": delivery.pk,
        "repository": repository.pk,
        "pull": pull.pk,
        "comment": comment["id"],
        "workspace": world.acme.pk,
        "invitation": invitation.pk,
        "user": world.developer.pk,
        "api-key": key_id,
    }
    return world, ids
