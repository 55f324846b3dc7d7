from typing import cast

from django.db.models import OuterRef, Subquery
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import action

from accounts import selectors as account_selectors
from accounts import services as account_services
from accounts.filters import InvitationFilter, UserFilter
from accounts.models import Membership, User, Workspace
from accounts.roles import require_ability, require_unlimited, user_roles
from accounts.serializers import (
    InvitationCreateSerializer,
    InvitationSerializer,
    MembershipUpdateSerializer,
    UserSerializer,
    WorkspaceCreateSerializer,
    WorkspaceSerializer,
)
from collab.api.exceptions import ValidationFailed
from collab.api.permissions import MANAGE, READ, WRITE
from collab.api.routers import ID_PATTERN
from collab.api.viewsets import ApiViewSet

from . import selectors, services
from .filters import ProjectFilter
from .models import Project
from .serializers import (
    ProjectCreateSerializer,
    ProjectMemberAddSerializer,
    ProjectMemberSerializer,
    ProjectSerializer,
    ProjectUpdateSerializer,
)
from .viewsets import ProjectScopedViewSet


class ProjectViewSet(ProjectScopedViewSet):
    scope_group = "projects"
    project_lookup_kwarg = "pk"
    project_with_team_count = True
    serializer_class = ProjectSerializer
    filterset_class = ProjectFilter
    action_scopes = {"members": "projects:read", "member_remove": "projects:admin"}
    action_abilities = {"member_remove": MANAGE}

    def required_scope(self):
        if self.action == "members" and self.request.method == "POST":
            return "projects:admin"
        return super().required_scope()

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema generator has no user
            return Project.objects.none()
        return selectors.project_list(user=self.request.user)

    def list(self, request):
        return self.paginated(self.filter_queryset(self.get_queryset()), ProjectSerializer)

    @extend_schema(request=ProjectCreateSerializer, responses={201: ProjectSerializer})
    def create(self, request):
        require_unlimited(request.user, "create projects")
        data = self.validated(ProjectCreateSerializer)
        workspace_id = data.get("workspace_id") or account_selectors.default_workspace_id(
            user=request.user
        )
        workspace = account_selectors.workspace_get(user=request.user, workspace_id=workspace_id)
        if workspace is None:
            raise ValidationFailed.field(
                "workspace_id",
                "No such workspace among yours." if workspace_id else "You have no workspace yet.",
            )
        require_ability(request.user, workspace.pk, WRITE)
        project = services.project_create(
            workspace=workspace,
            actor=request.user,
            name=data["name"],
            description=data["description"],
            visibility=data["visibility"],
        )
        return self.created(ProjectSerializer(project).data, f"/v1/projects/{project.pk}")

    def retrieve(self, request, pk=None):
        return self.ok(ProjectSerializer(self.get_project()).data)

    @extend_schema(request=ProjectUpdateSerializer, responses={200: ProjectSerializer})
    def update(self, request, pk=None):
        return self._update(partial=False)

    @extend_schema(request=ProjectUpdateSerializer, responses={200: ProjectSerializer})
    def partial_update(self, request, pk=None):
        return self._update(partial=True)

    def _update(self, *, partial: bool):
        project = self._own_project(WRITE)
        data = self.validated(ProjectUpdateSerializer, partial=partial)
        if "status" not in self.request.data:
            # Only an explicit "status": "active" unarchives. A PUT that leaves status out
            # would otherwise get the default and quietly reopen an archived project; for
            # an active one, dropping the default changes nothing.
            data.pop("status", None)
        project = services.project_update(project=project, actor=self.actor, **data)
        return self.ok(ProjectSerializer(project).data)

    @extend_schema(responses={200: None})
    def destroy(self, request, pk=None):
        services.project_delete(project=self._own_project(MANAGE), actor=request.user)
        return self.deleted()

    def _own_project(self, ability: str):
        # The project itself may be written while archived, to make it active again
        # (the service decides); everything under it is read-only.
        project = self.get_project(ability=READ)
        require_ability(self.request.user, project.workspace_id, ability)
        return project

    @extend_schema(methods=["GET"], responses={200: ProjectMemberSerializer(many=True)})
    @extend_schema(
        methods=["POST"],
        request=ProjectMemberAddSerializer,
        responses={201: ProjectMemberSerializer},
    )
    @action(detail=True, methods=["get", "post"], filter_backends=[])
    def members(self, request, pk=None):
        if request.method == "GET":
            project = self.get_project(ability=READ)
            role = Membership.objects.filter(
                workspace_id=project.workspace_id, user_id=OuterRef("user_id")
            ).values("role")[:1]
            queryset = selectors.project_members(project=project).annotate(role=Subquery(role))
            return self.paginated(queryset, ProjectMemberSerializer)
        project = self.get_project(ability=MANAGE)
        require_unlimited(request.user, "manage members")
        data = self.validated(ProjectMemberAddSerializer)
        user = User.objects.filter(pk=data["user_id"]).first()
        if user is None:
            raise services.not_a_workspace_member()
        member = services.project_member_add(project=project, user=user, actor=request.user)
        member.role = (
            Membership.objects.filter(workspace_id=project.workspace_id, user=user)
            .values_list("role", flat=True)
            .first()
        )
        return self.created(
            ProjectMemberSerializer(member).data,
            f"/v1/projects/{project.pk}/members/{user.pk}",
        )

    @extend_schema(responses={200: None})
    @action(detail=True, methods=["delete"], url_path=rf"members/(?P<user_id>{ID_PATTERN})")
    def member_remove(self, request, pk=None, user_id=None):
        project = self.get_project(ability=MANAGE)
        require_unlimited(request.user, "manage members")
        member = selectors.project_members(project=project).filter(user_id=user_id).first()
        if member is None:
            raise Http404
        services.project_member_remove(member=member, actor=request.user)
        return self.deleted()


