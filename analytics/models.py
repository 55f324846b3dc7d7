"""Daily rollups of a project's activity, and what the rollup job has covered so far.

A ``ProjectDay`` row holds, for one project and one UTC day, the counts and duration sums
behind every metric. Rows are written only by ``analytics.services`` with upserts on the
(project, day) key, so running a rollup twice leaves the same rows. Days without any
activity have no row. The day after the last whole day stored may hold a partial row: what
happened from its midnight up to ``RollupState.partial_through``; readers count the rest of it
live from the sources.
"""

from django.db import models
from django.utils import timezone

from projects.models import Project


class ProjectDay(models.Model):
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    issues_opened = models.PositiveIntegerField(default=0)
    issues_closed = models.PositiveIntegerField(default=0)
    issues_reopened = models.PositiveIntegerField(default=0)
    # Sum over the day's closings of (closing time - the issue's creation), in seconds.
    resolution_seconds = models.BigIntegerField(default=0)
    commits = models.PositiveIntegerField(default=0)
    pull_requests_opened = models.PositiveIntegerField(default=0)
    pull_requests_merged = models.PositiveIntegerField(default=0)
    # Sum over the day's merges of (merge time - the pull request's opening), in seconds.
    review_seconds = models.BigIntegerField(default=0)
    comments = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["project", "day"]
        constraints = [
            models.UniqueConstraint(fields=["project", "day"], name="project_day_unique"),
        ]

    def __str__(self):
        return f"{self.project_id} {self.day}"


class ReopenRollup(models.Model):
    """Reopenings of one project on one UTC day, grouped by the hour of the closing each one
    undid, with the resolution seconds of those closings.

    A metric counts an issue as closed in a period when its last closing falls in it and it
    is still closed: the period's closings, less those a later reopening undid. The undone
    closings are found here, filed under the day of the reopening, which never changes once
    the day is over, so stored rows never go stale.
    """

    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    closed_hour = models.DateTimeField()
    count = models.PositiveIntegerField(default=0)
    resolution_seconds = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["project", "day", "closed_hour"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "day", "closed_hour"], name="reopen_rollup_unique"
            ),
        ]

    def __str__(self):
        return f"{self.project_id} {self.day} (closed {self.closed_hour})"


class RollupState(models.Model):
    """How far the rollups of a project go: every day up to ``through`` is stored, and, when
    ``partial_through`` is set, the next day from its midnight up to that moment (readers
    compute what comes after live); commits up to ``last_commit_id`` are counted (a sync can
    bring commits dated in the past, whose days are then rolled up again)."""

    project = models.OneToOneField(
        "projects.Project", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    through = models.DateField(null=True, blank=True)
    partial_through = models.DateTimeField(null=True, blank=True)
    last_commit_id = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"{self.project_id} through {self.through}"


class BreakdownSnapshot(models.Model):
    """A large project's issue breakdowns (by type, priority, assignee, label), stored by the
    rollup job: grouping a million issues on every dashboard request would cost seconds."""

    project = models.OneToOneField(
        "projects.Project", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    data = models.JSONField(default=dict)
    computed_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"{self.project_id} at {self.computed_at}"


class ProjectDashboard(Project):
    """A project as the admin's dashboard page shows it (a proxy: no table of its own)."""

    class Meta:
        proxy = True
        default_permissions = ("view",)
        verbose_name = "project dashboard"
