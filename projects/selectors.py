from collections.abc import Collection
from typing import Any

from django.db.models import Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from accounts.models import Membership, Role, User
from accounts.roles import project_limit, role_remember, user_roles, workspace_role
from collab.api.routers import id_or_none
from collab.db.prepared import PreparedQuery

from .models import Project, ProjectMember

ADMIN_ROLES = (Role.OWNER, Role.ADMIN)


def project_visibility_q(user: User, prefix: str = "") -> Q:
    """Which projects the user may see (docs/guide/authentication.md, Visibility).

    Public projects: everyone signed in. Internal: every member of the workspace.
    Private: the project's team and the workspace's owners and admins.
    ``prefix`` lets other apps filter their rows by their project (``"project__"``).
    """
    roles = user_roles(user)
    admin_of = [ws for ws, role in roles.items() if role in ADMIN_ROLES]
    member_of = list(roles)
    team_of = ProjectMember.objects.filter(user=user).values("project_id")
    p = prefix
    seen = (
        Q(**{f"{p}visibility": Project.Visibility.PUBLIC})
        | Q(**{f"{p}workspace_id__in": admin_of})
        | Q(**{f"{p}workspace_id__in": member_of, f"{p}visibility": Project.Visibility.INTERNAL})
        | Q(**{f"{p}pk__in": team_of})
    )
    limit = project_limit(user)
    return seen if limit is None else seen & Q(**{f"{p}pk__in": sorted(limit)})


def visibility_grants(visibility: str, role: str | None) -> bool:
    """The rule of ``project_visibility_q`` short of the team: whether a project of this
    visibility is seen by a holder of ``role`` in its workspace (None: not a member)."""
    if visibility == Project.Visibility.PUBLIC or role in ADMIN_ROLES:
        return True
    return role is not None and visibility == Project.Visibility.INTERNAL


def visible_project_ids(*, user_ids: Collection[int]) -> dict[int, set[int]]:
    """``project_visibility_q`` for many people at once, in three queries whatever their
    number: the projects each may see (the event stream refreshes its subscribers with it)."""
    visible: dict[int, set[int]] = {user_id: set() for user_id in user_ids}
    members: dict[int, list[tuple[int, str]]] = {}  # workspace -> (user, role)
    for user_id, workspace_id, role in Membership.objects.filter(user_id__in=visible).values_list(
        "user_id", "workspace_id", "role"
    ):
        members.setdefault(workspace_id, []).append((user_id, role))
    for user_id, project_id in ProjectMember.objects.filter(user_id__in=visible).values_list(
        "user_id", "project_id"
    ):
        visible[user_id].add(project_id)
    public: set[int] = set()
    for project_id, workspace_id, visibility in Project.objects.filter(
        Q(visibility=Project.Visibility.PUBLIC) | Q(workspace_id__in=members)
    ).values_list("pk", "workspace_id", "visibility"):
        if visibility_grants(visibility, None):
            public.add(project_id)
            continue
        for user_id, role in members.get(workspace_id, ()):
            if visibility_grants(visibility, role):
                visible[user_id].add(project_id)
    for projects in visible.values():
        projects |= public
    return visible


def within_limit(user: User, project_id: int) -> bool:
    """Whether the request's credential may reach this project (``project_limit``)."""
    limit = project_limit(user)
    return limit is None or project_id in limit


def project_audience_q(project: Project) -> Q:
    """The users who may see ``project``: ``project_visibility_q`` turned around, over users, so
    a batch of people is checked against one project in one query."""
    if project.visibility == Project.Visibility.PUBLIC:
        return Q()
    roles: list[str] = list(ADMIN_ROLES)
    if project.visibility == Project.Visibility.INTERNAL:
        roles = list(Role.values)
    in_workspace = Membership.objects.filter(workspace_id=project.workspace_id, role__in=roles)
    on_team = ProjectMember.objects.filter(project=project)
    return Q(pk__in=in_workspace.values("user_id")) | Q(pk__in=on_team.values("user_id"))


def project_visible(*, user: User, project: Project) -> bool:
    """``project_visibility_q`` for one project already loaded: the same rule, decided on the
    row and the user's role instead of compiled into SQL. A project from ``project_get``
    carries the reader's role and team seat; otherwise the roles are loaded once per request
    and only a private project of a workspace the user does not administer costs a query, for
    its team.
    """
    if not within_limit(user, project.pk):
        return False
    role = workspace_role(user, project.workspace_id)
    if visibility_grants(project.visibility, role):
        return True
    if getattr(project, "reader_id", None) == user.pk:
        return project.reader_on_team
    return ProjectMember.objects.filter(project=project, user=user).exists()


