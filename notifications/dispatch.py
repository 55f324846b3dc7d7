"""Work handed to the broker by task name: a task queued, or left to the sweeper when the
broker cannot take it, and deliveries queued in batches by webhook once a transaction commits.

By name, since the tasks module imports the modules that queue its tasks. The fan-out, the
delivery engine, the sweep and the webhook services all queue through here (``enqueue``)."""

import logging
from functools import partial

from celery import current_app
from django.db import transaction
from kombu.exceptions import OperationalError

logger = logging.getLogger("collab.webhooks")
TASKS = "notifications.tasks."


def enqueue(task: str, countdown: float | None = None, **kwargs: int | list[int] | bool) -> bool:
    """Queue the task of that name, or leave the work to the sweeper when the broker cannot
    take it.

    By name: the tasks module imports this one, so importing it back would close a cycle.
    The change is committed already: failing the request would not undo it, and the row the
    task would act on (an event not yet dispatched, a delivery due) is what the sweeper reads.
    """
    try:
        current_app.tasks[task].apply_async(kwargs=kwargs, countdown=countdown)
        return True
    except (OperationalError, OSError) as exc:
        logger.warning("Could not queue %s(%s); the sweeper will: %s", task, kwargs, exc)
        return False


# Deliveries to one webhook go out in batches of at most this many, sent in turn on the
# receiver's kept connection; a task carries the batches of at most DELIVERY_TASK_BATCHES
# webhooks, sent side by side (``delivery.deliveries_send``).
DELIVERY_BATCH = 50
DELIVERY_TASK_BATCHES = 16


def batches(deliveries: list[tuple[int, int]]) -> list[list[int]]:
    """These ``(delivery id, webhook id)`` as batches of one webhook's delivery ids each, at
    most DELIVERY_BATCH long, in the order given."""
    by_webhook: dict[int, list[int]] = {}
    for delivery_id, webhook_id in deliveries:
        by_webhook.setdefault(webhook_id, []).append(delivery_id)
    return [
        ids[start : start + DELIVERY_BATCH]
        for ids in by_webhook.values()
        for start in range(0, len(ids), DELIVERY_BATCH)
    ]


def deliveries_enqueue(deliveries: list[tuple[int, int]]) -> None:
    """Queue the sending of these ``(delivery id, webhook id)`` now: in batches by webhook, a
    task carrying the batches of at most DELIVERY_TASK_BATCHES webhooks."""
    grouped = batches(deliveries)
    for start in range(0, len(grouped), DELIVERY_TASK_BATCHES):
        ids = [i for batch in grouped[start : start + DELIVERY_TASK_BATCHES] for i in batch]
        enqueue(TASKS + "webhook_deliver", delivery_ids=ids)


def send_after_commit(deliveries: list[tuple[int, int]]) -> None:
    """Queue the sending of these ``(delivery id, webhook id)`` once the transaction commits:
    an event's deliveries to all its webhooks in one task."""
    if deliveries:
        transaction.on_commit(partial(deliveries_enqueue, deliveries))
