"""Reads for issues and labels.

Lists go through ``.values()`` and one batched label query per page: a page of 50 issues
costs the same three queries as a page of 5, and no model instances are built for output.
"""

from collections import defaultdict
from datetime import UTC, datetime

from django.db.models import QuerySet

from projects.models import Project
from projects.selectors import project_visibility_q

from .models import Issue, IssueHistory, IssueStatusCount, Label

ISSUE_FIELDS = (
    "id",
    "project_id",
    "number",
    "title",
    "description",
    "type",
    "priority",
    "status",
    "assignee_id",
    "reporter_id",
    "created_at",
    "updated_at",
    "closed_at",
)


def visible_projects(*, user) -> QuerySet:
    return Project.objects.filter(project_visibility_q(user)).values("pk")


def assignee_allowed(*, project: Project, user) -> bool:
    """Whether ``user`` may be assigned an issue of ``project``: active, and able to see it."""
    return (
        user.is_active
        and Project.objects.filter(project_visibility_q(user), pk=project.pk).exists()
    )


def issue_list(*, user, project: Project | None = None) -> QuerySet:
    """Issues the user may see: of one project, or of every project visible to them."""
    if project is not None:
        return Issue.objects.filter(project=project)
    return Issue.objects.filter(project_id__in=visible_projects(user=user))


def issue_get(*, user, issue_id) -> Issue | None:
    return issue_list(user=user).select_related("project").filter(pk=issue_id).first()


def issue_rows(queryset) -> list[dict]:
    """The records of a (sliced) queryset, as the API shows them."""
    rows = list(queryset.values(*ISSUE_FIELDS))
    return issue_attach_labels(rows)


def issue_attach_labels(rows: list[dict]) -> list[dict]:
    names: dict[int, list[str]] = defaultdict(list)
    if rows:
        pairs = (
            Issue.labels.through.objects.filter(issue_id__in=[row["id"] for row in rows])
            .order_by("label__name")
            .values_list("issue_id", "label__name")
        )
        for issue_id, name in pairs:
            names[issue_id].append(name)
    for row in rows:
        row["labels"] = names[row["id"]]
    return rows


def issue_record(issue: Issue) -> dict:
    """One issue as plain JSON values: for responses, history and event payloads alike."""
    row = issue_rows(Issue.objects.filter(pk=issue.pk))[0]
    return {
        name: iso_z(value) if isinstance(value, datetime) else value for name, value in row.items()
    }


def iso_z(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def issue_count(*, project_ids: QuerySet | list[int], statuses: list[str] | None) -> int:
    """Exact number of issues in these projects (and statuses), from the kept counters."""
    counts = IssueStatusCount.objects.filter(project_id__in=project_ids)
    if statuses:
        counts = counts.filter(status__in=statuses)
    # Summed here: at most three rows per project, and a plain SELECT costs less than an
    # aggregate to build on every list request.
    return sum(counts.values_list("count", flat=True))


def issue_history(*, issue: Issue) -> QuerySet:
    return IssueHistory.objects.filter(issue=issue).order_by("id")


def label_list(*, project: Project) -> QuerySet:
    return Label.objects.filter(project=project).order_by("name")


def label_get(*, user, label_id) -> Label | None:
    return (
        Label.objects.filter(project_id__in=visible_projects(user=user))
        .select_related("project")
        .filter(pk=label_id)
        .first()
    )
