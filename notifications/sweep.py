"""The sweeper, run by beat: whatever a broker outage or a killed worker left behind (events
never fanned out, deliveries due with no task on their way) handed over again."""

from datetime import timedelta

from django.conf import settings
from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from events.models import Event

from . import dispatch
from .fanout import events_fanout
from .models import Delivery, Webhook

# Deliveries a sweep queues, in all and per webhook.
SWEEP_DELIVERIES = 1000
SWEEP_PER_WEBHOOK = 2 * dispatch.DELIVERY_BATCH


def deliveries_sweep() -> dict[str, int]:
    """Hand over what no task is on its way for: events never fanned out (the broker was
    down at commit), and deliveries due whose send never ran or whose worker died."""
    now = timezone.now()
    stale_events = list(
        Event.objects.filter(
            dispatched_at__isnull=True,
            created_at__lte=now - timedelta(seconds=settings.WEBHOOK_SWEEP_GRACE_SECONDS),
        )
        .order_by("id")
        .values_list("id", flat=True)[:500]
    )
    if stale_events:
        events_fanout(event_ids=stale_events)
    due = list(
        Delivery.objects.filter(
            status=Delivery.Status.PENDING,
            next_attempt_at__lte=now - timedelta(seconds=settings.WEBHOOK_SWEEP_GRACE_SECONDS),
        )
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .annotate(
            place=Window(
                RowNumber(), partition_by=[F("webhook_id")], order_by=F("next_attempt_at").asc()
            )
        )
        .filter(place__lte=SWEEP_PER_WEBHOOK)
        .order_by("next_attempt_at")
        .values_list("id", "webhook_id")[:SWEEP_DELIVERIES]
    )
    # In batches by webhook, as a fan-out queues them: a few tasks, not one per delivery, so
    # the sweep of a receiver that was down all day does not queue ahead of everyone's next
    # event; and a fair share each, so one webhook's backlog does not fill the sweep.
    dispatch.deliveries_enqueue(due)
    return {"events": len(stale_events), "deliveries": len(due)}


# Owed "webhook switched off" emails a sweep queues again at most.
SWEEP_DISABLED_NOTICES = 100


def webhook_disabled_notices_sweep() -> int:
    """Queue again the "switched off" emails still owed WEBHOOK_DISABLED_NOTIFY_GRACE_SECONDS
    after their task was handed over (it was lost with a killed worker, or its retries ran
    out), unless a worker holds one's lease. Each is taken first by a conditional UPDATE of
    ``disabled_notify_queued_at``, so two sweeps at once queue it once, and it is queued again
    only after another grace. Returns how many were queued."""
    now = timezone.now()
    grace = timedelta(seconds=settings.WEBHOOK_DISABLED_NOTIFY_GRACE_SECONDS)
    unclaimed = Q(disabled_notify_claimed_until__isnull=True) | Q(
        disabled_notify_claimed_until__lt=now
    )
    owed = list(
        Webhook.objects.filter(
            unclaimed,
            is_active=False,
            disabled_notified_at__isnull=True,
            disabled_notify_queued_at__lte=now - grace,
        )
        .order_by("disabled_notify_queued_at")
        .values_list("pk", "disabled_notify_queued_at")[:SWEEP_DISABLED_NOTICES]
    )
    queued = 0
    for webhook_id, queued_at in owed:
        taken = Webhook.objects.filter(
            pk=webhook_id, disabled_notify_queued_at=queued_at, disabled_notified_at__isnull=True
        ).update(disabled_notify_queued_at=now)
        if taken:
            dispatch.enqueue(dispatch.TASKS + "webhook_disabled_notify", webhook_id=webhook_id)
            queued += 1
    return queued
