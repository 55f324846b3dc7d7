from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from collab.api.exceptions import BadRequest, Conflict, Unauthorized, ValidationFailed
from collab.api.permissions import MANAGE, READ, WRITE
from collab.api.ratelimit import OwnBudget
from collab.api.viewsets import ApiViewSet
from projects.viewsets import ProjectAccessViewSet, ProjectScopedViewSet

from . import git, records, selectors, services
from .filters import PullRequestFilter
from .models import PullRequest, Repository
from .serializers import (
    BranchSerializer,
    CommitSerializer,
    MergeInputSerializer,
    PullRequestInputSerializer,
    PullRequestSerializer,
    PullRequestUpdateSerializer,
    PushAcceptedSerializer,
    RepositoryCreatedSerializer,
    RepositoryInputSerializer,
    RepositorySerializer,
    ReviewInputSerializer,
    ReviewSerializer,
)

CONFLICT = OpenApiResponse(description="A conflict, a branch gone, or a pull request not open.")
BAD_SIGNATURE = OpenApiResponse(
    description="No repository by this id, or X-Hub-Signature-256 missing or wrong."
)


def push_path(repository: Repository) -> str:
    return f"/v1/repositories/{repository.pk}/push"


class RepositoryMixin(ProjectAccessViewSet):
    """Resolves the repository in the URL once, through the project visibility rule."""

    repository_lookup_kwarg = "pk"

    def get_repository(self, *, ability: str | None = None) -> Repository:
        cached = getattr(self, "_repository", None)
        if cached is None:
            cached = selectors.repository_get(
                user=self.actor, repository_id=self.kwargs[self.repository_lookup_kwarg]
            )
            if cached is None:
                raise Http404
            self._repository = cached
        self.check_project_ability(cached.project, ability or self.required_ability())
        return cached


class ProjectRepositoryViewSet(ProjectScopedViewSet):
    """``/v1/projects/:project_id/repositories``."""

    scope_group = "projects"
    queryset = Repository.objects.none()
    action_scopes = {"create": "projects:admin"}
    action_abilities = {"create": MANAGE}

    @extend_schema(responses={200: RepositorySerializer(many=True)})
    def list(self, request, project_id=None):
        project = self.get_project()
        repositories = selectors.repository_list(project=project)
        page = self.paginate_queryset(repositories)
        return self.get_paginated_response([records.repository_record(r) for r in page])

    @extend_schema(request=RepositoryInputSerializer, responses={201: RepositoryCreatedSerializer})
    def create(self, request, project_id=None):
        """Register a git repository by its clone URL; its first sync runs in the background.
        The answer carries the push notification secret, shown this once."""
        project = self.get_project()
        data = self.validated(RepositoryInputSerializer)
        repository = services.repository_create(
            project=project, actor=request.user, name=data["name"], clone_url=data["clone_url"]
        )
        record = records.repository_record(repository)
        record["webhook_secret"] = repository.webhook_secret
        record["push_url"] = request.build_absolute_uri(push_path(repository))
        return self.created(record, f"/v1/repositories/{repository.pk}")


