"""The JSON of webhooks: one ``TypedDict`` and its builder, used by the views, the services'
event payloads and the schema's serializers' test (``tests/test_records.py``). Deliveries and
their attempts are shown by their serializers (``serializers.py``), events by
``events.models.Event.as_payload``."""

from typing import TypedDict

from collab.api.renderers import iso_z

from .models import Webhook


class WebhookRecord(TypedDict):
    id: int
    workspace_id: int
    # None: the workspace's webhook, sent all of the workspace's events.
    project_id: int | None
    url: str
    events: list[str]
    description: str
    active: bool
    disabled_reason: str | None
    failing_since: str | None
    last_delivery_at: str | None
    created_at: str
    updated_at: str


def webhook_record(webhook: Webhook) -> WebhookRecord:
    """A webhook as the API shows it: never its secret."""
    return {
        "id": webhook.pk,
        "workspace_id": webhook.workspace_id,
        "project_id": webhook.project_id,
        "url": webhook.url,
        "events": list(webhook.events),
        "description": webhook.description,
        "active": webhook.is_active,
        # Only a webhook switched off has a reason; "" in the row is no reason.
        "disabled_reason": webhook.disabled_reason or None,
        "failing_since": iso_z(webhook.failing_since),
        "last_delivery_at": iso_z(webhook.last_delivery_at),
        "created_at": iso_z(webhook.created_at),
        "updated_at": iso_z(webhook.updated_at),
    }
