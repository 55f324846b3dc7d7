from django.db import models
from django.utils import timezone


class Event(models.Model):
    """One entry of the durable event log (CONTRACT section 6).

    Ids increase; workspace, project and actor are kept as plain ids so that the log
    outlives what it speaks of (a deleted project's events stay readable).
    """

    id = models.BigAutoField(primary_key=True)
    type = models.CharField(max_length=64)
    workspace_id = models.BigIntegerField(db_index=True)
    project_id = models.BigIntegerField(null=True, blank=True)
    actor_id = models.BigIntegerField(null=True, blank=True)
    data = models.JSONField(default=dict)
    changes = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["project_id", "id"]),
            models.Index(fields=["type", "id"]),
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
            "created_at": self.created_at.isoformat().replace("+00:00", "Z"),
            "workspace_id": self.workspace_id,
            "project_id": self.project_id,
            "actor_id": self.actor_id,
            "data": data,
        }
