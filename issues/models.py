from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone


class IssueType(models.TextChoices):
    BUG = "bug"
    FEATURE = "feature"
    TASK = "task"
    IMPROVEMENT = "improvement"


class Priority(models.TextChoices):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


class Status(models.TextChoices):
    OPEN = "open"
    IN_PROGRESS = "in_progress"
    CLOSED = "closed"


# Sorting by priority means by urgency, not alphabetically.
PRIORITY_RANK: dict[str, int] = {
    Priority.LOW: 0,
    Priority.MEDIUM: 1,
    Priority.HIGH: 2,
    Priority.CRITICAL: 3,
}


class Label(models.Model):
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="labels")
    name = models.CharField(max_length=50)
    color = models.CharField(max_length=7, default="#6b7280")
    description = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="label_unique_name"),
        ]

    def __str__(self):
        return self.name


class Issue(models.Model):
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="issues")
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=500)
    description = models.TextField(blank=True, default="")
    type = models.CharField(max_length=16, choices=IssueType.choices, default=IssueType.TASK)
    priority = models.CharField(max_length=16, choices=Priority.choices, default=Priority.MEDIUM)
    priority_rank = models.PositiveSmallIntegerField(default=PRIORITY_RANK[Priority.MEDIUM])
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="assigned_issues",
    )
    reporter = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="reported_issues",
    )
    labels = models.ManyToManyField(Label, blank=True, related_name="issues")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    closed_at = models.DateTimeField(null=True, blank=True)
    # Kept by the comments' services in their transactions; never counted per request.
    comment_count = models.PositiveIntegerField(default=0, db_default=0)

    # The text ``q`` searches (collab.db.fulltext): the title weighs more than the description.
    search_fields = {"title": "A", "description": "B"}
    # What "best first" walks one of, newest first (collab.db.fulltext.CandidateScore).
    search_scope_field = "project_id"

    # Set by issue_create on the issue it made: its record as written (an IssueRecord of
    # issues.records, which imports this module), answered as is.
    record: dict[str, Any]

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "number"], name="issue_unique_number"),
        ]
        indexes = [
            models.Index(fields=["project", "status", "-created_at"], name="issue_project_status"),
            models.Index(fields=["project", "-created_at"], name="issue_project_created"),
            models.Index(fields=["project", "assignee", "status"], name="issue_project_assignee"),
            models.Index(fields=["assignee", "status"], name="issue_assignee_status"),
        ]

    def __str__(self):
        return f"#{self.number} {self.title}"

    @property
    def is_closed(self) -> bool:
        return self.status == Status.CLOSED


class IssueSequence(models.Model):
    """The last issue number handed out in a project, advanced with UPDATE ... RETURNING."""

    project = models.OneToOneField(
        "projects.Project", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    last_number = models.PositiveIntegerField(default=0)

    def __str__(self):
        return f"{self.project_id}: {self.last_number}"


class IssueStatusCount(models.Model):
    """How many issues a project has in each status, kept in the write transactions.

    It gives list pages an exact total without counting rows on every request.
    """

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=16, choices=Status.choices)
    count = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "status"], name="issue_count_unique"),
        ]

    def __str__(self):
        return f"{self.project_id} {self.status}: {self.count}"


class IssueFacetCount(models.Model):
    """How many issues of a project in a status have one value of one other field, or a change
    of that number (see ``issues.facets``: triggers write these rows, not code)."""

    # No constraint: the triggers may write a row while the project is being deleted; the
    # rows of a deleted project go with it (``issues.signals``).
    project = models.ForeignKey(
        "projects.Project",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    status = models.CharField(max_length=16, choices=Status.choices)
    facet = models.CharField(max_length=16)
    value = models.CharField(max_length=64)
    count = models.BigIntegerField(default=0)
    # False on what the triggers append; ``facets.compact`` folds those rows' keys.
    folded = models.BooleanField(db_default=False)

    class Meta:
        # Several rows per key until ``facets.compact`` folds them: a count is their sum.
        indexes = [
            models.Index(fields=["project", "facet", "value", "status"], name="issue_facet_key"),
            models.Index(
                fields=["project"], condition=models.Q(folded=False), name="issue_facet_unfolded"
            ),
        ]

    def __str__(self):
        return f"{self.project_id} {self.status} {self.facet}={self.value}: {self.count}"


class IssueHistory(models.Model):
    """One change of one field of an issue (or its creation, with ``field`` "created")."""

    issue = models.ForeignKey(Issue, on_delete=models.CASCADE, related_name="history")
    field = models.CharField(max_length=32)
    old_value = models.JSONField(null=True, blank=True)
    new_value = models.JSONField(null=True, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    # The actor's kind and the credential it acted through (collab.api.acting), as an event's.
    actor_detail = models.JSONField(null=True, blank=True)
    source = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "issue history"
        indexes = [models.Index(fields=["issue", "id"])]

    def __str__(self):
        return f"{self.issue_id} {self.field}"
