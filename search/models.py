"""What ``/v1/search`` reads: ``search_hit``, a view over every searchable table.

Each row is an issue, a pull request or a comment with its project, a title (a comment's is
its parent's), its text, and on PostgreSQL its search document. The view is a ``UNION ALL``:
PostgreSQL pushes the conditions on it (the projects, the match) down to each table and its
GIN index. A row's ``id`` is unique across kinds (the object's id times 4, plus 1 for an
issue, 2 for a pull request, 3 for a comment): the final tie-breaker of every ordering.
"""

from django.apps import apps
from django.db import models


class HitType(models.TextChoices):
    ISSUE = "issue"
    PULL_REQUEST = "pull_request"
    COMMENT = "comment"


# Each kind: its table and its searchable fields, in the order their weights go
# (collab.db.fulltext).
SOURCES: dict[str, tuple[str, str]] = {
    HitType.ISSUE: ("issues", "Issue"),
    HitType.PULL_REQUEST: ("gitintegration", "PullRequest"),
    HitType.COMMENT: ("comments", "Comment"),
}


def searchable_models() -> list[type[models.Model]]:
    return [apps.get_model(app_label, name) for app_label, name in SOURCES.values()]


class SearchHitSources:
    """``search_sources`` of the view, read from the searchable models once apps are ready."""

    def __get__(self, instance, owner) -> dict[str, tuple[str, dict[str, str]]]:
        return {
            kind: (model._meta.db_table, dict(model.search_fields))  # type: ignore[attr-defined]
            for kind, model in zip(SOURCES, searchable_models(), strict=True)
        }


class SearchHit(models.Model):
    id = models.BigIntegerField(primary_key=True)
    type = models.CharField(max_length=16, choices=HitType.choices)
    object_id = models.BigIntegerField()
    project = models.ForeignKey(
        "projects.Project", on_delete=models.DO_NOTHING, db_constraint=False, related_name="+"
    )
    title = models.CharField(max_length=500)
    body = models.TextField()
    issue_id = models.BigIntegerField(null=True)
    pull_request_id = models.BigIntegerField(null=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    search_sources = SearchHitSources()
    search_kind_field = "type"
    search_scope_field = "project_id"
    search_object_field = "object_id"

    class Meta:
        managed = False
        db_table = "search_hit"
        ordering = ["-id"]

    def __str__(self):
        return f"{self.type} {self.object_id}"
