"""Reads for comments: a thread, one comment, its previous bodies, who a body may notify."""

from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from accounts.models import User
from gitintegration.models import PullRequest
from issues.models import Issue
from projects.models import Project
from projects.selectors import project_audience_q, project_visibility_q

from .models import Comment, CommentRevision
from .records import COMMENT_FIELDS


def comment_thread(*, parent: Issue | PullRequest) -> QuerySet[Comment, dict[str, Any]]:
    """The comments of an issue or a pull request, oldest first, as record rows."""
    if isinstance(parent, Issue):
        comments = Comment.objects.filter(issue=parent)
    else:
        comments = Comment.objects.filter(pull_request=parent)
    rows: QuerySet[Comment, dict[str, Any]] = comments.order_by("created_at", "id").values(
        *COMMENT_FIELDS
    )
    return rows


def comment_get(*, user: User, comment_id: int | str) -> Comment | None:
    """A comment whose project the user may see (anything else is as if it did not exist)."""
    return (
        Comment.objects.filter(project_visibility_q(user, prefix="project__"))
        .select_related("project")
        .filter(pk=comment_id)
        .first()
    )


def comment_revisions(*, comment: Comment) -> QuerySet[CommentRevision]:
    return CommentRevision.objects.filter(comment=comment).order_by("id")


def mention_audience(*, project: Project, handles: list[str], author: User | None) -> list[User]:
    """The active users of these handles who may see the project, the author aside: whom a
    body mentioning them notifies. Anyone else named is ignored, and nothing says so. Service
    accounts are among them only where ``MENTION_SERVICE_ACCOUNTS`` is on."""
    if not handles:
        return []
    users = User.objects.filter(
        project_audience_q(project), handle__in=handles, status=User.Status.ACTIVE
    )
    if not settings.MENTION_SERVICE_ACCOUNTS:
        users = users.filter(kind=User.Kind.PERSON)
    if author is not None:
        users = users.exclude(pk=author.pk)
    return list(users.order_by("id"))
