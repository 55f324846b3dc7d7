from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

BODY_MAX_LENGTH = 65_536


class Comment(models.Model):
    """One comment on an issue or on a pull request (exactly one of the two)."""

    # The parent's project, kept on the row: every read is scoped by it without a join.
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    issue = models.ForeignKey(
        "issues.Issue", on_delete=models.CASCADE, null=True, blank=True, related_name="comments"
    )
    pull_request = models.ForeignKey(
        "gitintegration.PullRequest",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="comments",
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    body = models.TextField(max_length=BODY_MAX_LENGTH)
    # Rendered and sanitised when written (comments.markdown), served as stored.
    body_html = models.TextField()
    edited = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    # The text /v1/search searches (collab.db.fulltext), weighing as a description does.
    search_fields = {"body": "B"}

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(issue__isnull=False, pull_request__isnull=True)
                | Q(issue__isnull=True, pull_request__isnull=False),
                name="comment_one_parent",
            ),
        ]
        indexes = [
            # A thread, oldest first: pages of any depth read in index order.
            models.Index(
                fields=["issue", "created_at", "id"],
                name="comment_issue_thread",
                condition=Q(issue__isnull=False),
            ),
            models.Index(
                fields=["pull_request", "created_at", "id"],
                name="comment_pull_thread",
                condition=Q(pull_request__isnull=False),
            ),
            models.Index(fields=["project", "created_at"], name="comment_project_created"),
        ]

    def __str__(self):
        parent = f"issue {self.issue_id}" if self.issue_id else f"pull {self.pull_request_id}"
        return f"comment {self.pk} on {parent}"


class CommentRevision(models.Model):
    """A body a comment had before an edit replaced it."""

    comment = models.ForeignKey(Comment, on_delete=models.CASCADE, related_name="revisions")
    body = models.TextField()
    # Who wrote this body, and when; and when an edit replaced it.
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField()
    replaced_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["comment", "id"], name="comment_revision_order")]

    def __str__(self):
        return f"revision {self.pk} of comment {self.comment_id}"


class Mention(models.Model):
    """A member who can see the parent, ``@mentioned`` in some version of a comment: one row per
    comment and person, which is what makes the notification go out at most once."""

    comment = models.ForeignKey(Comment, on_delete=models.CASCADE, related_name="mentions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # The comment's parent, copied so the issue lists' ``mentioned`` filter needs no join.
    issue = models.ForeignKey(
        "issues.Issue",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="comment_mentions",
    )
    pull_request = models.ForeignKey(
        "gitintegration.PullRequest",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="comment_mentions",
    )
    created_at = models.DateTimeField(default=timezone.now)
    notified_at = models.DateTimeField(null=True, blank=True)
    # A sender's claim on the email (comments.services.mentions_notify): past it, another may.
    notify_claimed_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["comment", "user"], name="mention_once_per_comment"),
        ]
        indexes = [models.Index(fields=["user", "issue"], name="mention_user_issue")]

    def __str__(self):
        return f"user {self.user_id} in comment {self.comment_id}"
