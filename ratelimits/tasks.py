from celery import shared_task

from collab.api.counters import counters_purge


@shared_task
def rate_limit_counters_purge() -> int:
    """Drop database rate-limit counters whose window ended over an hour ago (Redis expires its
    own). A row is reused from window to window, so this only trims identities gone quiet."""
    return counters_purge(older_than=3600)
