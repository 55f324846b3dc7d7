"""The webhooks' services: create, change, switch off, ping, redeliver, delete, and the email
when one is switched off. What happens to an event after its commit lives beside them: the
fan-out (``fanout``), the engine that sends deliveries (``delivery``), the sweeper (``sweep``),
and the broker's hand-off they share (``dispatch``)."""

import secrets
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import Membership, Role, User, Workspace
from collab.api.exceptions import Conflict, ValidationFailed
from collab.netguard import UnsafeAddress, resolve
from collab.unset import UNSET, Maybe
from events.catalogue import unknown_patterns
from events.models import Event
from events.services import event_record, model_update
from projects.models import Project

from . import crypto, dispatch
from .models import Delivery, Webhook
from .records import webhook_record


def webhook_url_check(url: str) -> None:
    """422 unless ``url`` is an http(s) URL whose host resolves to public addresses only."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced or invalid "[...]" host
        raise ValidationFailed.field(
            "url", "Give an http:// or https:// URL with a host."
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationFailed.field("url", "Give an http:// or https:// URL with a host.")
    if parts.username or parts.password:
        raise ValidationFailed.field(
            "url", "Credentials in the URL are not accepted; the secret signs deliveries."
        )
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        resolve(parts.hostname, port)
    except ValueError:
        raise ValidationFailed.field("url", "The port is not valid.") from None
    except UnsafeAddress as exc:
        raise ValidationFailed.field("url", str(exc)) from None


def _events_check(events: list[str]) -> list[str]:
    unknown = unknown_patterns(events)
    if unknown:
        raise ValidationFailed.field(
            "events",
            f"Unknown event kinds: {', '.join(unknown)}. See GET /v1/events/kinds; "
            "'*' subscribes to every kind.",
        )
    return list(dict.fromkeys(events))


def webhook_create(
    *,
    workspace_id: int,
    project: Project | None,
    actor: User | None,
    url: str,
    events: list[str],
    secret: str | None = None,
    description: str | None = "",
) -> tuple[Webhook, str | None]:
    """Register a webhook on ``project``, or on the workspace when ``project`` is None.
    Returns it and, when the caller gave none, the secret made for it (shown once, in the
    creation's answer)."""
    webhook_url_check(url)
    events = _events_check(events)
    generated = None
    if not secret:
        secret = generated = "whsk_" + secrets.token_urlsafe(32)
    now = timezone.now()
    with transaction.atomic():
        webhook = Webhook.objects.create(
            workspace_id=workspace_id,
            project=project,
            url=url,
            events=events,
            secret_encrypted=crypto.secret_encrypt(secret),
            description=description or "",
            created_by=actor,
            created_at=now,
            updated_at=now,
        )
        event_record(
            type="webhook.created",
            workspace_id=webhook.workspace_id,
            project_id=webhook.project_id,
            actor=actor,
            data={"webhook": webhook_record(webhook)},
        )
    return webhook, generated


def _webhook_snapshot(webhook: Webhook) -> dict[str, Any]:
    # ``updated_at`` moves with every save; it is not a change of its own.
    record: dict[str, Any] = dict(webhook_record(webhook))
    del record["updated_at"]
    return record


def webhook_update(
    *,
    webhook: Webhook,
    actor: User | None,
    url: Maybe[str] = UNSET,
    events: Maybe[list[str]] = UNSET,
    secret: Maybe[str | None] = UNSET,
    description: Maybe[str | None] = UNSET,
    active: Maybe[bool] = UNSET,
) -> Webhook:
    if url is not UNSET:
        webhook_url_check(url)
    with transaction.atomic():
        webhook = Webhook.objects.select_for_update().get(pk=webhook.pk)
        with model_update(
            webhook,
            snapshot=_webhook_snapshot,
            event_type="webhook.updated",
            payload=lambda webhook: {"webhook": webhook_record(webhook)},
            workspace_id=webhook.workspace_id,
            project_id=webhook.project_id,
            actor=actor,
            stamp="updated_at",
        ) as update:
            if url is not UNSET:
                webhook.url = url
            if events is not UNSET:
                webhook.events = _events_check(events)
            if description is not UNSET:
                webhook.description = description or ""
            if active is not UNSET and active != webhook.is_active:
                webhook.is_active = active
                # Switched back on by hand: its failures so far no longer count towards
                # disabling.
                webhook.disabled_reason = ""
                webhook.failing_since = None
                # Nor is the email about its switching off still owed.
                webhook.disabled_notify_queued_at = None
            if secret:
                webhook.secret_encrypted = crypto.secret_encrypt(secret)
                update.hide("secret")
    return webhook


def deliveries_lock(**filters: object) -> None:
    """Lock the deliveries about to be deleted with their webhook or project, as a worker
    settling one locks it: an attempt being recorded now is committed before they go, and
    none can be added once they are locked (it would reference a delivery about to vanish)."""
    list(Delivery.objects.select_for_update().filter(**filters).values_list("pk"))


def project_deliveries_lock(*, instance: Project, **kwargs: object) -> None:
    """``pre_delete`` of a project, inside its deletion's transaction: lock its deliveries."""
    deliveries_lock(webhook__project_id=instance.pk)


def workspace_deliveries_lock(*, instance: Workspace, **kwargs: object) -> None:
    """``pre_delete`` of a workspace, inside its deletion's transaction: lock the deliveries
    of its own webhooks."""
    deliveries_lock(webhook__workspace_id=instance.pk, webhook__project__isnull=True)


def webhook_delete(*, webhook: Webhook, actor: User | None) -> None:
    with transaction.atomic():
        deliveries_lock(webhook=webhook)
        event_record(
            type="webhook.deleted",
            workspace_id=webhook.workspace_id,
            project_id=webhook.project_id,
            actor=actor,
            data={"webhook": webhook_record(webhook)},
        )
        webhook.delete()


def webhook_ping(*, webhook: Webhook, actor: User | None) -> Delivery:
    """Send ``webhook.ping`` to this webhook alone (whatever it subscribes to, even disabled:
    it is how a receiver is tested before the hook is switched back on)."""
    with transaction.atomic():
        event = event_record(
            type="webhook.ping",
            workspace_id=webhook.workspace_id,
            project_id=webhook.project_id,
            actor=actor,
            data={"webhook": webhook_record(webhook), "zen": "Deliveries are signed; verify."},
        )
        delivery = Delivery.objects.create(webhook=webhook, event=event)
        Event.objects.filter(pk=event.pk).update(dispatched_at=timezone.now())
        dispatch.send_after_commit([(delivery.pk, webhook.pk)])
    return delivery


def delivery_redeliver(*, delivery: Delivery, actor: User | None) -> Delivery:
    """A new delivery (a new uuid) of the same event to the same webhook, sent at once."""
    webhook = delivery.webhook
    if not webhook.is_active:
        raise Conflict(
            "This webhook is disabled: switch it back on (PATCH active=true) first.",
            details={"webhook_active": False},
        )
    with transaction.atomic():
        copy = Delivery.objects.create(
            webhook=webhook, event_id=delivery.event_id, redelivery_of=delivery
        )
        dispatch.send_after_commit([(copy.pk, webhook.pk)])
    return copy


def webhook_disabled_notify(*, webhook_id: int) -> int:
    """Email the owners and admins of the webhook's workspace that failing switched it off;
    returns how many were emailed.

    The email is first claimed for WEBHOOK_DISABLED_NOTIFY_GRACE_SECONDS by a conditional
    UPDATE and sent with no transaction open (a mail server that hangs holds no lock), then
    marked sent (``disabled_notified_at``). A failed send gives the claim back (the task
    retries); one whose worker was killed lapses, for ``sweep.webhook_disabled_notices_sweep``
    to queue again. A second run, or one for a webhook switched back on, sends nothing."""
    from django.core.mail import send_mail

    claim = _disabled_notify_claim(webhook_id=webhook_id)
    if claim is None:
        return 0
    webhook, lease = claim
    claimed = Webhook.objects.filter(pk=webhook.pk, disabled_notify_claimed_until=lease)
    try:
        recipients = list(
            Membership.objects.filter(
                workspace_id=webhook.workspace_id,
                role__in=[Role.OWNER, Role.ADMIN],
                user__status="active",
            ).values_list("user__email", flat=True)
        )
        if recipients:
            owner, name = (
                ("project", webhook.project.name)
                if webhook.project is not None
                else ("workspace", webhook.workspace.name)
            )
            send_mail(
                subject=f"Webhook disabled on {name}: {webhook.url}",
                message=(
                    f"The webhook {webhook.url} of the {owner} {name} was "
                    f"switched off.\n\n{webhook.disabled_reason}\n\nIts delivery log: "
                    f"{settings.PUBLIC_BASE_URL}/v1/webhooks/{webhook.pk}/deliveries\n"
                ),
                from_email=None,
                recipient_list=recipients,
            )
    except BaseException:
        claimed.update(disabled_notify_claimed_until=None)
        raise
    # Only under the lease it sent with: a webhook switched on and off again meanwhile owes
    # a new email.
    claimed.update(disabled_notified_at=timezone.now(), disabled_notify_claimed_until=None)
    return len(recipients)


def _disabled_notify_claim(*, webhook_id: int) -> tuple[Webhook, datetime] | None:
    """The webhook, its "switched off" email owed and now leased to the caller, with the
    lease; None when it is not owed (sent, switched back on, never owed) or another worker
    holds it."""
    now = timezone.now()
    lease = now + timedelta(seconds=settings.WEBHOOK_DISABLED_NOTIFY_GRACE_SECONDS)
    unclaimed = Q(disabled_notify_claimed_until__isnull=True) | Q(
        disabled_notify_claimed_until__lt=now
    )
    taken = Webhook.objects.filter(
        unclaimed,
        pk=webhook_id,
        is_active=False,
        disabled_notify_queued_at__isnull=False,
        disabled_notified_at__isnull=True,
    ).update(disabled_notify_claimed_until=lease)
    if not taken:
        return None
    webhook = Webhook.objects.select_related("project", "workspace").filter(pk=webhook_id).first()
    return (webhook, lease) if webhook is not None else None
