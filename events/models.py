from django.db import models
from django.db.models import Q
from django.utils import timezone

from collab.api.acting import actor_payload
from collab.api.renderers import iso_z


class Event(models.Model):
    """One entry of the durable event log (docs/guide/events-and-webhooks.md).

    Ids increase; workspace, project and actor are kept as plain ids so that the log
    outlives what it speaks of (a deleted project's events stay readable).
    ``dispatched_at`` is set once the consumers above the log have taken the event (its
    webhook deliveries exist): their sweeper hands every event still without it over again,
    so a broker outage at commit loses nothing.
    """

    id = models.BigAutoField(primary_key=True)
    type = models.CharField(max_length=64)
    workspace_id = models.BigIntegerField(db_index=True)
    project_id = models.BigIntegerField(null=True, blank=True)
    actor_id = models.BigIntegerField(null=True, blank=True)
    # The actor's kind and the credential it acted through (collab.api.acting), recorded with
    # the change: {"kind", "via": {"credential", "key_id", "app_id"} or null}.
    actor_detail = models.JSONField(null=True, blank=True)
    data = models.JSONField(default=dict)
    changes = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    # The W3C traceparent of the span that recorded it ("" untraced): what handles the event
    # later, in a task that takes many at once, does so in its trace (collab/tracing.py).
    traceparent = models.CharField(max_length=55, blank=True, default="")

    class Meta:
        # The table predates this app (it began in notifications); the name stays, no data moved.
        db_table = "notifications_event"
        ordering = ["id"]
        indexes = [
            models.Index(fields=["project_id", "id"]),
            models.Index(fields=["type", "id"]),
            models.Index(
                fields=["id"], condition=Q(dispatched_at__isnull=True), name="event_undispatched"
            ),
        ]

    def __str__(self):
        return f"#{self.id} {self.type}"

    def as_payload(self) -> dict:
        """The event as webhooks and the stream send it."""
        data = dict(self.data)
        if self.changes is not None:
            data["changes"] = self.changes
        return {
            "id": self.id,
            "type": self.type,
            "created_at": iso_z(self.created_at),
            "workspace_id": self.workspace_id,
            "project_id": self.project_id,
            "actor_id": self.actor_id,
            "actor": actor_payload(self.actor_id, self.actor_detail),
            "data": data,
        }


class EventLogState(models.Model):
    """A single row: the highest event id ever purged from the log.

    A stream client resuming after an id at or below it may have missed events, and is told
    to resynchronise instead of being replayed a log with a hole in it.
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    purged_through_id = models.BigIntegerField(default=0)

    class Meta:
        db_table = "notifications_eventlogstate"

    def __str__(self):
        return f"purged through #{self.purged_through_id}"
