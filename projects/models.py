from django.conf import settings
from django.db import models
from django.utils import timezone


class Project(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        ARCHIVED = "archived"

    class Visibility(models.TextChoices):
        PRIVATE = "private"
        INTERNAL = "internal"
        PUBLIC = "public"

    workspace = models.ForeignKey(
        "accounts.Workspace", on_delete=models.CASCADE, related_name="projects"
    )
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    visibility = models.CharField(
        max_length=16, choices=Visibility.choices, default=Visibility.PRIVATE
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    # Set on a project by the reads that load it with more than its row (projects.selectors).
    team_count: int
    reader_id: int
    reader_role: str | None
    reader_on_team: bool

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["workspace", "visibility"])]

    def __str__(self):
        return self.name

    @property
    def is_archived(self) -> bool:
        return self.status == self.Status.ARCHIVED


class ProjectMember(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="project_memberships"
    )
    added_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="project_member_unique"),
        ]
        indexes = [models.Index(fields=["user", "project"])]

    def __str__(self):
        return f"{self.user} on {self.project}"
