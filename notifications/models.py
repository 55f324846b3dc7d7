import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from collab.api.renderers import iso_z


class Event(models.Model):
    """One entry of the durable event log (CONTRACT section 6).

    Ids increase; workspace, project and actor are kept as plain ids so that the log
    outlives what it speaks of (a deleted project's events stay readable).
    ``dispatched_at`` is set once the event's webhook deliveries exist: the sweeper hands
    every event still without it to the fan-out, so a broker outage at commit loses nothing.
    """

    id = models.BigAutoField(primary_key=True)
    type = models.CharField(max_length=64)
    workspace_id = models.BigIntegerField(db_index=True)
    project_id = models.BigIntegerField(null=True, blank=True)
    actor_id = models.BigIntegerField(null=True, blank=True)
    data = models.JSONField(default=dict)
    changes = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    dispatched_at = models.DateTimeField(null=True, blank=True)

    class Meta:
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
            "data": data,
        }


class EventLogState(models.Model):
    """A single row: the highest event id ever purged from the log.

    A stream client resuming after an id at or below it may have missed events, and is told
    to resynchronise instead of being replayed a log with a hole in it.
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    purged_through_id = models.BigIntegerField(default=0)

    def __str__(self):
        return f"purged through #{self.purged_through_id}"


class Webhook(models.Model):
    """A receiver registered on a project for some event kinds (``"*"`` for all)."""

    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="webhooks"
    )
    url = models.URLField(max_length=2000)
    events = models.JSONField(default=list)
    # Fernet token of the secret (notifications/crypto.py): never stored or shown in clear.
    secret_encrypted = models.TextField()
    description = models.CharField(max_length=200, blank=True, default="")
    is_active = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=200, blank=True, default="")
    # Start of the current run of failed attempts; cleared by any success.
    failing_since = models.DateTimeField(null=True, blank=True)
    last_delivery_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["project", "is_active"])]

    def __str__(self):
        return self.url


class Delivery(models.Model):
    """One event for one webhook: retried under the same ``uuid`` until it succeeds or
    gives up. ``next_attempt_at`` is when it is due; ``claimed_until`` is the lease of the
    worker sending it, so a killed worker's delivery is picked up again once it lapses."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    # A redelivery asked for by a user is a new delivery (a new uuid) of the same event.
    redelivery_of = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    claimed_until = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            # The fan-out may run twice for one event: it makes one delivery per hook.
            models.UniqueConstraint(
                fields=["webhook", "event"],
                condition=Q(redelivery_of__isnull=True),
                name="delivery_once_per_event",
            ),
        ]
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(status="pending"),
                name="delivery_due",
            ),
            models.Index(fields=["webhook", "-id"], name="delivery_webhook"),
        ]
        verbose_name_plural = "deliveries"

    def __str__(self):
        return f"{self.uuid} ({self.status})"


class DeliveryAttempt(models.Model):
    """One POST of a delivery: what was sent and what came back."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField(default=timezone.now)
    duration_ms = models.PositiveIntegerField(default=0)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True, default="")
    response_excerpt = models.TextField(blank=True, default="")
    request_headers = models.JSONField(default=dict)

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [
            models.UniqueConstraint(fields=["delivery", "number"], name="attempt_unique_number")
        ]

    def __str__(self):
        return f"{self.delivery_id} #{self.number}"