class RepositoryViewSet(RepositoryMixin, ProjectAccessViewSet):
    """``/v1/repositories/:id``: one repository, its branches and commits."""

    scope_group = "projects"
    queryset = Repository.objects.none()

    @extend_schema(responses={200: RepositorySerializer})
    def retrieve(self, request, pk=None):
        return self.ok(records.repository_record(self.get_repository()))

    @extend_schema(responses={200: None})
    def destroy(self, request, pk=None):
        """Unregister the repository (its mirror, commits and pull requests go with it)."""
        services.repository_delete(repository=self.get_repository(), actor=request.user)
        return self.deleted()

    @extend_schema(request=None, responses={202: RepositorySerializer})
    @action(detail=True, methods=["post"])
    def sync(self, request, pk=None):
        """Ask for a sync now; `sync_status` and `last_synced_at` tell when it is done."""
        repository = self.get_repository(ability=WRITE)
        services.repository_sync_request(repository=repository)
        repository.refresh_from_db()
        return Response(records.repository_record(repository), status=202)

    @extend_schema(responses={200: BranchSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def branches(self, request, pk=None):
        """The branches as of the last sync, the default one first."""
        repository = self.get_repository(ability=READ)
        page = self.paginate_queryset(selectors.branch_list(repository=repository))
        return self.get_paginated_response([records.branch_record(b) for b in page])

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "branch",
                {"type": "string", "minLength": 1},
                description="Only the commits of this branch (as of the last sync), in git's "
                "order. Without it: every indexed commit, the most recently committed first.",
            )
        ],
        responses={
            200: CommitSerializer(many=True),
            409: OpenApiResponse(description="The mirror cannot be read: sync first."),
            422: OpenApiResponse(description="No branch of this name (details.branch)."),
        },
    )
    @action(detail=True, methods=["get"])
    def commits(self, request, pk=None):
        repository = self.get_repository(ability=READ)
        name = request.query_params.get("branch")
        if name == "":
            raise BadRequest("'branch' must name a branch.", details={"branch": ["Empty."]})
        if name is None:
            commits = selectors.commit_list(repository=repository)
        else:
            branch = selectors.branch_get(repository=repository, name=name)
            if branch is None:
                raise ValidationFailed.field("branch", f"The repository has no branch '{name}'.")
            commits = selectors.BranchHistory(repository, branch.commit_sha)
        page = self.paginate_queryset(commits)
        return self.get_paginated_response([records.commit_record(c) for c in page])


class RepositoryPullViewSet(RepositoryMixin, ProjectAccessViewSet):
    """``/v1/repositories/:repository_id/pulls``."""

    scope_group = "projects"
    queryset = PullRequest.objects.none()
    filterset_class = PullRequestFilter
    repository_lookup_kwarg = "repository_id"

    @extend_schema(responses={200: PullRequestSerializer(many=True)})
    def list(self, request, repository_id=None):
        repository = self.get_repository()
        pulls = self.filter_queryset(selectors.pull_request_list(repository=repository))
        page = self.paginate_queryset(pulls)
        return self.get_paginated_response([records.pull_request_record(p) for p in page])

    def locks_before_transaction(self):
        # Opening one reads the repository's mirror under its lock, then writes.
        if self.action != "create":
            return []
        return [git.mirror_lock(self.get_repository().pk)]

    @extend_schema(
        request=PullRequestInputSerializer, responses={201: PullRequestSerializer, 409: CONFLICT}
    )
    def create(self, request, repository_id=None):
        """Open a pull request of `head` into `base`: existing, different branches, with no
        other open pull request for the same pair."""
        repository = self.get_repository()
        data = self.validated(PullRequestInputSerializer)
        pull = services.pull_request_create(repository=repository, actor=request.user, **data)
        return self.created(records.pull_request_record(pull), f"/v1/pulls/{pull.pk}")


class PullRequestMixin(ProjectAccessViewSet):
    def get_pull(self, pk, *, ability: str | None = None) -> PullRequest:
        pull = selectors.pull_request_get(user=self.actor, pull_id=pk)
        if pull is None:
            raise Http404
        self.check_project_ability(pull.repository.project, ability or self.required_ability())
        return pull


