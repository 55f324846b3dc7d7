"""Thin tasks: ids in, a service does the work. Each may run twice and does it once."""

from celery import shared_task

from . import services


@shared_task
def event_fanout(*, event_id: int) -> int:
    return len(services.event_fanout(event_id=event_id))


@shared_task
def webhook_deliver(*, delivery_id: int) -> str | None:
    delivery = services.delivery_send(delivery_id=delivery_id)
    return delivery.status if delivery is not None else None


@shared_task
def deliveries_sweep() -> dict[str, int]:
    return services.deliveries_sweep()


@shared_task(autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def webhook_disabled_notify(*, webhook_id: int) -> int:
    return services.webhook_disabled_notify(webhook_id=webhook_id)
