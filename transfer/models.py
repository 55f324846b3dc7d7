from django.conf import settings
from django.db import models
from django.utils import timezone


class Export(models.Model):
    """A workspace's archive asked for over HTTP, built by a worker and kept in the "exports"
    storage until ``expires_at``."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        COMPLETED = "completed"
        FAILED = "failed"

    workspace = models.ForeignKey(
        "accounts.Workspace", on_delete=models.CASCADE, related_name="exports"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    include_events = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    # Until when the worker building it holds it; past it the sweep hands it to another.
    lease_until = models.DateTimeField(null=True, blank=True)
    size = models.BigIntegerField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, null=True, blank=True)
    # The archive's name in the exports storage, and how it is compressed (its Content-Type).
    file_name = models.CharField(max_length=500, null=True, blank=True)
    content_type = models.CharField(max_length=100, null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            # One archive at a time per workspace: a second ask while one is being built is
            # a 409, not a second full read of the workspace queued behind the first.
            models.UniqueConstraint(
                fields=["workspace"],
                condition=models.Q(status__in=["pending", "running"]),
                name="export_one_in_progress_per_workspace",
            ),
        ]
        indexes = [
            models.Index(fields=["workspace", "-id"], name="export_workspace_newest"),
            models.Index(fields=["expires_at"], name="export_expires_at"),
            models.Index(fields=["status", "created_at"], name="export_status_created"),
        ]

    def __str__(self):
        return f"Export {self.pk} of workspace {self.workspace_id} ({self.status})"
