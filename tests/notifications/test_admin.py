"""Webhooks and their delivery log in the Django admin."""

import pytest
from django.urls import reverse

from events.models import Event
from notifications.models import Delivery, DeliveryAttempt, Webhook
from tests.factories import WebhookFactory


def url(model, view: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


@pytest.fixture
def delivery(world):
    webhook = WebhookFactory(project=world.project, url="http://127.0.0.1:9/x")
    event = Event.objects.create(
        type="issue.created", workspace_id=world.acme.pk, project_id=world.project.pk
    )
    delivery = Delivery.objects.create(webhook=webhook, event=event, status="failed", attempts=1)
    DeliveryAttempt.objects.create(
        delivery=delivery, number=1, status_code=500, response_excerpt="boom from the receiver"
    )
    return delivery


def test_pages_render_without_the_secret(browser, delivery):
    webhook = delivery.webhook
    for page in (
        url(Webhook, "changelist"),
        url(Webhook, "change", webhook.pk),
        url(Delivery, "changelist"),
        url(Delivery, "change", delivery.pk),
    ):
        response = browser.get(page)
        assert response.status_code == 200, page
        assert webhook.secret_encrypted not in response.content.decode()
    detail = browser.get(url(Delivery, "change", delivery.pk)).content.decode()
    assert "boom from the receiver" in detail


def test_switching_off_goes_through_the_service(browser, delivery):
    webhook = delivery.webhook
    response = browser.post(
        url(Webhook, "changelist"),
        {"action": "switch_off", "_selected_action": [webhook.pk]},
    )
    assert response.status_code == 302
    webhook.refresh_from_db()
    assert webhook.is_active is False
    event = Event.objects.get(type="webhook.updated")
    assert event.changes["active"] == {"previous": True, "current": False}


def test_redeliver_action_makes_a_new_delivery(browser, delivery, settings):
    settings.WEBHOOK_MAX_ATTEMPTS = 1
    response = browser.post(
        url(Delivery, "changelist"),
        {"action": "redeliver", "_selected_action": [delivery.pk]},
    )
    assert response.status_code == 302
    copy = Delivery.objects.get(redelivery_of=delivery)
    assert copy.uuid != delivery.uuid and copy.event_id == delivery.event_id
