from celery import shared_task

from . import facets


@shared_task
def facet_counts_compact() -> int:
    """Fold the per-value counters' change rows (``issues.facets``); projects folded."""
    return facets.compact()
