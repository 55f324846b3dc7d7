"""Delivery mechanics against a real HTTP receiver on 127.0.0.1, tasks run in-process.

The real worker, the broker outage and the killed worker are in test_worker.py.
"""

import base64
import hashlib
import hmac
import http.server
import importlib
import threading
import time
from datetime import timedelta

import pytest
from celery import current_app
from cryptography.fernet import InvalidToken
from django.apps import apps
from django.core import mail
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone
from standardwebhooks import Webhook as StandardWebhook

from events.models import Event
from issues.models import Issue
from notifications import delivery as engine
from notifications import dispatch, fanout, services, sweep, tasks
from notifications.models import Delivery, DeliveryAttempt, Webhook
from tests.conftest import assert_error, assert_ok
from tests.factories import make_issue
from tests.liveserver import serve_in_thread
from tests.notifications.receiver import start_receiver

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "s3cret-value"


@pytest.fixture(autouse=True)
def quick_retries(settings):
    settings.WEBHOOK_RETRY_BASE_SECONDS = 0
    settings.WEBHOOK_MAX_ATTEMPTS = 4


def register(api, project, url, events=("*",)) -> Webhook:
    body = {"url": url, "events": list(events), "secret": SECRET}
    data = assert_ok(
        api.owner.post(f"/v1/projects/{project.pk}/webhooks", body, format="json"), 201
    )
    return Webhook.objects.get(pk=data["data"]["id"])


def create_issue(api, project, title="Login fails") -> dict:
    body = {"title": title, "type": "bug", "priority": "high"}
    return assert_ok(api.owner.post(f"/v1/projects/{project.pk}/issues", body, format="json"), 201)[
        "data"
    ]