# Workspaces ------------------------------------------------------------------------------


# /v1/workspaces: the tenancy itself, with its members and invitations. Here, above accounts,
# because an invitation names projects the inviter must be able to see. (No docstring: the
# schema would show it as every operation's description.)
class WorkspaceViewSet(ApiViewSet):
    scope_group = "projects"
    serializer_class = WorkspaceSerializer
    queryset = Workspace.objects.none()  # for the schema; reads go through the selectors
    action_scopes = {
        "create": "users:write",
        "members": "users:read",
        "member_detail": "users:write",
        "invitations": "users:read",
        "invitation_revoke": "users:write",
    }

    def required_scope(self):
        if self.action == "invitations" and self.request.method == "POST":
            return "users:write"
        return super().required_scope()

    def _workspace(self, pk, ability=READ, *, unlimited_to: str = ""):
        return account_selectors.workspace_require(
            user=cast(User, self.request.user),
            workspace_id=pk,
            ability=ability,
            unlimited_to=unlimited_to,
        )

    def _context(self) -> dict:
        return {"roles": user_roles(self.request.user)}

    def list(self, request):
        return self.paginated(
            account_selectors.workspace_list(user=request.user),
            WorkspaceSerializer,
            **self._context(),
        )

    @extend_schema(request=WorkspaceCreateSerializer, responses={201: WorkspaceSerializer})
    def create(self, request):
        require_unlimited(request.user, "create workspaces")
        data = self.validated(WorkspaceCreateSerializer)
        workspace = account_services.workspace_create(name=data["name"], owner=request.user)
        request.user._workspace_roles = None
        return self.created(
            WorkspaceSerializer(workspace, context=self._context()).data,
            f"/v1/workspaces/{workspace.pk}",
        )

    def retrieve(self, request, pk=None):
        return self.ok(WorkspaceSerializer(self._workspace(pk), context=self._context()).data)

    @extend_schema(responses={200: UserSerializer(many=True)})
    @action(detail=True, methods=["get"], filterset_class=UserFilter)
    def members(self, request, pk=None):
        workspace = self._workspace(pk)
        queryset = self.filter_queryset(account_selectors.member_list(workspace_id=workspace.pk))
        return self.paginated(queryset, UserSerializer)

    @extend_schema(
        methods=["PATCH"], request=MembershipUpdateSerializer, responses={200: UserSerializer}
    )
    @extend_schema(methods=["DELETE"], responses={200: None})
    @action(
        detail=True,
        methods=["patch", "delete"],
        url_path=rf"members/(?P<user_id>{ID_PATTERN})",
    )
    def member_detail(self, request, pk=None, user_id=None):
        workspace = self._workspace(pk, MANAGE, unlimited_to="manage members")
        membership = (
            Membership.objects.select_related("user")
            .filter(workspace=workspace, user_id=user_id)
            .first()
        )
        if membership is None:
            raise Http404
        if request.method == "DELETE":
            account_services.membership_remove(membership=membership, actor=request.user)
            return self.deleted()
        # PATCH changes only the fields sent: an empty body changes nothing.
        data = self.validated(MembershipUpdateSerializer, partial=True)
        if "role" in data:
            membership = account_services.membership_update(
                membership=membership, role=data["role"], actor=request.user
            )
        return self.ok(UserSerializer(membership).data)

    @extend_schema(methods=["GET"], responses={200: InvitationSerializer(many=True)}, filters=True)
    @extend_schema(
        methods=["POST"],
        request=InvitationCreateSerializer,
        responses={201: InvitationSerializer},
    )
    @action(detail=True, methods=["get", "post"], filterset_class=InvitationFilter)
    def invitations(self, request, pk=None):
        if request.method == "GET":
            workspace = self._workspace(pk, MANAGE, unlimited_to="manage invitations")
            queryset = self.filter_queryset(
                account_selectors.invitation_list(workspace_id=workspace.pk)
            )
            return self.paginated(queryset, InvitationSerializer)
        workspace = self._workspace(pk, MANAGE, unlimited_to="manage invitations")
        data = self.validated(InvitationCreateSerializer)
        projects = list(
            selectors.project_list(user=request.user).filter(
                workspace=workspace, pk__in=data["projects"]
            )
        )
        missing = set(data["projects"]) - {project.pk for project in projects}
        if missing:
            raise ValidationFailed.field(
                "projects", f"No such projects in this workspace: {sorted(missing)}."
            )
        invitation, _token = account_services.invitation_create(
            workspace=workspace,
            inviter=request.user,
            email=data["email"],
            role=data["role"],
            projects=projects,
        )
        return self.created(
            InvitationSerializer(invitation).data,
            f"/v1/workspaces/{workspace.pk}/invitations/{invitation.pk}",
        )

    @extend_schema(responses={200: None})
    @action(
        detail=True,
        methods=["delete"],
        url_path=rf"invitations/(?P<invitation_id>{ID_PATTERN})",
    )
    def invitation_revoke(self, request, pk=None, invitation_id=None):
        workspace = self._workspace(pk, MANAGE, unlimited_to="manage invitations")
        invitation = (
            account_selectors.invitation_list(workspace_id=workspace.pk)
            .filter(pk=invitation_id)
            .first()
        )
        if invitation is None:
            raise Http404
        account_services.invitation_revoke(invitation=invitation, actor=request.user)
        return self.deleted()
