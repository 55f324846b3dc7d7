"""Thin tasks: ids in, the services do the work (both safe to run twice: see the table above
CELERY_TASK_ROUTES in collab/settings/base.py)."""

from celery import shared_task

from . import services


@shared_task
def export_build(*, export_id: int) -> str | None:
    export = services.export_build(export_id=export_id)
    return None if export is None else export.status


@shared_task
def exports_sweep() -> dict[str, int]:
    return services.exports_sweep()
