"""A workspace's own webhooks (``/v1/workspaces/:id/webhooks``): sent every event of the
workspace, its own (invitations, exports, membership) and every project's, and managed by its
owners and admins like a project's. Deliveries go to a real receiver on 127.0.0.1."""

import time

import pytest
from django.core import mail
from django.db import transaction

from events.models import Event
from events.services import event_record
from notifications import fanout, services
from notifications.models import Delivery, Webhook
from projects.models import Project
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import ProjectFactory, WebhookFactory, make_issue

URL = "http://127.0.0.1:9/hooks"
SECRET = "s3cret-value"


def hooks_url(workspace) -> str:
    return f"/v1/workspaces/{workspace.pk}/webhooks"


def register(client, workspace, url=URL, events=("*",), **body):
    payload = {"url": url, "events": list(events), "secret": SECRET, **body}
    return client.post(hooks_url(workspace), payload, format="json")


@pytest.mark.django_db
class TestManaging:
    def test_register_list_get_patch_delete(self, api, world):
        response = register(api.owner, world.acme, events=["export.*", "invitation.created"])
        data = assert_ok(response, 201)["data"]
        assert response["Location"] == f"/v1/webhooks/{data['id']}"
        assert data["workspace_id"] == world.acme.pk and data["project_id"] is None
        assert data["events"] == ["export.*", "invitation.created"] and "secret" not in data
        webhook = Webhook.objects.get(pk=data["id"])
        assert (webhook.workspace_id, webhook.project_id) == (world.acme.pk, None)
        created = Event.objects.get(type="webhook.created")
        assert (created.workspace_id, created.project_id) == (world.acme.pk, None)

        # A project's webhook is not the workspace's.
        WebhookFactory(project=world.project)
        listed = assert_ok(api.owner.get(hooks_url(world.acme)))
        assert [hook["id"] for hook in listed["data"]] == [webhook.pk]
        assert listed["meta"]["total"] == 1

        base = f"/v1/webhooks/{webhook.pk}"
        assert assert_ok(api.admin.get(base))["data"] == data
        changed = assert_ok(api.admin.patch(base, {"events": ["*"]}, format="json"))["data"]
        assert changed["events"] == ["*"] and changed["project_id"] is None
        assert assert_ok(api.owner.post(f"{base}/ping"), 202)["data"]["event_type"] == (
            "webhook.ping"
        )
        assert assert_ok(api.owner.get(f"{base}/deliveries"))["meta"]["total"] == 1
        assert_ok(api.owner.delete(base))
        assert not Webhook.objects.filter(pk=webhook.pk).exists()
        deleted = Event.objects.get(type="webhook.deleted")
        assert (deleted.workspace_id, deleted.project_id) == (world.acme.pk, None)

    def test_a_generated_secret_is_shown_once(self, api, world):
        data = assert_ok(
            api.owner.post(hooks_url(world.acme), {"url": URL, "events": ["*"]}, format="json"),
            201,
        )["data"]
        assert data["secret"].startswith("whsk_")
        assert "secret" not in assert_ok(api.owner.get(f"/v1/webhooks/{data['id']}"))["data"]

    def test_invalid_registration_is_422_and_makes_nothing(self, api, world):
        error = assert_error(
            register(api.owner, world.acme, events=["nope.kind"]), 422, "VALIDATION_ERROR"
        )
        assert "events" in error["details"]
        response = register(api.owner, world.acme, url="ftp://example.test/")
        assert_error(response, 422, "VALIDATION_ERROR")
        assert not Webhook.objects.exists()

    @pytest.mark.parametrize("persona", ["developer", "viewer"])
    def test_only_owners_and_admins_manage_them(self, api, world, persona):
        client = getattr(api, persona)
        assert_error(register(client, world.acme), 403, "FORBIDDEN")
        assert_error(client.get(hooks_url(world.acme)), 403, "FORBIDDEN")
        webhook = WebhookFactory(workspace=world.acme, project=None)
        base = f"/v1/webhooks/{webhook.pk}"
        assert_error(client.get(base), 403, "FORBIDDEN")
        assert_error(client.patch(base, {"active": False}, format="json"), 403, "FORBIDDEN")
        assert_error(client.delete(base), 403, "FORBIDDEN")
        assert_error(client.post(f"{base}/ping"), 403, "FORBIDDEN")
        assert Webhook.objects.get(pk=webhook.pk).is_active

    def test_needs_the_projects_admin_scope(self, world):
        client = client_for(world.owner, scopes=["projects:write", "users:write"])
        error = assert_error(register(client, world.acme), 403, "FORBIDDEN")
        assert error["details"]["required_scope"] == "projects:admin"
        assert not Webhook.objects.exists()

    def test_another_workspace_is_404_everywhere(self, api, world):
        webhook = WebhookFactory(workspace=world.acme, project=None)
        event = Event.objects.create(type="invitation.created", workspace_id=world.acme.pk)
        delivery = Delivery.objects.create(webhook=webhook, event=event)
        assert_error(register(api.outsider, world.acme), 404, "NOT_FOUND")
        assert_error(api.outsider.get(hooks_url(world.acme)), 404, "NOT_FOUND")
        base = f"/v1/webhooks/{webhook.pk}"
        for method, path in [
            ("get", base),
            ("patch", base),
            ("delete", base),
            ("post", f"{base}/ping"),
            ("get", f"{base}/deliveries"),
            ("get", f"{base}/deliveries/{delivery.pk}"),
            ("post", f"{base}/deliveries/{delivery.pk}/redeliver"),
        ]:
            response = getattr(api.outsider, method)(path, {}, format="json")
            assert_error(response, 404, "NOT_FOUND")
        # A workspace that does not exist is the same 404.
        assert_error(api.owner.get("/v1/workspaces/999999999/webhooks"), 404, "NOT_FOUND")
        assert Webhook.objects.get(pk=webhook.pk).is_active

    def test_a_workspace_deleted_takes_its_webhooks(self, world):
        webhook = WebhookFactory(workspace=world.globex, project=None)
        WebhookFactory(project=world.other_project)
        world.globex.delete()
        assert not Webhook.objects.filter(pk=webhook.pk).exists()
        assert not Webhook.objects.filter(workspace_id=world.globex.pk).exists()

    def test_a_project_deleted_leaves_the_workspaces_webhook(self, world):
        webhook = WebhookFactory(workspace=world.acme, project=None)
        WebhookFactory(project=world.project)
        Project.objects.filter(pk=world.project.pk).delete()
        assert list(Webhook.objects.values_list("pk", flat=True)) == [webhook.pk]


