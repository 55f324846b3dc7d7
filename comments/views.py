from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.decorators import action

from collab.api.exceptions import Forbidden
from collab.api.permissions import MANAGE, READ, WRITE, require_scope
from gitintegration import selectors as pull_selectors
from issues import selectors as issue_selectors
from projects.viewsets import ProjectAccessViewSet

from . import records, selectors, services
from .filters import CommentFilter
from .models import Comment
from .serializers import CommentInputSerializer, CommentRevisionSerializer, CommentSerializer
from .services import Parent

# Comments are read as their parent is: an issue's with ``issues:read``, a pull request's with
# ``projects:read``; written (posted, edited, deleted by their author) with ``issues:write``.
READ_SCOPE = {"issue": "issues:read", "pull_request": "projects:read"}
NOT_AUTHOR = OpenApiResponse(description="Only the author edits a comment.")


class ThreadViewSet(ProjectAccessViewSet):
    """A thread under its parent: list it oldest first, or add to it."""

    scope_group = "issues"
    queryset = Comment.objects.none()
    filterset_class = CommentFilter
    parent_kind = ""

    def required_scope(self) -> str | None:
        if self.request.method in ("GET", "HEAD", "OPTIONS"):
            return READ_SCOPE[self.parent_kind]
        return super().required_scope()

    def find_parent(self) -> Parent | None:
        raise NotImplementedError

    def get_parent(self) -> Parent:
        parent = self.find_parent()
        if parent is None:
            raise Http404
        self.check_project_ability(services.parent_project(parent), self.required_ability())
        return parent

    @extend_schema(responses={200: CommentSerializer(many=True)})
    def list(self, request, **kwargs):
        parent = self.get_parent()
        if "since" not in request.query_params:
            # The parent's kept count is the thread's exact length: no COUNT over it.
            self.page_counter = lambda queryset: parent.comment_count
        rows = self.filter_queryset(selectors.comment_thread(parent=parent))
        page = self.paginate_queryset(rows) or []
        return self.get_paginated_response([records.comment_record_from_row(r) for r in page])

    @extend_schema(request=CommentInputSerializer, responses={201: CommentSerializer})
    def create(self, request, **kwargs):
        parent = self.get_parent()
        data = self.validated(CommentInputSerializer)
        record = services.comment_create(parent=parent, actor=self.actor, body=data["body"])
        return self.created(record, f"/v1/comments/{record['id']}")


class IssueCommentViewSet(ThreadViewSet):
    """``/v1/issues/:issue_id/comments``."""

    parent_kind = "issue"

    def find_parent(self) -> Parent | None:
        return issue_selectors.issue_get(user=self.actor, issue_id=self.kwargs["issue_id"])


class PullCommentViewSet(ThreadViewSet):
    """``/v1/pulls/:pull_id/comments``."""

    parent_kind = "pull_request"

    def find_parent(self) -> Parent | None:
        return pull_selectors.pull_request_get(user=self.actor, pull_id=self.kwargs["pull_id"])


class CommentViewSet(ProjectAccessViewSet):
    """``/v1/comments/:id``: one comment, its edits and its deletion."""

    scope_group = "issues"
    queryset = Comment.objects.none()
    # Reads need the parent's read scope, known once the comment is found; an author deletes
    # their own comment with the scope that wrote it (anyone else's needs ``issues:admin``).
    action_scopes = {"retrieve": "", "history": "", "destroy": "issues:write"}

    def get_comment(self, pk, *, ability: str) -> Comment:
        comment = selectors.comment_get(user=self.actor, comment_id=pk)
        if comment is None:
            raise Http404
        if ability == READ:
            require_scope(self.request, READ_SCOPE["issue" if comment.issue_id else "pull_request"])
        self.check_project_ability(comment.project, ability)
        return comment

    @extend_schema(responses={200: CommentSerializer})
    def retrieve(self, request, pk=None):
        return self.ok(records.comment_record(self.get_comment(pk, ability=READ)))

    @extend_schema(
        request=CommentInputSerializer, responses={200: CommentSerializer, 403: NOT_AUTHOR}
    )
    def partial_update(self, request, pk=None):
        """Change the body of your own comment; the body it replaces is kept in its history."""
        comment = self.get_comment(pk, ability=WRITE)
        if comment.author_id != self.actor.pk:
            raise Forbidden(
                "Only the author of a comment can edit it.",
                details={"author_id": comment.author_id},
            )
        data = self.validated(CommentInputSerializer)
        return self.ok(services.comment_update(comment=comment, actor=self.actor, **data))

    @extend_schema(responses={200: None})
    def destroy(self, request, pk=None):
        """Delete your own comment, or, as a workspace owner or admin, anyone's."""
        comment = self.get_comment(pk, ability=WRITE)
        if comment.author_id != self.actor.pk:
            require_scope(request, "issues:admin")
            self.check_project_ability(comment.project, MANAGE)
        services.comment_delete(comment=comment, actor=self.actor)
        return self.deleted()

    @extend_schema(responses={200: CommentRevisionSerializer(many=True)}, filters=False)
    @action(detail=True, methods=["get"], filterset_class=None)
    def history(self, request, pk=None):
        """The bodies the comment had before each edit, oldest first."""
        comment = self.get_comment(pk, ability=READ)
        page = self.paginate_queryset(selectors.comment_revisions(comment=comment)) or []
        return self.get_paginated_response([records.revision_record(r) for r in page])
