"""The webhooks' and the event stream's metrics (docs/operations/metrics.md)."""

from prometheus_client import Counter, Gauge, Histogram

WEBHOOK_DELIVERIES = Counter(
    "collab_webhook_deliveries_total",
    "Webhook delivery attempts' results: succeeded, failed, retried, deferred, dropped.",
    ["outcome"],
)
WEBHOOK_DELIVERY_LAG = Histogram(
    "collab_webhook_delivery_lag_seconds",
    "From the event's commit to its delivery's success.",
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400),
)
WEBHOOK_RECEIVERS_DEFERRED = Counter(
    "collab_webhook_receivers_deferred_total",
    "Deliveries deferred because their receiver was judged stuck (its fill in flight).",
)
STREAM_SUBSCRIBERS = Gauge(
    "collab_stream_subscribers", "Open event streams.", multiprocess_mode="livesum"
)
STREAM_FRAMES_SENT = Counter("collab_stream_frames_sent_total", "Event frames written to streams.")
# Each process's hub sets its own (notifications.stream); a scrape shows the largest of the
# live processes': the stream furthest behind. A process whose hub never started says 0.
EVENT_HUB_LAG = Gauge(
    "collab_event_hub_lag_events",
    "Events of the log this process's event hub has not read yet (the most of any process).",
    multiprocess_mode="livemax",
)
