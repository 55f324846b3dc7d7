"""The git syncs' metrics (docs/operations/metrics.md)."""

from prometheus_client import Counter, Histogram

GIT_SYNC_DURATION = Histogram(
    "collab_git_sync_duration_seconds",
    "A repository sync, by outcome (synced, failed).",
    ["outcome"],
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
)
GIT_SYNC_FAILURES = Counter("collab_git_sync_failures_total", "Failed repository syncs.")
