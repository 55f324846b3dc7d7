"""Thin tasks: ids in, a service does the work. Each may run twice and does it once."""

from celery import shared_task
from django.conf import settings

from . import delivery, fanout, services, sweep


@shared_task(bind=True)
def event_fanout(
    self, *, event_ids: list[int] | None = None, event_id: int | None = None, due: bool = False
) -> int:
    # ``due``: every event not yet dispatched (the coalesced fan-out, with Redis). ``event_id``:
    # one event, as queued before events were handed on in batches. A worker's thread hands the
    # sends to the process's senders and goes on (run eagerly, it waits).
    wait = bool(self.request.is_eager)
    if due:
        # Run eagerly (the tests), nothing else commits meanwhile: no gathering.
        gather = 0.0 if wait else settings.WEBHOOK_FANOUT_GATHER_SECONDS
        return len(fanout.events_deliver_due(wait=wait, gather=gather))
    ids = event_ids if event_ids is not None else [event_id] if event_id is not None else []
    return len(fanout.events_deliver(event_ids=ids, wait=wait))


@shared_task(bind=True)
def webhook_deliver(
    self, *, delivery_ids: list[int] | None = None, delivery_id: int | None = None
) -> list[str | None]:
    # ``delivery_id``: one delivery (retries, the sweeper, and messages queued before batches).
    # As the fan-out does, a worker's thread hands the sends on: retries bound for a receiver
    # that does not answer must not hold the threads the next events' fan-outs need.
    ids = delivery_ids if delivery_ids is not None else [delivery_id] if delivery_id else []
    sent = delivery.deliveries_send(delivery_ids=ids, wait=bool(self.request.is_eager))
    return [delivery.status if delivery is not None else None for delivery in sent]


@shared_task
def deliveries_sweep() -> dict[str, int]:
    swept = sweep.deliveries_sweep()
    swept["disabled_notices"] = sweep.webhook_disabled_notices_sweep()
    return swept


@shared_task(autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def webhook_disabled_notify(*, webhook_id: int) -> int:
    return services.webhook_disabled_notify(webhook_id=webhook_id)
