from celery import shared_task

from projects.models import Project

from . import services


@shared_task
def analytics_rollup_all(*, full: bool = False) -> int:
    """Queue one rollup per project; returns how many were queued."""
    project_ids = list(Project.objects.order_by("pk").values_list("pk", flat=True))
    for project_id in project_ids:
        analytics_rollup_project.delay(project_id=project_id, full=full)
    return len(project_ids)


@shared_task
def analytics_rollup_project(*, project_id: int, full: bool = False) -> int:
    return services.rollup_project(project_id=project_id, full=full)
