from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class GithubLink(models.Model):
    """A GitHub record brought into a project, and what it became here: what makes running the
    GitHub import again update these records instead of making them twice.

    The unique constraint is the idempotency: two runs at once cannot both link one GitHub
    record, and the one that loses rolls back what it made for it.
    """

    class Kind(models.TextChoices):
        ISSUE = "issue"  # an issue, or a pull request kept as an issue
        COMMENT = "comment"
        LABEL = "label"

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # GitHub's id of the record (per kind, unique on its server), and its global node id.
    github_id = models.BigIntegerField()
    node_id = models.CharField(max_length=100, blank=True, default="")
    # The record's ``updated_at`` on GitHub when it was last brought in: unchanged since, it is
    # skipped.
    github_updated_at = models.DateTimeField(null=True, blank=True)
    # What it became here (one of them, as ``kind`` says); deleted here, the link goes with it
    # and a later run brings the record in again.
    issue = models.ForeignKey(
        "issues.Issue", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    comment = models.ForeignKey(
        "comments.Comment", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    label = models.ForeignKey(
        "issues.Label", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    imported_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "kind", "github_id"], name="github_link_once"
            ),
            models.CheckConstraint(
                condition=(
                    Q(kind="issue", issue__isnull=False, comment__isnull=True, label__isnull=True)
                    | Q(
                        kind="comment",
                        issue__isnull=True,
                        comment__isnull=False,
                        label__isnull=True,
                    )
                    | Q(kind="label", issue__isnull=True, comment__isnull=True, label__isnull=False)
                ),
                name="github_link_one_target",
            ),
        ]

    def __str__(self):
        return f"github {self.kind} {self.github_id} in project {self.project_id}"


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
