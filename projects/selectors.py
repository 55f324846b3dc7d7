from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from accounts.models import Role
from collab.api.permissions import user_roles

from .models import Project, ProjectMember

ADMIN_ROLES = (Role.OWNER, Role.ADMIN)


def project_visibility_q(user, prefix: str = "") -> Q:
    """Which projects the user may see (CONTRACT section 4, Visibility).

    Public projects: everyone signed in. Internal: every member of the workspace.
    Private: the project's team and the workspace's owners and admins.
    ``prefix`` lets other apps filter their rows by their project (``"project__"``).
    """
    roles = user_roles(user)
    admin_of = [ws for ws, role in roles.items() if role in ADMIN_ROLES]
    member_of = list(roles)
    team_of = ProjectMember.objects.filter(user=user).values("project_id")
    p = prefix
    return (
        Q(**{f"{p}visibility": Project.Visibility.PUBLIC})
        | Q(**{f"{p}workspace_id__in": admin_of})
        | Q(**{f"{p}workspace_id__in": member_of, f"{p}visibility": Project.Visibility.INTERNAL})
        | Q(**{f"{p}pk__in": team_of})
    )


def project_visible(*, user, project: Project) -> bool:
    """``project_visibility_q`` for one project already loaded: the same rule, decided on the
    row and the user's roles (loaded once per request) instead of compiled into SQL. Only a
    private project of a workspace the user does not administer costs a query, for its team.
    """
    if project.visibility == Project.Visibility.PUBLIC:
        return True
    role = user_roles(user).get(project.workspace_id)
    if role in ADMIN_ROLES:
        return True
    if role is not None and project.visibility == Project.Visibility.INTERNAL:
        return True
    return ProjectMember.objects.filter(project=project, user=user).exists()


def _with_team_count(queryset: QuerySet) -> QuerySet:
    team = (
        ProjectMember.objects.filter(project=OuterRef("pk"))
        .order_by()
        .values("project")
        .annotate(count=Count("*"))
        .values("count")
    )
    return queryset.annotate(team_count=Coalesce(Subquery(team, output_field=IntegerField()), 0))


def project_list(*, user, filters: dict | None = None) -> QuerySet:
    queryset = Project.objects.filter(project_visibility_q(user))
    if filters:
        queryset = queryset.filter(**filters)
    return _with_team_count(queryset).order_by("id")


def project_get(*, user, project_id, with_team_count: bool = True) -> Project | None:
    """The project if the user may see it, else None (whether it exists or not).

    Every route under a project resolves it first, so this stays cheap: the row by its key,
    then ``project_visible`` on it. Routes that do not show the project skip the team count.
    """
    try:
        pk = int(project_id)
    except (TypeError, ValueError):
        return None
    queryset = Project.objects.filter(pk=pk)
    if with_team_count:
        queryset = _with_team_count(queryset)
    project = queryset.first()
    if project is None or not project_visible(user=user, project=project):
        return None
    return project


def project_members(*, project: Project) -> QuerySet:
    return ProjectMember.objects.filter(project=project).select_related("user").order_by("id")
