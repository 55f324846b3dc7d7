"""Webhook registration and management over HTTP: records, validation, permissions."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from events.models import Event
from notifications import crypto
from notifications.models import Delivery, Webhook
from projects.models import Project
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import WebhookFactory

URL = "http://127.0.0.1:9/hooks"


def hooks_url(project) -> str:
    return f"/v1/projects/{project.pk}/webhooks"


def register(client, project, **body):
    payload = {"url": URL, "events": ["issue.created"], "secret": "s3cret-value", **body}
    return client.post(hooks_url(project), payload, format="json")


def test_register_answers_the_webhook_without_its_secret(api, world):
    response = register(api.owner, world.project, events=["issue.created", "pull_request.*"])
    body = assert_ok(response, 201)
    data = body["data"]
    assert response["Location"] == f"/v1/webhooks/{data['id']}"
    assert data["url"] == URL
    assert data["events"] == ["issue.created", "pull_request.*"]
    assert data["active"] is True
    assert data["project_id"] == world.project.pk
    assert "secret" not in data and "secret_encrypted" not in data
    webhook = Webhook.objects.get(pk=data["id"])
    # Encrypted at rest, and only the service can read it back.
    assert "s3cret-value" not in webhook.secret_encrypted
    assert crypto.secret_decrypt(webhook.secret_encrypted) == "s3cret-value"
    event = Event.objects.get(type="webhook.created")
    assert event.data["webhook"]["id"] == webhook.pk
    assert "s3cret" not in str(event.data)


def test_a_generated_secret_is_shown_once(api, world):
    response = api.owner.post(
        hooks_url(world.project), {"url": URL, "events": ["*"]}, format="json"
    )
    data = assert_ok(response, 201)["data"]
    assert data["secret"].startswith("whsk_") and len(data["secret"]) > 30
    webhook = Webhook.objects.get(pk=data["id"])
    assert crypto.secret_decrypt(webhook.secret_encrypted) == data["secret"]
    again = assert_ok(api.owner.get(f"/v1/webhooks/{webhook.pk}"))["data"]
    assert "secret" not in again


@pytest.mark.parametrize(
    "body, field",
    [
        ({"events": ["issue.exploded"]}, "events"),
        ({"events": ["nope.*"]}, "events"),
        ({"events": []}, "events"),
        ({"events": "issue.created"}, "events"),
        ({"url": "ftp://example.com/x"}, "url"),
        ({"url": "not a url"}, "url"),
        ({"url": "http://user:pw@127.0.0.1/x"}, "url"),
        ({"secret": "short"}, "secret"),
        ({"url": None}, "url"),
    ],
)
def test_invalid_registration_is_422(api, world, body, field):
    error = assert_error(register(api.owner, world.project, **body), 422, "VALIDATION_ERROR")
    assert field in error["details"]
    assert not Webhook.objects.exists()


def test_missing_fields_are_422(api, world):
    error = assert_error(
        api.owner.post(hooks_url(world.project), {}, format="json"), 422, "VALIDATION_ERROR"
    )
    assert set(error["details"]) == {"url", "events"}


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",  # a name that resolves to loopback
        "http://10.0.0.5/hook",
        "http://192.168.1.1/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
        "http://no-such-host.invalid/hook",
    ],
)
def test_private_addresses_are_refused_at_registration(api, world, settings, url):
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    error = assert_error(register(api.owner, world.project, url=url), 422, "VALIDATION_ERROR")
    assert "url" in error["details"]
    assert not Webhook.objects.exists()


@pytest.mark.parametrize("what", ["webhook", "project"])
def test_a_webhook_with_redeliveries_can_be_deleted(api, world, what):
    webhook = WebhookFactory(project=world.project)
    event = Event.objects.create(
        type="webhook.ping", workspace_id=world.acme.pk, project_id=world.project.pk
    )
    original = Delivery.objects.create(webhook=webhook, event=event)
    again = Delivery.objects.create(webhook=webhook, event=event, redelivery_of=original)
    Delivery.objects.create(webhook=webhook, event=event, redelivery_of=again)
    path = f"/v1/webhooks/{webhook.pk}" if what == "webhook" else f"/v1/projects/{world.project.pk}"
    assert_ok(api.owner.delete(path))
    assert not Delivery.objects.filter(webhook_id=webhook.pk).exists()


def test_private_addresses_are_allowed_when_configured(api, world, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    assert_ok(register(api.owner, world.project, url="http://localhost:9/x"), 201)


def test_list_get_patch_delete(api, world):
    first = assert_ok(register(api.owner, world.project), 201)["data"]
    assert_ok(register(api.owner, world.project, events=["*"]), 201)
    body = assert_ok(api.owner.get(hooks_url(world.project)))
    assert [hook["id"] for hook in body["data"]][0] == first["id"]
    assert body["meta"]["total"] == 2

    url = f"/v1/webhooks/{first['id']}"
    patched = assert_ok(
        api.owner.patch(url, {"events": ["issue.*"], "active": False}, format="json")
    )["data"]
    assert patched["events"] == ["issue.*"] and patched["active"] is False
    event = Event.objects.filter(type="webhook.updated").get()
    assert event.changes["events"] == {"previous": ["issue.created"], "current": ["issue.*"]}

    assert_ok(api.owner.patch(url, {"secret": "another-secret"}, format="json"))
    webhook = Webhook.objects.get(pk=first["id"])
    assert crypto.secret_decrypt(webhook.secret_encrypted) == "another-secret"
    secret_event = Event.objects.filter(type="webhook.updated").last()
    assert "another-secret" not in str(secret_event.changes)

    body = assert_ok(api.owner.delete(url))
    assert body["data"] is None
    assert not Webhook.objects.filter(pk=first["id"]).exists()
    assert Event.objects.filter(type="webhook.deleted").count() == 1
    assert_error(api.owner.get(url), 404, "NOT_FOUND")


def test_switching_back_on_forgets_the_failures(api, world):
    webhook = WebhookFactory(
        project=world.project, is_active=False, disabled_reason="failing", failing_since=None
    )
    data = assert_ok(
        api.owner.patch(f"/v1/webhooks/{webhook.pk}", {"active": True}, format="json")
    )["data"]
    assert data["active"] is True and data["disabled_reason"] is None


def test_read_only_fields_change_nothing(api, world):
    webhook = WebhookFactory(project=world.project)
    body = {"id": 999, "project_id": world.other_project.pk, "created_at": "2000-01-01T00:00:00Z"}
    assert_ok(api.owner.patch(f"/v1/webhooks/{webhook.pk}", body, format="json"))
    webhook.refresh_from_db()
    assert webhook.project_id == world.project.pk
    assert webhook.created_at.year != 2000


@pytest.mark.parametrize("persona", ["developer", "viewer"])
def test_only_owners_and_admins_manage_webhooks(api, world, persona):
    client = getattr(api, persona)
    assert_error(register(client, world.project), 403, "FORBIDDEN")
    webhook = WebhookFactory(project=world.project)
    assert_error(client.get(hooks_url(world.project)), 403, "FORBIDDEN")
    assert_error(client.get(f"/v1/webhooks/{webhook.pk}"), 403, "FORBIDDEN")
    assert_error(client.delete(f"/v1/webhooks/{webhook.pk}"), 403, "FORBIDDEN")


def test_admin_manages_webhooks(api, world):
    assert_ok(register(api.admin, world.project), 201)


def test_needs_projects_admin_scope(world):
    client = client_for(world.owner, scopes=["projects:write", "issues:admin"])
    error = assert_error(register(client, world.project), 403, "FORBIDDEN")
    assert error["details"]["required_scope"] == "projects:admin"


def test_outsider_gets_404_everywhere(api, world):
    webhook = WebhookFactory(project=world.project)
    delivery = Delivery.objects.create(
        webhook=webhook, event=Event.objects.create(type="issue.created", workspace_id=1)
    )
    assert_error(register(api.outsider, world.project), 404, "NOT_FOUND")
    assert_error(api.outsider.get(hooks_url(world.project)), 404, "NOT_FOUND")
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
    assert Webhook.objects.get(pk=webhook.pk).is_active


def test_unauthenticated_is_401(api, world):
    response = register(api.anonymous, world.project)
    assert_error(response, 401, "UNAUTHORIZED")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_archived_project_refuses_registration(api, world):
    Project.objects.filter(pk=world.project.pk).update(status=Project.Status.ARCHIVED)
    assert_error(register(api.owner, world.project), 409, "CONFLICT")


def test_a_delivery_of_another_webhook_is_404(api, world):
    mine = WebhookFactory(project=world.project)
    theirs = WebhookFactory(project=world.project)
    event = Event.objects.create(type="issue.created", workspace_id=world.acme.pk)
    delivery = Delivery.objects.create(webhook=theirs, event=event)
    assert_error(
        api.owner.get(f"/v1/webhooks/{mine.pk}/deliveries/{delivery.pk}"), 404, "NOT_FOUND"
    )


def test_deliveries_list_costs_the_same_queries_whatever_its_size(api, world):
    webhook = WebhookFactory(project=world.project)

    def count_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert_ok(api.owner.get(f"/v1/webhooks/{webhook.pk}/deliveries?per_page=100"))
        return len(queries)

    count_queries()  # the key's first use records last_used_at
    for _ in range(2):
        event = Event.objects.create(type="issue.created", workspace_id=world.acme.pk)
        Delivery.objects.create(webhook=webhook, event=event)
    small = count_queries()
    for _ in range(30):
        event = Event.objects.create(type="issue.created", workspace_id=world.acme.pk)
        Delivery.objects.create(webhook=webhook, event=event)
    assert count_queries() == small


def test_deliveries_filter_by_status(api, world):
    webhook = WebhookFactory(project=world.project)
    event = Event.objects.create(type="issue.created", workspace_id=world.acme.pk)
    Delivery.objects.create(webhook=webhook, event=event, status=Delivery.Status.FAILED)
    other = Event.objects.create(type="issue.updated", workspace_id=world.acme.pk)
    Delivery.objects.create(webhook=webhook, event=other)
    url = f"/v1/webhooks/{webhook.pk}/deliveries"
    failed = assert_ok(api.owner.get(f"{url}?status=failed"))["data"]
    assert [d["event_type"] for d in failed] == ["issue.created"]
    assert_error(api.owner.get(f"{url}?status=exploded"), 400, "BAD_REQUEST")


def test_event_kinds_catalogue(api):
    kinds = assert_ok(api.owner.get("/v1/events/kinds"))["data"]
    names = {kind["type"] for kind in kinds}
    assert {"issue.created", "pull_request.merged", "webhook.ping"} <= names
    assert all(kind["emitted_by"] and kind["data"] for kind in kinds)
