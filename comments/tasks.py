from celery import shared_task

from . import services


@shared_task(autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def mentions_notify(*, comment_id: int) -> int:
    return services.mentions_notify(comment_id=comment_id)


@shared_task
def mentions_sweep() -> int:
    """Queue again the mention emails a killed worker left unsent (from beat)."""
    return services.mentions_sweep()