def reader_annotations(
    *, user_id: int, project: str = "pk", workspace: str = "workspace_id"
) -> dict[str, Any]:
    """``reader_role`` (the reader's role in the project's workspace, None for none) and
    ``reader_on_team``, as expressions over a row that names the project and its workspace by
    these paths: read with the row (a project's, or an issue's with ``project="project_id"``
    and ``workspace="project__workspace_id"``), they let ``project_seen`` decide visibility,
    and the request's role checks pass, without a query of their own."""
    return {
        "reader_role": Subquery(
            Membership.objects.filter(workspace=OuterRef(workspace), user_id=user_id).values(
                "role"
            )[:1]
        ),
        "reader_on_team": Exists(
            ProjectMember.objects.filter(project=OuterRef(project), user_id=user_id)
        ),
    }


def project_seen(project: Project, *, user: User) -> bool:
    """Whether ``user`` may see ``project``, whose ``reader_role`` and ``reader_on_team`` were
    read for them (``reader_annotations``); the role is kept for the request's checks."""
    if not within_limit(user, project.pk):  # its role is then none of the request's
        return False
    # Whom reader_role and reader_on_team describe.
    project.reader_id = user.pk
    role_remember(user, project.workspace_id, project.reader_role)
    return project_visible(user=user, project=project)


def _with_team_count(queryset: QuerySet[Project]) -> QuerySet[Project]:
    team = (
        ProjectMember.objects.filter(project=OuterRef("pk"))
        .order_by()
        .values("project")
        .annotate(count=Count("*"))
        .values("count")
    )
    count = Coalesce(Subquery(team, output_field=IntegerField()), 0)
    # The attribute is declared on the model (it is set by hand too), hence the ignore.
    return queryset.annotate(team_count=count)  # type: ignore[no-redef]


def project_list(*, user: User, filters: dict[str, Any] | None = None) -> QuerySet[Project]:
    queryset = Project.objects.filter(project_visibility_q(user))
    if filters:
        queryset = queryset.filter(**filters)
    return _with_team_count(queryset).order_by("id")


class ProjectLookup:
    """How a route finds the project in its URL, in one query compiled once per process.

    The row by its key, with the reader's role in its workspace and whether they sit on its
    team (so visibility and the request's permission checks need no other query), and, for
    routes that need them with the project, its team count and ``annotations``: expressions
    over the project's row (``OuterRef("pk")``), set on the project as attributes.
    Every route under a project makes this read first; compiling it would cost more than
    running it (see collab.db.prepared).
    """

    def __init__(
        self, *, with_team_count: bool = False, annotations: dict[str, Any] | None = None
    ) -> None:
        self.with_team_count = with_team_count
        self.annotations = dict(annotations or {})
        self.extra = ["reader_role", "reader_on_team", *self.annotations]
        if with_team_count:
            self.extra.append("team_count")
        self.query = PreparedQuery(self._queryset, pk=int, user_id=int)

    def _queryset(self, *, pk: int, user_id: int) -> QuerySet[Project, dict[str, Any]]:
        queryset = Project.objects.filter(pk=pk).annotate(
            **reader_annotations(user_id=user_id), **self.annotations
        )
        if self.with_team_count:
            queryset = _with_team_count(queryset)
        rows: QuerySet[Project, dict[str, Any]] = queryset.values(*PROJECT_FIELDS, *self.extra)
        return rows

    def get(self, *, user: User, project_id: int | str | None) -> Project | None:
        """The project if the user may see it, else None (whether it exists or not)."""
        pk = id_or_none(project_id)
        if pk is None:
            return None
        rows = self.query.rows(pk=pk, user_id=user.pk)
        if not rows:
            return None
        row = rows[0]
        project = Project.from_db(
            self.query.alias, PROJECT_FIELDS, [row[name] for name in PROJECT_FIELDS]
        )
        for name in self.extra:
            setattr(project, name, row[name])
        return project if project_seen(project, user=user) else None


PROJECT_FIELDS = [field.attname for field in Project._meta.concrete_fields]
_LOOKUPS = {flag: ProjectLookup(with_team_count=flag) for flag in (False, True)}


def project_get(
    *, user: User, project_id: int | str | None, with_team_count: bool = True
) -> Project | None:
    """The project if the user may see it, else None (whether it exists or not), in one
    query (``ProjectLookup``). Routes that do not show the project skip the team count."""
    return _LOOKUPS[with_team_count].get(user=user, project_id=project_id)


def project_members(*, project: Project) -> QuerySet[ProjectMember]:
    return ProjectMember.objects.filter(project=project).select_related("user").order_by("id")