def verify_both_signatures(request) -> dict:
    """The reference Standard Webhooks verifier and a hex HMAC, both over the raw body."""
    verifier = StandardWebhook("whsec_" + base64.b64encode(SECRET.encode()).decode())
    payload = verifier.verify(request.body, request.headers)
    expected = "sha256=" + hmac.new(SECRET.encode(), request.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(request.headers["x-collab-signature-256"], expected)
    return payload


def test_an_issue_created_is_delivered_signed(api, world, receiver):
    register(api, world.project, receiver.url, events=["issue.created"])
    issue = create_issue(api, world.project)

    [request] = receiver.wait_for(1)
    payload = verify_both_signatures(request)
    assert request.path == "/hooks"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-collab-event"] == "issue.created"
    assert request.headers["x-collab-attempt"] == "1"
    delivery = Delivery.objects.get()
    assert request.headers["x-collab-delivery"] == str(delivery.uuid)
    assert request.headers["webhook-id"] == str(delivery.uuid)
    assert abs(int(request.headers["webhook-timestamp"]) - time.time()) < 60

    event = Event.objects.get(type="issue.created")
    assert payload == event.as_payload()
    assert set(payload) == {
        "id",
        "type",
        "created_at",
        "workspace_id",
        "project_id",
        "actor_id",
        "actor",
        "data",
    }
    assert payload["actor"]["kind"] == "person"
    assert payload["actor"]["via"]["credential"] == "api_key"
    assert payload["data"]["issue"]["id"] == issue["id"]
    assert payload["project_id"] == world.project.pk

    assert delivery.status == Delivery.Status.SUCCEEDED
    [attempt] = DeliveryAttempt.objects.filter(delivery=delivery)
    assert attempt.status_code == 200 and attempt.response_excerpt == '{"ok": true}'
    assert "x-collab-signature-256" not in {k.lower() for k in attempt.request_headers}


def test_a_tampered_body_fails_verification(api, world, receiver):
    register(api, world.project, receiver.url)
    create_issue(api, world.project)
    [request] = receiver.wait_for(1)
    request.body = request.body.replace(b"Login", b"Logout")
    with pytest.raises(Exception, match="(?i)signature"):
        verify_both_signatures(request)


def test_failing_twice_then_succeeding_keeps_one_delivery_id(api, world, receiver):
    receiver.statuses = [500, 503]
    register(api, world.project, receiver.url)
    create_issue(api, world.project)

    requests = receiver.wait_for(3)
    assert [r.headers["x-collab-attempt"] for r in requests] == ["1", "2", "3"]
    assert len({r.headers["x-collab-delivery"] for r in requests}) == 1
    assert len({r.body for r in requests}) == 1
    for request in requests:
        verify_both_signatures(request)
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.SUCCEEDED
    assert delivery.attempts == 3
    codes = list(delivery.attempt_log.order_by("number").values_list("status_code", flat=True))
    assert codes == [500, 503, 200]
    assert Webhook.objects.get().failing_since is None


@pytest.mark.parametrize("status", [400, 401, 404, 410, 422])
def test_a_permanent_4xx_is_not_retried(api, world, receiver, status):
    receiver.statuses = [status]
    register(api, world.project, receiver.url)
    create_issue(api, world.project)
    receiver.wait_for(1)
    time.sleep(0.3)
    assert len(receiver.requests) == 1
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.FAILED
    assert delivery.last_status_code == status
    assert delivery.attempts == 1


@pytest.mark.parametrize("status", [408, 429, 502])
def test_transient_answers_are_retried(api, world, receiver, status):
    receiver.statuses = [status]
    register(api, world.project, receiver.url)
    create_issue(api, world.project)
    receiver.wait_for(2)
    assert Delivery.objects.get().status == Delivery.Status.SUCCEEDED


def test_retries_stop_after_the_last_attempt(api, world, receiver):
    receiver.statuses = [500] * 10
    register(api, world.project, receiver.url)
    create_issue(api, world.project)
    receiver.wait_for(4)
    time.sleep(0.3)
    assert len(receiver.requests) == 4
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.FAILED and delivery.attempts == 4


def test_a_redirect_is_not_followed(api, world, receiver):
    receiver.statuses = [302]
    register(api, world.project, receiver.url)
    create_issue(api, world.project)
    receiver.wait_for(1)
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.FAILED and delivery.last_status_code == 302


def test_unsubscribed_kinds_and_inactive_hooks_get_nothing(api, world, receiver):
    register(api, world.project, receiver.url, events=["pull_request.merged"])
    off = register(api, world.project, receiver.url, events=["*"])
    services.webhook_update(webhook=off, actor=None, active=False)
    create_issue(api, world.project)
    time.sleep(0.3)
    assert receiver.requests == []
    assert not Delivery.objects.exists()
    assert Event.objects.get(type="issue.created").dispatched_at is not None


def test_families_select_their_kinds(api, world, receiver):
    register(api, world.project, receiver.url, events=["issue.*"])
    issue = create_issue(api, world.project)
    assert_ok(api.owner.patch(f"/v1/issues/{issue['id']}", {"status": "closed"}, format="json"))
    requests = receiver.wait_for(2)
    assert [r.headers["x-collab-event"] for r in requests] == ["issue.created", "issue.closed"]


def test_another_projects_events_are_not_delivered(api, world, receiver):
    register(api, world.project, receiver.url)
    make_issue(world.other_project, world.outsider, title="Secret plan")
    time.sleep(0.3)
    assert receiver.requests == []


def test_fanout_and_send_twice_deliver_once(api, world, receiver, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    webhook = register(api, world.project, receiver.url)
    event = Event.objects.create(
        type="issue.created", workspace_id=world.acme.pk, project_id=world.project.pk
    )
    first = fanout.event_fanout(event_id=event.pk)
    assert fanout.event_fanout(event_id=event.pk) == []
    assert Delivery.objects.filter(event=event, webhook=webhook).count() == 1
    receiver.wait_for(1)
    assert engine.delivery_send(delivery_id=first[0]) is None
    time.sleep(0.2)
    assert len(receiver.requests) == 1


def test_ping_reaches_only_that_webhook(api, world, receiver):
    other, other_server = start_receiver()
    try:
        webhook = register(api, world.project, receiver.url, events=["pull_request.merged"])
        register(api, world.project, other.url, events=["*"])
        response = api.owner.post(f"/v1/webhooks/{webhook.pk}/ping")
        data = assert_ok(response, 202)["data"]
        assert data["event_type"] == "webhook.ping"
        [request] = receiver.wait_for(1)
        assert request.headers["x-collab-event"] == "webhook.ping"
        assert verify_both_signatures(request)["data"]["webhook"]["id"] == webhook.pk
        time.sleep(0.3)
        assert other.requests == []
    finally:
        other_server.shutdown()


def test_redeliver_sends_again_under_a_new_id(api, world, receiver):
    receiver.statuses = [410]
    webhook = register(api, world.project, receiver.url)
    create_issue(api, world.project)
    receiver.wait_for(1)
    original = Delivery.objects.get()
    assert original.status == Delivery.Status.FAILED

    url = f"/v1/webhooks/{webhook.pk}/deliveries/{original.pk}/redeliver"
    response = api.owner.post(url)
    data = assert_ok(response, 201)["data"]
    assert response["Location"] == f"/v1/webhooks/{webhook.pk}/deliveries/{data['id']}"
    assert data["redelivery_of"] == original.pk
    requests = receiver.wait_for(2)
    assert requests[1].headers["x-collab-delivery"] == data["uuid"] != str(original.uuid)
    assert requests[1].body == requests[0].body
    assert Delivery.objects.get(pk=data["id"]).status == Delivery.Status.SUCCEEDED

    detail = assert_ok(api.owner.get(f"/v1/webhooks/{webhook.pk}/deliveries/{original.pk}"))
    assert detail["data"]["attempt_log"][0]["status_code"] == 410
    assert detail["data"]["payload"]["type"] == "issue.created"


def test_redeliver_to_a_disabled_webhook_is_409(api, world, receiver):
    webhook = register(api, world.project, receiver.url)
    create_issue(api, world.project)
    receiver.wait_for(1)
    services.webhook_update(webhook=webhook, actor=None, active=False)
    delivery = Delivery.objects.get()
    response = api.owner.post(f"/v1/webhooks/{webhook.pk}/deliveries/{delivery.pk}/redeliver")
    assert_error(response, 409, "CONFLICT")
    assert Delivery.objects.count() == 1


def test_a_hook_failing_for_days_is_disabled_and_admins_told(api, world, receiver, settings):
    receiver.statuses = [500] * 10
    settings.WEBHOOK_MAX_ATTEMPTS = 1
    webhook = register(api, world.project, receiver.url)
    Webhook.objects.filter(pk=webhook.pk).update(
        failing_since=timezone.now() - timedelta(hours=settings.WEBHOOK_DISABLE_AFTER_HOURS + 1)
    )
    create_issue(api, world.project)
    receiver.wait_for(1)

    webhook.refresh_from_db()
    assert webhook.is_active is False
    assert "switched off" in webhook.disabled_reason
    disabled = Event.objects.get(type="webhook.disabled")
    assert disabled.data["webhook"]["id"] == webhook.pk
    recipients = sorted(address for message in mail.outbox for address in message.to)
    assert recipients == ["admin@acme.test", "owner@acme.test"]
    assert webhook.url in mail.outbox[0].subject

    create_issue(api, world.project, title="Another")
    time.sleep(0.3)
    assert len(receiver.requests) == 1


ADMINS = ["admin@acme.test", "owner@acme.test"]
NOTIFY = "notifications.tasks.webhook_disabled_notify"


def switch_off(api, world, receiver, settings) -> Webhook:
    """A webhook failing for days, switched off by its next failed delivery."""
    receiver.statuses = [500] * 10
    settings.WEBHOOK_MAX_ATTEMPTS = 1
    webhook = register(api, world.project, receiver.url)
    Webhook.objects.filter(pk=webhook.pk).update(
        failing_since=timezone.now() - timedelta(hours=settings.WEBHOOK_DISABLE_AFTER_HOURS + 1)
    )
    create_issue(api, world.project)
    receiver.wait_for(1)
    webhook.refresh_from_db()
    assert webhook.is_active is False
    return webhook


@pytest.fixture
def lost_notices(monkeypatch):
    """The "switched off" emails' tasks, handed over and lost (a killed worker on the file
    broker): their kwargs."""
    lost: list[dict] = []
    task = current_app.tasks[NOTIFY]
    monkeypatch.setattr(task, "apply_async", lambda **options: lost.append(options["kwargs"]))
    yield lost
    monkeypatch.undo()


def grace_passes(webhook, settings) -> None:
    """The time the sweep waits for passes (for an email owed, handed over just now)."""
    grace = timedelta(seconds=settings.WEBHOOK_DISABLED_NOTIFY_GRACE_SECONDS + 1)
    Webhook.objects.filter(pk=webhook.pk).update(
        disabled_notify_queued_at=F("disabled_notify_queued_at") - grace
    )


def test_the_switched_off_email_is_sent_once(api, world, receiver, settings):
    webhook = switch_off(api, world, receiver, settings)
    assert [sorted(message.to) for message in mail.outbox] == [ADMINS]
    assert webhook.disabled_notified_at is not None

    # Its task run again (a redelivered message), and the sweep later: nothing more.
    assert services.webhook_disabled_notify(webhook_id=webhook.pk) == 0
    grace_passes(webhook, settings)
    assert tasks.deliveries_sweep()["disabled_notices"] == 0
    assert len(mail.outbox) == 1


def test_a_lost_switched_off_email_is_sent_by_the_sweep_once(
    api, world, receiver, settings, lost_notices
):
    webhook = switch_off(api, world, receiver, settings)
    assert lost_notices == [{"webhook_id": webhook.pk}]
    assert mail.outbox == [] and webhook.disabled_notified_at is None
    # Within the grace its task may still be on its way.
    assert tasks.deliveries_sweep()["disabled_notices"] == 0

    grace_passes(webhook, settings)
    assert tasks.deliveries_sweep()["disabled_notices"] == 1
    assert lost_notices == [{"webhook_id": webhook.pk}] * 2
    # The queued task, run now, as a worker would.
    assert services.webhook_disabled_notify(webhook_id=webhook.pk) == 2
    assert [sorted(message.to) for message in mail.outbox] == [ADMINS]
    webhook.refresh_from_db()
    assert webhook.disabled_notified_at is not None

    grace_passes(webhook, settings)
    assert tasks.deliveries_sweep()["disabled_notices"] == 0
    assert services.webhook_disabled_notify(webhook_id=webhook.pk) == 0
    assert len(mail.outbox) == 1


def test_a_switched_off_email_cut_off_by_a_dead_worker_is_sent_once_its_lease_lapses(
    api, world, receiver, settings, lost_notices
):
    webhook = switch_off(api, world, receiver, settings)
    grace_passes(webhook, settings)
    held = Webhook.objects.filter(pk=webhook.pk)
    held.update(disabled_notify_claimed_until=timezone.now() + timedelta(minutes=1))
    assert tasks.deliveries_sweep()["disabled_notices"] == 0
    assert services.webhook_disabled_notify(webhook_id=webhook.pk) == 0

    held.update(disabled_notify_claimed_until=timezone.now() - timedelta(seconds=1))
    assert tasks.deliveries_sweep()["disabled_notices"] == 1
    assert services.webhook_disabled_notify(webhook_id=webhook.pk) == 2
    assert len(mail.outbox) == 1


def test_a_failed_send_of_the_switched_off_email_gives_its_claim_back(
    api, world, receiver, settings, lost_notices, monkeypatch
):
    webhook = switch_off(api, world, receiver, settings)

    def refused(*args, **kwargs):
        raise ConnectionRefusedError("no mail server")

    with monkeypatch.context() as patched:
        patched.setattr("django.core.mail.send_mail", refused)
        with pytest.raises(ConnectionRefusedError):
            services.webhook_disabled_notify(webhook_id=webhook.pk)
    webhook.refresh_from_db()
    assert webhook.disabled_notify_claimed_until is None
    assert webhook.disabled_notified_at is None
    # The task's retry (or the sweep's) sends it.
    assert services.webhook_disabled_notify(webhook_id=webhook.pk) == 2
    assert len(mail.outbox) == 1


def test_no_switched_off_email_is_owed_once_switched_back_on_or_off_by_hand(
    api, world, receiver, settings, lost_notices
):
    webhook = switch_off(api, world, receiver, settings)
    for active in (True, False):
        response = api.owner.patch(f"/v1/webhooks/{webhook.pk}", {"active": active}, format="json")
        assert_ok(response)
        grace_passes(webhook, settings)
        assert tasks.deliveries_sweep()["disabled_notices"] == 0
        assert services.webhook_disabled_notify(webhook_id=webhook.pk) == 0
    assert mail.outbox == []


def test_a_success_clears_the_failure_streak(api, world, receiver):
    webhook = register(api, world.project, receiver.url)
    Webhook.objects.filter(pk=webhook.pk).update(failing_since=timezone.now())
    create_issue(api, world.project)
    receiver.wait_for(1)
    webhook.refresh_from_db()
    assert webhook.failing_since is None and webhook.last_delivery_at is not None


def test_the_guard_is_applied_again_at_delivery(api, world, receiver, settings):
    """Registered while allowed; by delivery time private addresses are refused: nothing is
    sent, and it is not retried (the address will not become public by waiting)."""
    register(api, world.project, receiver.url)
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    create_issue(api, world.project)
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.FAILED
    assert delivery.last_error == (
        "refused: The host '127.0.0.1' is not allowed: it is a loopback, private, link-local "
        "or otherwise non-public address."
    )
    assert receiver.requests == []


def test_a_name_resolving_to_loopback_is_refused_at_delivery(api, world, receiver, settings):
    register(api, world.project, receiver.url.replace("127.0.0.1", "localhost"))
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    create_issue(api, world.project)
    # What the name resolves to is not told.
    assert Delivery.objects.get().last_error == (
        "refused: The host 'localhost' is not allowed: it resolves to a loopback, private, "
        "link-local or otherwise non-public address, or does not resolve."
    )
    assert receiver.requests == []


def test_a_receiver_too_slow_is_a_retryable_failure(api, world, settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    settings.WEBHOOK_MAX_ATTEMPTS = 1
    release = threading.Event()

    class Slow(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            release.wait(5)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    serve_in_thread(server)
    try:
        register(api, world.project, f"http://127.0.0.1:{server.server_address[1]}/slow")
        started = time.monotonic()
        create_issue(api, world.project)
        assert time.monotonic() - started < 4
        delivery = Delivery.objects.get()
        assert "timed out" in delivery.last_error.lower() or "timeout" in delivery.last_error
        assert delivery.last_status_code is None
    finally:
        release.set()
        server.shutdown()


def test_a_refused_connection_is_logged_and_retried(api, world, settings):
    settings.WEBHOOK_MAX_ATTEMPTS = 2
    register(api, world.project, "http://127.0.0.1:9/nothing-listens")
    create_issue(api, world.project)
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.FAILED and delivery.attempts == 2
    assert all(attempt.error for attempt in delivery.attempt_log.all())


def test_the_sweeper_takes_up_what_no_task_carried(api, world, receiver, settings):
    """Events committed while the broker was away, and deliveries whose worker died."""
    settings.WEBHOOK_SWEEP_GRACE_SECONDS = 0
    webhook = register(api, world.project, receiver.url)
    old = timezone.now() - timedelta(minutes=1)
    lost_event = Event.objects.create(
        type="issue.created",
        workspace_id=world.acme.pk,
        project_id=world.project.pk,
        created_at=old,
        data={"issue": {"title": "lost"}},
    )
    stranded_event = Event.objects.create(
        type="issue.updated",
        workspace_id=world.acme.pk,
        project_id=world.project.pk,
        dispatched_at=old,
    )
    Delivery.objects.create(
        webhook=webhook,
        event=stranded_event,
        attempts=1,
        next_attempt_at=old,
        claimed_until=old,  # the lease of a worker that died mid-send
    )
    assert sweep.deliveries_sweep() == {"events": 1, "deliveries": 1}
    requests = receiver.wait_for(2)
    assert {r.headers["x-collab-event"] for r in requests} == {"issue.created", "issue.updated"}
    lost = Event.objects.get(pk=lost_event.pk)
    assert lost.dispatched_at is not None
    assert sweep.deliveries_sweep() == {"events": 0, "deliveries": 0}


def test_a_held_lease_is_not_taken(api, world, receiver):
    webhook = register(api, world.project, receiver.url)
    event = Event.objects.create(
        type="issue.updated", workspace_id=world.acme.pk, dispatched_at=timezone.now()
    )
    delivery = Delivery.objects.create(
        webhook=webhook, event=event, claimed_until=timezone.now() + timedelta(seconds=30)
    )
    assert engine.delivery_send(delivery_id=delivery.pk) is None
    assert receiver.requests == []


def test_one_change_makes_one_event_and_one_delivery(api, world, receiver):
    register(api, world.project, receiver.url, events=["issue.updated"])
    issue = create_issue(api, world.project)
    body = {"title": "Renamed", "priority": "low", "labels": ["a"]}
    assert_ok(api.owner.patch(f"/v1/issues/{issue['id']}", body, format="json"))
    [request] = receiver.wait_for(1)
    payload = verify_both_signatures(request)
    assert set(payload["data"]["changes"]) == {"title", "priority", "labels"}
    assert payload["data"]["issue"]["title"] == "Renamed"
    assert Issue.objects.get(pk=issue["id"]).title == "Renamed"


def test_a_webhook_deleted_while_its_delivery_is_out_drops_it_quietly(
    api, world, receiver, monkeypatch
):
    """The owner deletes the webhook while a POST to it is on the wire: the worker finds the
    delivery gone when the answer comes back, and records nothing (no error either side)."""
    from notifications import transport

    hook = register(api, world.project, receiver.url, events=["issue.created"])
    real_post = transport.post
    errors = []

    def post_while_deleting(url, **kwargs):
        result = real_post(url, **kwargs)

        def delete():
            try:
                services.webhook_delete(webhook=Webhook.objects.get(pk=hook.pk), actor=world.owner)
            except Exception as exc:  # noqa: BLE001 - reported by the assertion below
                errors.append(exc)
            finally:
                connection.close()

        deleting = threading.Thread(target=delete)
        deleting.start()
        deleting.join(10)
        return result

    monkeypatch.setattr(transport, "post", post_while_deleting)
    create_issue(api, world.project)

    assert errors == []
    assert len(receiver.requests) == 1
    assert not Webhook.objects.filter(pk=hook.pk).exists()
    assert not Delivery.objects.exists() and not DeliveryAttempt.objects.exists()


@pytest.mark.parametrize("deleted", ["webhook", "project", "workspace"])
def test_deleting_a_webhook_waits_for_an_attempt_being_recorded(api, world, receiver, deleted):
    """A worker holds a delivery while it records an attempt (as ``_delivery_settle`` does);
    the deletion of its webhook, of the webhook's project, or of the workspace whose own
    webhook it is, waits for it and takes the new attempt along."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL")
    if deleted == "workspace":
        body = {"url": receiver.url, "events": ["issue.created"], "secret": SECRET}
        data = assert_ok(
            api.owner.post(f"/v1/workspaces/{world.acme.pk}/webhooks", body, format="json"), 201
        )["data"]
        hook = Webhook.objects.get(pk=data["id"])
    else:
        hook = register(api, world.project, receiver.url, events=["issue.created"])
    create_issue(api, world.project)
    delivery = Delivery.objects.get(webhook=hook)
    locked = threading.Event()
    errors = []

    def worker():
        try:
            with transaction.atomic():
                list(Delivery.objects.select_for_update().filter(pk=delivery.pk).values_list("pk"))
                locked.set()
                time.sleep(0.5)  # the deletion starts meanwhile
                DeliveryAttempt.objects.create(delivery_id=delivery.pk, number=2)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=worker)
    thread.start()
    assert locked.wait(10)
    if deleted == "webhook":
        services.webhook_delete(webhook=hook, actor=world.owner)
    elif deleted == "project":
        from projects.services import project_delete

        project_delete(project=world.project, actor=world.owner)
    else:
        with transaction.atomic():  # as the admin's delete page does
            world.acme.delete()
    thread.join(10)

    assert errors == []
    assert not Webhook.objects.filter(pk=hook.pk).exists()
    assert not Delivery.objects.exists() and not DeliveryAttempt.objects.exists()


def test_a_secret_kept_under_the_public_key_survives_the_upgrade(api, world, receiver):
    """Installations that ran with the public default SECRET_KEY kept webhook secrets under a
    key anyone could derive: the upgrade re-encrypts them, and deliveries still verify."""
    upgrade = importlib.import_module(
        "notifications.migrations.0004_webhook_secrets_off_the_public_key"
    )
    webhook = register(api, world.project, receiver.url, events=["issue.created"])
    public = upgrade.public_fernet()
    Webhook.objects.filter(pk=webhook.pk).update(
        secret_encrypted=public.encrypt(SECRET.encode()).decode()
    )

    upgrade.reencrypt(apps, None)

    webhook.refresh_from_db()
    with pytest.raises(InvalidToken):
        public.decrypt(webhook.secret_encrypted.encode())
    create_issue(api, world.project)
    [request] = receiver.wait_for(1)
    verify_both_signatures(request)


def test_a_sweep_queues_a_few_batches_and_a_fair_share_of_each_webhook(world, monkeypatch):
    """A receiver down all day leaves thousands due: the sweep queues them in batches by
    webhook (not a task each, ahead of everyone's next event), at most SWEEP_PER_WEBHOOK of
    one webhook, so another's due delivery goes in the same sweep."""
    from tests.factories import WebhookFactory

    flooded = WebhookFactory(project=world.project)
    quiet = WebhookFactory(project=world.other_project)
    long_ago = timezone.now() - timedelta(hours=1)
    events = Event.objects.bulk_create(
        [Event(type="issue.created", workspace_id=world.acme.pk) for _ in range(130)]
    )
    Delivery.objects.bulk_create(
        [
            Delivery(webhook=flooded, event=event, next_attempt_at=long_ago, attempts=1)
            for event in events[:120]
        ]
        + [
            Delivery(
                webhook=quiet,
                event=events[120],
                next_attempt_at=timezone.now() - timedelta(minutes=1),
            )
        ]
    )
    queued: list[tuple[str, dict]] = []
    monkeypatch.setattr(
        dispatch, "enqueue", lambda task, countdown=None, **kw: queued.append((task, kw)) or True
    )
    assert sweep.deliveries_sweep() == {
        "events": 0,
        "deliveries": sweep.SWEEP_PER_WEBHOOK + 1,
    }
    assert [task for task, _ in queued] == ["notifications.tasks.webhook_deliver"]
    [(_, kwargs)] = queued
    sent = Delivery.objects.filter(pk__in=kwargs["delivery_ids"])
    assert sent.filter(webhook=quiet).count() == 1
    assert sent.filter(webhook=flooded).count() == sweep.SWEEP_PER_WEBHOOK
