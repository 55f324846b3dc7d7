from celery import shared_task

from . import services
from .models import Repository


@shared_task
def repository_sync_task(*, repository_id: int) -> None:
    services.repository_sync(repository_id=repository_id)


@shared_task
def repositories_sync_all() -> int:
    """Queue a sync of every repository of an active project (from beat)."""
    ids = list(Repository.objects.filter(project__status="active").values_list("pk", flat=True))
    for repository_id in ids:
        repository_sync_task.delay(repository_id=repository_id)
    services.mirrors_prune()
    return len(ids)


@shared_task
def repositories_sweep() -> int:
    """Queue again the syncs a killed worker left undone (from beat)."""
    return len(services.repositories_sync_stuck())
