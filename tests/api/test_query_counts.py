"""Lists load related data in batch: a page of 50 costs the same number of queries as a page
of 5 (STYLE.md, "What the anchors agree on", 4)."""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import AccessToken

from accounts import keys
from accounts.models import ApiKey, Invitation, Membership, Role, User, Workspace
from collab.api.scopes import ALL_SCOPES
from projects.models import Project, ProjectMember
from tests.conftest import client_for
from tests.factories import (
    MembershipFactory,
    ProjectFactory,
    ProjectMemberFactory,
    UserFactory,
    WorkspaceFactory,
    make_api_key,
)

ROLES = [Role.OWNER, Role.ADMIN, Role.DEVELOPER, Role.VIEWER]
VISIBILITIES = list(Project.Visibility)


@dataclass
class Bench:
    """A workspace owned by ``boss``, alone, so every row counted is one we made."""

    boss: User
    workspace: Workspace
    extra: dict = field(default_factory=dict)


@pytest.fixture
def bench(db) -> Bench:
    boss = UserFactory(email="boss@bench.test")
    workspace = WorkspaceFactory(name="Bench")
    MembershipFactory(workspace=workspace, user=boss, role=Role.OWNER)
    return Bench(boss, workspace)


def grow_projects(bench: Bench, count: int) -> None:
    """Projects of every visibility, each with a team of two, visible to the boss."""
    existing = Project.objects.filter(workspace=bench.workspace).count()
    for i in range(existing, count):
        project = ProjectFactory(workspace=bench.workspace, visibility=VISIBILITIES[i % 3])
        ProjectMemberFactory(project=project, user=bench.boss)
        member = UserFactory()
        MembershipFactory(workspace=bench.workspace, user=member, role=ROLES[i % 4])
        ProjectMemberFactory(project=project, user=member)


def grow_project_members(bench: Bench, count: int) -> None:
    project = bench.extra.get("project")
    if project is None:
        project = bench.extra["project"] = ProjectFactory(workspace=bench.workspace)
    existing = ProjectMember.objects.filter(project=project).count()
    for i in range(existing, count):
        user = UserFactory()
        MembershipFactory(workspace=bench.workspace, user=user, role=ROLES[i % 4])
        ProjectMemberFactory(project=project, user=user)


def grow_users(bench: Bench, count: int) -> None:
    existing = Membership.objects.filter(workspace=bench.workspace).count()
    for i in range(existing, count):
        status = User.Status.INVITED if i % 5 == 0 else User.Status.ACTIVE
        MembershipFactory(
            workspace=bench.workspace, user=UserFactory(status=status), role=ROLES[i % 4]
        )


def grow_workspaces(bench: Bench, count: int) -> None:
    existing = Membership.objects.filter(user=bench.boss).count()
    for i in range(existing, count):
        MembershipFactory(workspace=WorkspaceFactory(), user=bench.boss, role=ROLES[i % 4])


def grow_api_keys(bench: Bench, count: int) -> None:
    existing = ApiKey.objects.filter(user=bench.boss).count()
    for i in range(existing, count):
        make_api_key(
            bench.boss,
            ALL_SCOPES[: 1 + i % len(ALL_SCOPES)],
            name=f"key {i}",
            revoked=i % 7 == 0,
            expires_at=timezone.now() + timedelta(days=1 + i) if i % 2 else None,
        )


def grow_invitations(bench: Bench, count: int) -> None:
    """Invitations of mixed states, each naming two projects."""
    projects = bench.extra.get("invited_to")
    if projects is None:
        projects = bench.extra["invited_to"] = ProjectFactory.create_batch(
            2, workspace=bench.workspace
        )
    existing = Invitation.objects.filter(workspace=bench.workspace).count()
    for i in range(existing, count):
        email = f"invitee{i}@bench.test"
        invitation = Invitation.objects.create(
            workspace=bench.workspace,
            email=email,
            role=ROLES[1 + i % 3],
            status=Invitation.Status.PENDING if i % 3 else Invitation.Status.ACCEPTED,
            token_hash=keys.hash_key(f"token-{i}"),
            invited_by=bench.boss,
            user=UserFactory(email=email, status=User.Status.INVITED),
            expires_at=timezone.now() + timedelta(days=7 if i % 4 else -1),
        )
        invitation.projects.set(projects)


@dataclass(frozen=True)
class ListCase:
    path: str
    grow: Callable[[Bench, int], None]
    jwt: bool = False


CASES = {
    "projects": ListCase("/v1/projects", grow_projects),
    "project_members": ListCase("/v1/projects/{project}/members", grow_project_members),
    "users": ListCase("/v1/users", grow_users),
    "workspaces": ListCase("/v1/workspaces", grow_workspaces),
    "api_keys": ListCase("/v1/api-keys", grow_api_keys, jwt=True),
    "invitations": ListCase("/v1/workspaces/{workspace}/invitations", grow_invitations),
}


def _client(bench: Bench, case: ListCase) -> APIClient:
    if case.jwt:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {AccessToken.for_user(bench.boss)}")
        return client
    return client_for(bench.boss)


def _page(client, path: str, per_page: int) -> tuple[int, list[str]]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(f"{path}?per_page={per_page}")
    assert response.status_code == 200, response.content
    body = response.json()
    assert len(body["data"]) == per_page
    assert body["meta"]["total"] == per_page
    return len(captured), [query["sql"] for query in captured.captured_queries]


@pytest.mark.parametrize("name", list(CASES))
def test_list_query_count_does_not_grow_with_the_page(bench, name):
    case = CASES[name]
    case.grow(bench, 5)
    path = case.path.format(
        workspace=bench.workspace.pk, project=getattr(bench.extra.get("project"), "pk", 0)
    )
    client = _client(bench, case)
    # The first call of a key records its use (once a minute): keep it out of the count.
    client.get(path)

    small, small_sql = _page(client, path, 5)
    case.grow(bench, 50)
    large, large_sql = _page(client, path, 50)

    assert large == small, "\n".join(
        ["queries for 5 rows:", *small_sql, "", "queries for 50 rows:", *large_sql]
    )
