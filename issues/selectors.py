"""Reads for issues and labels.

Lists go through ``.values()`` and one batched label query per page: a page of 50 issues
costs the same three queries as a page of 5, and no model instances are built for output.
"""

from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery

from accounts.models import User
from projects.models import Project
from projects.selectors import (
    project_audience_q,
    project_seen,
    project_visibility_q,
    reader_annotations,
)

from .models import Issue, IssueHistory, IssueStatusCount, Label, Status


def visible_projects(*, user: User) -> QuerySet[Project, Any]:
    return Project.objects.filter(project_visibility_q(user)).values("pk")


def assignee_allowed(*, project: Project, user: User) -> bool:
    """Whether ``user`` may be assigned an issue of ``project``: active, and able to see it."""
    return user.is_active and assignee_id_allowed(project=project, user_id=user.pk)


def assignee_id_allowed(*, project: Project, user_id: int) -> bool:
    """``assignee_allowed`` for the user of this id, in one query (whether one exists too)."""
    return User.objects.filter(
        project_audience_q(project), pk=user_id, status=User.Status.ACTIVE
    ).exists()


def issue_list(*, user: User, project: Project | None = None) -> QuerySet[Issue]:
    """Issues the user may see: of one project, or of every project visible to them."""
    if project is not None:
        return Issue.objects.filter(project=project)
    return Issue.objects.filter(project_id__in=visible_projects(user=user))


def issue_get(*, user: User, issue_id: int | str) -> Issue | None:
    """The issue with its project if the user may see it, else None, in one query: the
    reader's role and team seat come with the row (``projects.selectors.reader_annotations``),
    so neither visibility nor the request's role check costs another."""
    reader = reader_annotations(
        user_id=user.pk, project="project_id", workspace="project__workspace_id"
    )
    issue = (
        Issue.objects.select_related("project")
        .annotate(reader_role=reader["reader_role"], reader_on_team=reader["reader_on_team"])
        .filter(pk=issue_id)
        .first()
    )
    if issue is None:
        return None
    project = issue.project
    project.reader_role, project.reader_on_team = issue.reader_role, issue.reader_on_team
    return issue if project_seen(project, user=user) else None


def issue_count(
    *, project_ids: QuerySet[Project, Any] | list[int], statuses: list[str] | None
) -> int:
    """Exact number of issues in these projects (and statuses), from the kept counters."""
    counts = IssueStatusCount.objects.filter(project_id__in=project_ids)
    if statuses:
        counts = counts.filter(status__in=statuses)
    # Summed here: at most three rows per project, and a plain SELECT costs less than an
    # aggregate to build on every list request.
    return sum(counts.values_list("count", flat=True))


def project_issue_counts() -> dict[str, Subquery]:
    """A project's kept counters, one per status, as expressions over the project's row: a
    ``ProjectLookup`` reads them in the project's own query (``project_issue_count``)."""
    return {
        f"issues_{status}": Subquery(
            IssueStatusCount.objects.filter(project=OuterRef("pk"), status=status).values("count")[
                :1
            ]
        )
        for status in Status.values
    }


def project_issue_count(project: Project, *, statuses: list[str] | None) -> int:
    """Exact number of the project's issues (in these statuses), from the counters read with
    it through ``project_issue_counts``."""
    return sum(getattr(project, f"issues_{status}") or 0 for status in statuses or Status.values)


def issue_history(*, issue: Issue) -> QuerySet[IssueHistory]:
    return IssueHistory.objects.filter(issue=issue).order_by("id")


def label_list(*, project: Project) -> QuerySet[Label]:
    return Label.objects.filter(project=project).order_by("name")


def label_get(*, user: User, label_id: int | str) -> Label | None:
    return (
        Label.objects.filter(project_id__in=visible_projects(user=user))
        .select_related("project")
        .filter(pk=label_id)
        .first()
    )
