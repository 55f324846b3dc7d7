"""A webhook deleted while its deliveries and their attempts are written
(docs/guide/envelope-and-errors.md, "Races are answered like any other input"): the deletion
answers 200, the writes finish or are dropped, never a 500, never an orphan."""

import random
import threading
import time

import pytest
from django.db import connection

from notifications import delivery as engine
from notifications import dispatch, services
from notifications.models import Delivery, DeliveryAttempt, Webhook
from tests.conftest import assert_error, assert_ok
from tests.factories import WebhookFactory
from tests.races import MOMENTS, assert_lost_to_the_deletion, postgresql_only, race

pytestmark = pytest.mark.django_db(transaction=True)


def create_issue(client, project, title="Login fails"):
    return client.post(f"/v1/projects/{project.pk}/issues", {"title": title}, format="json")


@postgresql_only
@pytest.mark.parametrize("moment", MOMENTS)
def test_a_webhook_deleted_while_an_issue_fans_out_to_it(api, world, receiver, monkeypatch, moment):
    """The fan-out of a new issue writes a delivery for the webhook being deleted."""
    hook = WebhookFactory(project=world.project, url=receiver.url)

    deleted, written = race(
        monkeypatch,
        delete=lambda: api.owner.delete(f"/v1/webhooks/{hook.pk}"),
        write=lambda: create_issue(api.developer, world.project),
        moment=moment,
    )

    assert_ok(deleted.result())
    assert_ok(written.result(), 201)
    assert not Webhook.objects.filter(pk=hook.pk).exists()
    assert not Delivery.objects.filter(webhook_id=hook.pk).exists()


@postgresql_only
@pytest.mark.parametrize("moment", MOMENTS)
def test_a_webhook_deleted_while_an_attempt_is_recorded(api, world, receiver, monkeypatch, moment):
    """A worker records an attempt of a delivery of the webhook being deleted."""
    hook = WebhookFactory(project=world.project, url=receiver.url)
    assert_ok(create_issue(api.developer, world.project), 201)
    delivery = Delivery.objects.get(webhook=hook)

    deleted, written = race(
        monkeypatch,
        delete=lambda: api.owner.delete(f"/v1/webhooks/{hook.pk}"),
        write=lambda: DeliveryAttempt.objects.create(delivery_id=delivery.pk, number=9),
        moment=moment,
    )

    assert_ok(deleted.result())
    assert_lost_to_the_deletion(written)
    assert not Delivery.objects.filter(pk=delivery.pk).exists()
    assert not DeliveryAttempt.objects.filter(delivery_id=delivery.pk).exists()


def test_the_worker_drops_a_delivery_whose_webhook_is_gone(
    api, world, receiver, monkeypatch, caplog
):
    """Claimed and sent, then its webhook deleted before the outcome is written: logged,
    counted, no attempt written, no retry queued, nothing raised."""
    from notifications import transport

    hook = WebhookFactory(project=world.project, url=receiver.url)
    receiver.statuses = [503]  # a retryable failure: it would be retried were it still there
    real_post, real_enqueue = transport.post, dispatch.enqueue
    retries = []

    def post_then_delete(url, **kwargs):
        result = real_post(url, **kwargs)
        Webhook.objects.filter(pk=hook.pk).delete()
        return result

    def enqueue(task, countdown=None, **kwargs):
        if task.endswith("webhook_deliver"):
            retries.append(kwargs)
            return True
        return real_enqueue(task, countdown, **kwargs)

    monkeypatch.setattr(transport, "post", post_then_delete)
    monkeypatch.setattr(dispatch, "enqueue", enqueue)
    before = engine.deliveries_dropped()
    with caplog.at_level("INFO", logger="collab.webhooks"):
        assert_ok(create_issue(api.developer, world.project), 201)

    assert len(receiver.requests) == 1
    assert engine.deliveries_dropped() == before + 1
    assert retries == []
    assert "its webhook is gone" in caplog.text
    assert not Delivery.objects.exists() and not DeliveryAttempt.objects.exists()


# The issue's reproduction, bounded: create a webhook, write issues beside it, delete it.
REPRODUCTION_ROUNDS = 50
ISSUES_PER_ROUND = 3


@postgresql_only
def test_deleting_webhooks_while_issues_are_written_is_never_a_500(api, world, receiver):
    statuses: list[int] = []

    def write_issues():
        try:
            for n in range(ISSUES_PER_ROUND):
                statuses.append(
                    create_issue(api.developer, world.project, f"Issue {n}").status_code
                )
        finally:
            connection.close()

    started = time.monotonic()
    for _round in range(REPRODUCTION_ROUNDS):
        body = {"url": receiver.url, "events": ["*"], "secret": "s3cret-value"}
        created = api.owner.post(f"/v1/projects/{world.project.pk}/webhooks", body, format="json")
        hook_id = assert_ok(created, 201)["data"]["id"]
        writer = threading.Thread(target=write_issues)
        writer.start()
        time.sleep(random.uniform(0, 0.05))  # noqa: S311 - a spread of interleavings
        statuses.append(api.owner.delete(f"/v1/webhooks/{hook_id}").status_code)
        writer.join(30)
        assert not writer.is_alive()
        assert time.monotonic() - started < 240, "the reproduction loop is bounded in time"

    assert 500 not in statuses, (
        f"{statuses.count(500)} answers were 500 in {REPRODUCTION_ROUNDS} rounds"
    )
    assert set(statuses) <= {200, 201}
    assert not Delivery.objects.exclude(webhook__in=Webhook.objects.all()).exists()
    assert not Webhook.objects.exists()


def test_a_ping_to_a_webhook_deleted_meanwhile_is_404(api, world, monkeypatch):
    """The writer's side, on SQLite as on PostgreSQL: the ping's delivery refers to a webhook
    deleted after the view found it, and its commit fails on the foreign key."""
    hook = WebhookFactory(project=world.project)
    real_ping = services.webhook_ping

    def ping_after_the_deletion(*, webhook, actor):
        Webhook.objects.filter(pk=webhook.pk).delete()
        return real_ping(webhook=webhook, actor=actor)

    monkeypatch.setattr(services, "webhook_ping", ping_after_the_deletion)
    response = api.owner.post(f"/v1/webhooks/{hook.pk}/ping")

    assert_error(response, 404, "NOT_FOUND")
    assert not Delivery.objects.exists()
