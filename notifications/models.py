import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class Webhook(models.Model):
    """A receiver registered for some event kinds (``"*"`` for all): on a project, for that
    project's events, or on a workspace (``project`` null), for all of the workspace's events,
    its own (``workspace.*``, ``invitation.*``, ``export.*``) and every project's."""

    workspace = models.ForeignKey(
        "accounts.Workspace", on_delete=models.CASCADE, related_name="webhooks"
    )
    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="webhooks", null=True
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
    # The email telling the workspace's admins that failing switched it off: when its task was
    # last handed over (null: no email owed), the lease of the worker sending it, and when it
    # went out (notifications.services.webhook_disabled_notify and its sweep).
    disabled_notify_queued_at = models.DateTimeField(null=True, blank=True)
    disabled_notify_claimed_until = models.DateTimeField(null=True, blank=True)
    disabled_notified_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["project", "is_active"]),
            models.Index(
                fields=["workspace", "is_active"],
                condition=Q(project__isnull=True),
                name="webhook_of_workspace",
            ),
            # The sweep's question, every few seconds: which owed emails have not gone out.
            models.Index(
                fields=["disabled_notify_queued_at"],
                condition=Q(
                    disabled_notify_queued_at__isnull=False, disabled_notified_at__isnull=True
                ),
                name="webhook_disabled_notify_owed",
            ),
        ]

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
    event = models.ForeignKey("events.Event", on_delete=models.CASCADE, related_name="deliveries")
    # A redelivery asked for by a user is a new delivery (a new uuid) of the same event. It
    # goes with the delivery it repeats: with SET_NULL, deleting both together (their webhook,
    # project or event) first made the redelivery look like the event's first delivery, which
    # broke "delivery_once_per_event" (a 500).
    redelivery_of = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
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
