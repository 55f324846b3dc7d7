from django.db import models
from django.db.models import Q


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
