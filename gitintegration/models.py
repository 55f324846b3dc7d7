import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone


def _new_webhook_secret() -> str:
    return secrets.token_hex(20)


class Repository(models.Model):
    class SyncStatus(models.TextChoices):
        PENDING = "pending"
        SYNCING = "syncing"
        SYNCED = "synced"
        FAILED = "failed"

    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="repositories"
    )
    name = models.CharField(max_length=100)
    clone_url = models.CharField(max_length=2000)
    default_branch = models.CharField(max_length=255, blank=True, default="")
    sync_status = models.CharField(
        max_length=16, choices=SyncStatus.choices, default=SyncStatus.PENDING
    )
    sync_error = models.TextField(blank=True, default="")
    last_synced_at = models.DateTimeField(null=True, blank=True)
    # Signs push notifications (X-Hub-Signature-256); shown once to whoever registers it.
    webhook_secret = models.CharField(max_length=64, default=_new_webhook_secret)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "repositories"
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="repository_unique_name"),
        ]

    def __str__(self):
        return self.name


class Branch(models.Model):
    """A branch as the mirror had it at the last sync."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="branches")
    name = models.CharField(max_length=255)
    commit_sha = models.CharField(max_length=40)
    is_default = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "branches"
        constraints = [
            models.UniqueConstraint(fields=["repository", "name"], name="branch_unique_name"),
        ]

    def __str__(self):
        return self.name


class Commit(models.Model):
    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="commits")
    sha = models.CharField(max_length=40)
    author_name = models.CharField(max_length=255, blank=True, default="")
    author_email = models.CharField(max_length=255, blank=True, default="")
    message = models.TextField(blank=True, default="")
    authored_at = models.DateTimeField()
    committed_at = models.DateTimeField()

    class Meta:
        ordering = ["-committed_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["repository", "sha"], name="commit_unique_sha"),
        ]
        indexes = [
            models.Index(fields=["repository", "committed_at"], name="commit_repo_committed"),
        ]

    def __str__(self):
        return self.sha[:12]


class PullRequestSequence(models.Model):
    """The last pull request number of a repository, advanced with UPDATE ... RETURNING."""

    repository = models.OneToOneField(
        Repository, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    last_number = models.PositiveIntegerField(default=0)

    def __str__(self):
        return f"{self.repository_id}: {self.last_number}"


class PullRequest(models.Model):
    class State(models.TextChoices):
        OPEN = "open"
        CLOSED = "closed"
        MERGED = "merged"

    repository = models.ForeignKey(
        Repository, on_delete=models.CASCADE, related_name="pull_requests"
    )
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=500)
    description = models.TextField(blank=True, default="")
    head = models.CharField(max_length=255)
    base = models.CharField(max_length=255)
    state = models.CharField(max_length=16, choices=State.choices, default=State.OPEN)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="pull_requests",
    )
    head_sha = models.CharField(max_length=40, blank=True, default="")
    base_sha = models.CharField(max_length=40, blank=True, default="")
    merge_commit_sha = models.CharField(max_length=40, blank=True, default="")
    merge_method = models.CharField(max_length=16, blank=True, default="")
    merged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    merged_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    # Kept by the comments' services in their transactions; never counted per request.
    comment_count = models.PositiveIntegerField(default=0, db_default=0)

    # The text /v1/search searches (collab.db.fulltext): the title weighs more.
    search_fields = {"title": "A", "description": "B"}

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["repository", "number"], name="pull_request_unique_number"
            ),
            # One open pull request per (head, base) pair; the service checks first for a 422,
            # this catches the race between two creates.
            models.UniqueConstraint(
                fields=["repository", "head", "base"],
                condition=models.Q(state="open"),
                name="pull_request_one_open_per_pair",
            ),
        ]
        indexes = [
            models.Index(fields=["state", "merged_at"], name="pull_request_state_merged"),
            models.Index(fields=["repository", "state", "-created_at"], name="pull_request_repo"),
        ]

    def __str__(self):
        return f"#{self.number} {self.title}"


class Review(models.Model):
    class State(models.TextChoices):
        APPROVED = "approved"
        CHANGES_REQUESTED = "changes_requested"
        COMMENTED = "commented"

    pull_request = models.ForeignKey(PullRequest, on_delete=models.CASCADE, related_name="reviews")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    state = models.CharField(max_length=24, choices=State.choices)
    body = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["pull_request", "created_at"])]

    def __str__(self):
        return f"{self.state} on {self.pull_request_id}"