class PullRequestViewSet(PullRequestMixin, ProjectAccessViewSet):
    """``/v1/pulls/:id``: one pull request."""

    scope_group = "projects"
    queryset = PullRequest.objects.none()

    def locks_before_transaction(self):
        # A merge fetches, merges and pushes under the repository's lock, then writes.
        if self.action != "merge":
            return []
        return [git.mirror_lock(self.get_pull(self.kwargs["pk"], ability=WRITE).repository_id)]

    @extend_schema(responses={200: PullRequestSerializer})
    def retrieve(self, request, pk=None):
        return self.ok(records.pull_request_record(self.get_pull(pk)))

    @extend_schema(
        request=PullRequestUpdateSerializer,
        responses={200: PullRequestSerializer, 409: CONFLICT},
    )
    def partial_update(self, request, pk=None):
        """Change the title or description; `state` closed closes, open reopens."""
        pull = self.get_pull(pk)
        data = self.validated(PullRequestUpdateSerializer, partial=True)
        pull = services.pull_request_update(pull=pull, actor=request.user, **data)
        return self.ok(records.pull_request_record(pull))

    @extend_schema(
        request=MergeInputSerializer, responses={200: PullRequestSerializer, 409: CONFLICT}
    )
    @action(detail=True, methods=["post"])
    def merge(self, request, pk=None):
        """Merge for real: `merge` (a merge commit), `squash` (one commit) or `fast_forward`,
        pushed to the repository's origin. A conflict answers 409 and changes nothing."""
        pull = self.get_pull(pk, ability=WRITE)
        data = self.validated(MergeInputSerializer)
        pull = services.pull_request_merge(pull=pull, actor=request.user, method=data["method"])
        return self.ok(records.pull_request_record(pull))


class PullReviewViewSet(PullRequestMixin, ProjectAccessViewSet):
    """``/v1/pulls/:pull_id/reviews``."""

    scope_group = "projects"
    queryset = PullRequest.objects.none()

    @extend_schema(responses={200: ReviewSerializer(many=True)})
    def list(self, request, pull_id=None):
        pull = self.get_pull(pull_id)
        page = self.paginate_queryset(selectors.review_list(pull=pull))
        return self.get_paginated_response([records.review_record(r) for r in page])

    @extend_schema(request=ReviewInputSerializer, responses={201: ReviewSerializer})
    def create(self, request, pull_id=None):
        """Review: `approved`, `changes_requested` or `commented`, with a body."""
        pull = self.get_pull(pull_id)
        data = self.validated(ReviewInputSerializer)
        review = services.review_create(pull=pull, actor=request.user, **data)
        return self.created(records.review_record(review), f"/v1/pulls/{pull.pk}/reviews")


class RepositoryPushViewSet(ApiViewSet):
    """``/v1/repositories/:repository_id/push``: a push notification from the git server.

    Not Bearer: the body is signed with the repository's secret, as GitHub signs webhooks:
    `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>`. Any JSON object is
    accepted as the body (GitHub's push payload, or `{}` from a post-receive hook); the
    answer is 202 and a sync is queued."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    queryset = Repository.objects.none()
    rate_limit = OwnBudget(
        counter="push",
        argument="repository_id",
        limit_setting="RATE_LIMIT_PUSH",
        what="this repository's push notifications",
    )

    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={
            202: PushAcceptedSerializer,
            401: BAD_SIGNATURE,
            404: OpenApiResponse(description="No route: the repository id is not a number."),
            409: OpenApiResponse(description="The repository's project is archived."),
        },
        parameters=[
            OpenApiParameter(
                "X-Hub-Signature-256",
                OpenApiTypes.STR,
                location=OpenApiParameter.HEADER,
                required=True,
                description="sha256=<hex HMAC-SHA256 of the raw body, keyed by the secret>",
            )
        ],
    )
    def create(self, request, repository_id=None):
        body = request.body
        repository = Repository.objects.select_related("project").filter(pk=repository_id).first()
        signature = request.headers.get("X-Hub-Signature-256", "")
        if not services.push_signature_valid(repository=repository, body=body, signature=signature):
            # The same answer whether the repository exists or not: no probing of ids.
            raise Unauthorized("Unknown repository, or a missing or wrong X-Hub-Signature-256.")
        # Parse only once the signature holds: malformed JSON is then a 400.
        request.data  # noqa: B018
        if repository.project.is_archived:
            raise Conflict(
                "This project is archived and read-only.",
                details={"project_status": repository.project.status},
            )
        services.repository_sync_request(repository=repository)
        return Response({"queued": True}, status=202)