def _event(world, kind, project=None):
    with transaction.atomic():
        return event_record(
            type=kind,
            workspace_id=world.acme.pk,
            project_id=project.pk if project else None,
            actor=world.owner,
            data={},
        )


@pytest.mark.django_db
@pytest.mark.parametrize("one_statement", [True, False], ids=["statement", "orm"])
def test_the_fanout_sends_a_workspaces_events_to_its_webhooks(world, one_statement):
    """Both fan-outs: PostgreSQL's single statement (outside a transaction) and the ORM's
    (inside one, and SQLite's always)."""
    everything = WebhookFactory(workspace=world.acme, project=None, events=["*"])
    exports = WebhookFactory(workspace=world.acme, project=None, events=["export.*"])
    on_project = WebhookFactory(project=world.project, events=["*"])
    elsewhere = WebhookFactory(workspace=world.globex, project=None, events=["*"])
    off = WebhookFactory(workspace=world.acme, project=None, events=["*"], is_active=False)
    private = ProjectFactory(workspace=world.acme, visibility=Project.Visibility.PRIVATE)
    events = {
        "export": _event(world, "export.completed"),
        "issue": _event(world, "issue.created", world.project),
        "private": _event(world, "issue.created", private),
        "webhook": _event(world, "webhook.updated"),
    }
    if one_statement:
        fanout._fanout([event.pk for event in events.values()])
    else:
        with transaction.atomic():
            fanout._fanout([event.pk for event in events.values()])
    made = set(Delivery.objects.values_list("webhook_id", "event_id"))
    assert made == {
        (everything.pk, events["export"].pk),
        (everything.pk, events["issue"].pk),
        (everything.pk, events["private"].pk),
        (exports.pk, events["export"].pk),
        (on_project.pk, events["issue"].pk),
    }
    assert elsewhere.pk not in {hook for hook, _event in made}
    assert off.pk not in {hook for hook, _event in made}


@pytest.mark.django_db(transaction=True)
def test_an_invitation_and_an_export_reach_the_workspaces_receiver(api, world, receiver, settings):
    """Through the API and the worker's code, to a real receiver: what a project's webhook
    can never be sent."""
    settings.WEBHOOK_RETRY_BASE_SECONDS = 0
    registered = register(api.owner, world.acme, receiver.url, events=["invitation.*", "export.*"])
    assert_ok(registered, 201)
    project_hook = api.owner.post(
        f"/v1/projects/{world.project.pk}/webhooks",
        {"url": receiver.url, "events": ["*"], "secret": SECRET},
        format="json",
    )
    assert_ok(project_hook, 201)
    invited = api.owner.post(
        f"/v1/workspaces/{world.acme.pk}/invitations",
        {"email": "newcomer@example.test", "role": "developer"},
        format="json",
    )
    assert_ok(invited, 201)
    [request] = receiver.wait_for(1)
    assert request.headers["x-collab-event"] == "invitation.created"
    delivered = Delivery.objects.get()
    assert delivered.webhook.project_id is None

    make_issue(world.project, world.owner, title="Only the project's hook wants this")
    requests = receiver.wait_for(2)
    assert [r.headers["x-collab-event"] for r in requests] == [
        "invitation.created",
        "issue.created",
    ]
    time.sleep(0.3)
    assert len(receiver.requests) == 2


@pytest.mark.django_db(transaction=True)
def test_the_switched_off_email_names_the_workspace(world, settings):
    webhook = WebhookFactory(workspace=world.acme, project=None, is_active=False)
    Webhook.objects.filter(pk=webhook.pk).update(disabled_notify_queued_at=webhook.created_at)
    assert services.webhook_disabled_notify(webhook_id=webhook.pk) == 2
    [message] = mail.outbox
    assert message.subject == f"Webhook disabled on Acme: {webhook.url}"
    assert "of the workspace Acme was switched off" in message.body
