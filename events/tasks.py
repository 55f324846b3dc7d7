"""Thin tasks: the log's own upkeep."""

from celery import shared_task
from django.conf import settings

from . import services


@shared_task
def events_purge() -> int:
    return services.events_purge(older_than_days=settings.EVENT_RETENTION_DAYS)
