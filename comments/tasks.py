from celery import shared_task

from . import services


@shared_task(autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def mentions_notify(*, comment_id: int) -> int:
    return services.mentions_notify(comment_id=comment_id)
