"""Who may call what: every project, user, workspace and API-key endpoint against every persona.

Columns: the workspace personas (owner, admin, developer, viewer of Acme; the outsider owns
Globex), anonymous, the owner with a key lacking the endpoint's scope, the owner with a key
holding only that scope, and expired and revoked credentials. Another workspace's resources
answer 404, never 403, on reads and writes alike. After any refusal the database is exactly
as it was; after a successful write it is not.
"""

import re
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import keys
from accounts.models import ApiKey, Invitation, Membership, Role, User, Workspace
from collab.api.scopes import ALL_SCOPES, expand
from events.models import Event
from projects.models import Project, ProjectMember
from tests.conftest import assert_error, client_for, jwt_client
from tests.factories import MembershipFactory, UserFactory, make_api_key

WORKSPACE_PERSONAS = ("owner", "admin", "developer", "viewer", "outsider")
PERSONAS = (*WORKSPACE_PERSONAS, "anonymous", "no_scope", "only_scope", "expired", "revoked")


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    path: str
    # The scope the contract asks for; None for the JWT-only key management.
    scope: str | None
    # Expected status for owner, admin, developer, viewer, outsider.
    expect: tuple[int, int, int, int, int]
    body: dict = field(default_factory=dict)

    @property
    def jwt_only(self) -> bool:
        return self.scope is None


def E(name, method, path, scope, expect, body=None):  # noqa: N802 - a table row
    return Endpoint(name, method, path, scope, expect, body or {})


ENDPOINTS = [
    # Projects: Acme's private project Rocket (team: owner, developer, viewer).
    E("projects.list", "get", "/v1/projects", "projects:read", (200, 200, 200, 200, 200)),
    E(
        "projects.create",
        "post",
        "/v1/projects",
        "projects:write",
        (201, 201, 201, 403, 201),
        {"name": "Matrix"},
    ),
    E(
        "projects.create.acme",
        "post",
        "/v1/projects",
        "projects:write",
        (201, 201, 201, 403, 422),
        {"name": "Matrix", "workspace_id": "{acme}"},
    ),
    E("projects.get", "get", "/v1/projects/{project}", "projects:read", (200, 200, 200, 200, 404)),
    E(
        "projects.put",
        "put",
        "/v1/projects/{project}",
        "projects:write",
        (200, 200, 200, 403, 404),
        {"name": "Renamed"},
    ),
    E(
        "projects.patch",
        "patch",
        "/v1/projects/{project}",
        "projects:write",
        (200, 200, 200, 403, 404),
        {"name": "Renamed"},
    ),
    E(
        "projects.delete",
        "delete",
        "/v1/projects/{project}",
        "projects:admin",
        (200, 200, 403, 403, 404),
    ),
    E(
        "members.list",
        "get",
        "/v1/projects/{project}/members",
        "projects:read",
        (200, 200, 200, 200, 404),
    ),
    E(
        "members.add",
        "post",
        "/v1/projects/{project}/members",
        "projects:admin",
        (201, 201, 403, 403, 404),
        {"user_id": "{admin}"},
    ),
    E(
        "members.remove",
        "delete",
        "/v1/projects/{project}/members/{viewer}",
        "projects:admin",
        (200, 200, 403, 403, 404),
    ),
    # Globex's project: invisible to all of Acme, whatever their role, on every route.
    E(
        "other.get",
        "get",
        "/v1/projects/{other_project}",
        "projects:read",
        (404, 404, 404, 404, 200),
    ),
    E(
        "other.put",
        "put",
        "/v1/projects/{other_project}",
        "projects:write",
        (404, 404, 404, 404, 200),
        {"name": "Renamed"},
    ),
    E(
        "other.patch",
        "patch",
        "/v1/projects/{other_project}",
        "projects:write",
        (404, 404, 404, 404, 200),
        {"name": "Renamed"},
    ),
    E(
        "other.delete",
        "delete",
        "/v1/projects/{other_project}",
        "projects:admin",
        (404, 404, 404, 404, 200),
    ),
    E(
        "other.members.list",
        "get",
        "/v1/projects/{other_project}/members",
        "projects:read",
        (404, 404, 404, 404, 200),
    ),
    E(
        "other.members.add",
        "post",
        "/v1/projects/{other_project}/members",
        "projects:admin",
        (404, 404, 404, 404, 201),
        {"user_id": "{globex_dev}"},
    ),
    E(
        "other.members.remove",
        "delete",
        "/v1/projects/{other_project}/members/{outsider}",
        "projects:admin",
        (404, 404, 404, 404, 200),
    ),
    # Users (of the caller's first workspace, or ?workspace_id=).
    E("users.list", "get", "/v1/users", "users:read", (200, 200, 200, 200, 200)),
    E("users.me", "get", "/v1/users/me", "users:read", (200, 200, 200, 200, 200)),
    E(
        "users.me.update",
        "patch",
        "/v1/users/me",
        "users:write",
        (200, 200, 200, 200, 200),
        {"name": "Renamed"},
    ),
    E("users.get", "get", "/v1/users/{developer}", "users:read", (200, 200, 200, 200, 404)),
    E("users.get.other", "get", "/v1/users/{outsider}", "users:read", (404, 404, 404, 404, 200)),
    E(
        "users.list.acme",
        "get",
        "/v1/users?workspace_id={acme}",
        "users:read",
        (200, 200, 200, 200, 404),
    ),
    E(
        "users.list.globex",
        "get",
        "/v1/users?workspace_id={globex}",
        "users:read",
        (404, 404, 404, 404, 200),
    ),
    # Workspaces.
    E("workspaces.list", "get", "/v1/workspaces", "projects:read", (200, 200, 200, 200, 200)),
    E(
        "workspaces.create",
        "post",
        "/v1/workspaces",
        "users:write",
        (201, 201, 201, 201, 201),
        {"name": "Newco"},
    ),
    E(
        "workspaces.get",
        "get",
        "/v1/workspaces/{acme}",
        "projects:read",
        (200, 200, 200, 200, 404),
    ),
    E(
        "workspaces.get.other",
        "get",
        "/v1/workspaces/{globex}",
        "projects:read",
        (404, 404, 404, 404, 200),
    ),
    E(
        "workspaces.members",
        "get",
        "/v1/workspaces/{acme}/members",
        "users:read",
        (200, 200, 200, 200, 404),
    ),
    E(
        "workspaces.members.other",
        "get",
        "/v1/workspaces/{globex}/members",
        "users:read",
        (404, 404, 404, 404, 200),
    ),
    E(
        "workspaces.member.role",
        "patch",
        "/v1/workspaces/{acme}/members/{developer}",
        "users:write",
        (200, 200, 403, 403, 404),
        {"role": "viewer"},
    ),
    E(
        "workspaces.member.remove",
        "delete",
        "/v1/workspaces/{acme}/members/{viewer}",
        "users:write",
        (200, 200, 403, 403, 404),
    ),
    E(
        "invitations.list",
        "get",
        "/v1/workspaces/{acme}/invitations",
        "users:read",
        (200, 200, 403, 403, 404),
    ),
    E(
        "invitations.create",
        "post",
        "/v1/workspaces/{acme}/invitations",
        "users:write",
        (201, 201, 403, 403, 404),
        {"email": "newcomer@acme.test", "role": "developer"},
    ),
    E(
        "invitations.revoke",
        "delete",
        "/v1/workspaces/{acme}/invitations/{invitation}",
        "users:write",
        (200, 200, 403, 403, 404),
    ),
    # API keys: a signed-in user (JWT) manages their own keys only.
    E("api_keys.list", "get", "/v1/api-keys", None, (200, 200, 200, 200, 200)),
    E(
        "api_keys.create",
        "post",
        "/v1/api-keys",
        None,
        (201, 201, 201, 201, 201),
        {"name": "ci", "scopes": ["projects:read"], "expiresIn": "30d"},
    ),
    E("api_keys.get", "get", "/v1/api-keys/{own_key}", None, (200, 200, 200, 200, 200)),
    E("api_keys.revoke", "delete", "/v1/api-keys/{own_key}", None, (200, 200, 200, 200, 200)),
    E("api_keys.get.other", "get", "/v1/api-keys/{owner_key}", None, (200, 404, 404, 404, 404)),
    E(
        "api_keys.revoke.other",
        "delete",
        "/v1/api-keys/{owner_key}",
        None,
        (200, 404, 404, 404, 404),
    ),
]


def expected_status(endpoint: Endpoint, persona: str) -> int:
    if persona in ("anonymous", "expired", "revoked"):
        return 401
    if persona == "no_scope":
        return 403
    if persona == "only_scope":
        return endpoint.expect[0]
    return endpoint.expect[WORKSPACE_PERSONAS.index(persona)]


CASES = [
    pytest.param(endpoint, persona, id=f"{endpoint.name}-{persona}")
    for endpoint in ENDPOINTS
    for persona in PERSONAS
    # A JWT carries every scope, so there is no scope column for key management.
    if not (endpoint.jwt_only and persona == "only_scope")
]


def scopes_without(scope: str) -> list[str]:
    """Every scope that does not grant ``scope`` (so ``projects:read`` for ``projects:write``)."""
    return [s for s in ALL_SCOPES if scope not in expand([s])]


def client_of(persona: str, endpoint: Endpoint, world) -> APIClient:
    past = timezone.now() - timedelta(minutes=1)
    if persona == "anonymous":
        return APIClient()
    if persona == "expired":
        if endpoint.jwt_only:
            return jwt_client(world.owner, expired=True)
        return client_for(world.owner, expires_at=past)
    if persona == "revoked":
        return client_for(world.owner, revoked=True)
    if persona == "no_scope":
        # For key management: an API key with every scope is still not a JWT.
        if endpoint.jwt_only:
            return client_for(world.owner)
        return client_for(world.owner, scopes_without(endpoint.scope))
    if persona == "only_scope":
        return client_for(world.owner, [endpoint.scope])
    user = getattr(world, persona)
    return jwt_client(user) if endpoint.jwt_only else client_for(user)


@pytest.fixture(scope="module")
def context(world_once, module_db):
    """Ids the endpoint table refers to, made once for the module beside its world."""
    with module_db.unblock():
        return _context(world_once)


def _context(world) -> dict:
    globex_dev = UserFactory(email="dev@globex.test")
    MembershipFactory(workspace=world.globex, user=globex_dev, role=Role.DEVELOPER)
    invitee = UserFactory(email="invitee@acme.test", status=User.Status.INVITED)
    MembershipFactory(workspace=world.acme, user=invitee, role=Role.DEVELOPER)
    invitation = Invitation.objects.create(
        workspace=world.acme,
        email=invitee.email,
        role=Role.DEVELOPER,
        token_hash=keys.hash_key("invitation-token"),
        invited_by=world.owner,
        user=invitee,
        expires_at=timezone.now() + timedelta(days=7),
    )
    for persona in WORKSPACE_PERSONAS:
        make_api_key(getattr(world, persona), ["projects:read"], name="own key")
    return {
        "project": world.project.pk,
        "other_project": world.other_project.pk,
        "acme": world.acme.pk,
        "globex": world.globex.pk,
        "owner": world.owner.pk,
        "admin": world.admin.pk,
        "developer": world.developer.pk,
        "viewer": world.viewer.pk,
        "outsider": world.outsider.pk,
        "globex_dev": globex_dev.pk,
        "invitation": invitation.pk,
        "owner_key": ApiKey.objects.get(user=world.owner, name="own key").pk,
    }


def fill(value, ctx):
    """Put the context's ids into a path or body template (``"{acme}"`` becomes an int)."""
    if isinstance(value, dict):
        return {key: fill(item, ctx) for key, item in value.items()}
    if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
        return ctx[value[1:-1]]
    return value


def snapshot() -> dict:
    """Everything a call could change, apart from a key's last_used_at."""
    return {
        "users": list(User.objects.order_by("id").values_list("id", "name", "handle")),
        "workspaces": list(Workspace.objects.values_list("id", "name")),
        "memberships": list(Membership.objects.values_list("workspace_id", "user_id", "role")),
        "projects": list(
            Project.objects.values_list(
                "id", "workspace_id", "name", "description", "status", "visibility"
            )
        ),
        "team": list(ProjectMember.objects.values_list("project_id", "user_id")),
        "invitations": list(Invitation.objects.values_list("id", "status")),
        "api_keys": list(ApiKey.objects.values_list("id", "revoked_at")),
        "events": Event.objects.count(),
    }


@pytest.mark.parametrize(("endpoint", "persona"), CASES)
def test_permission_matrix(world, context, endpoint, persona):
    client = client_of(persona, endpoint, world)
    acting = world.owner if persona not in WORKSPACE_PERSONAS else getattr(world, persona)
    ctx = {**context, "own_key": ApiKey.objects.get(user=acting, name="own key").pk}
    path = endpoint.path.format(**ctx)
    body = fill(endpoint.body, ctx)
    before = snapshot()

    if endpoint.method in ("get", "delete"):
        response = getattr(client, endpoint.method)(path)
    else:
        response = getattr(client, endpoint.method)(path, body, format="json")

    expected = expected_status(endpoint, persona)
    assert response.status_code == expected, response.content
    assert response["Content-Type"] == "application/json"
    payload = response.json()

    if expected < 300:
        assert payload["success"] is True
        assert "data" in payload
        if endpoint.method != "get":
            assert snapshot() != before, "a successful write changed nothing"
        else:
            assert snapshot() == before
        return

    after = snapshot()
    assert after == before, "a refused call changed the database"
    code = {
        401: "UNAUTHORIZED",
        403: "FORBIDDEN",
        404: "NOT_FOUND",
        422: "VALIDATION_ERROR",
    }[expected]
    error = assert_error(response, expected, code)
    if expected == 401:
        assert response["WWW-Authenticate"].startswith("Bearer")
    if persona == "no_scope":
        if endpoint.jwt_only:
            assert error["details"] == {"required_credential": "jwt"}
        else:
            assert error["details"] == {"required_scope": endpoint.scope}
    if expected == 404:
        # A 404 says nothing of what exists behind it.
        assert error["details"] == {}
        assert "Secret" not in error["message"] and "Rocket" not in error["message"]


def test_matrix_covers_every_routed_endpoint():
    """A new route of these viewsets must come with its row: compare the table with the router.

    Other apps' routes (issues, git, webhooks) have their own matrices.
    """
    from accounts.urls import router as accounts_router
    from accounts.views import UserViewSet
    from integrations.views import ApiKeyViewSet
    from projects.urls import router as projects_router
    from projects.views import ProjectViewSet, WorkspaceViewSet

    viewsets = (ApiKeyViewSet, UserViewSet, WorkspaceViewSet, ProjectViewSet)
    routed = set()
    for url in [*accounts_router.urls, *projects_router.urls]:
        if url.callback.cls not in viewsets:
            continue
        path = re.sub(r"\(\?P<\w+>[^)]*\)", "{id}", str(url.pattern).strip("^$"))
        routed |= {(method, f"/v1/{path}") for method in url.callback.actions if method != "head"}

    def shape(path: str) -> str:
        path = path.split("?")[0]
        return "/".join("{id}" if part.startswith("{") else part for part in path.split("/"))

    covered = {(endpoint.method, shape(endpoint.path)) for endpoint in ENDPOINTS}
    assert len(routed) >= 20
    assert routed - covered == set()


@pytest.mark.parametrize("persona", ["developer", "viewer", "admin"])
def test_every_project_route_of_another_workspace_is_404_never_403(world, persona):
    """Even with a role that would be refused (403) at home, a foreign project is a 404."""
    client = client_for(getattr(world, persona))
    project = world.other_project.pk
    calls = [
        client.get(f"/v1/projects/{project}"),
        client.put(f"/v1/projects/{project}", {"name": "x"}, format="json"),
        client.patch(f"/v1/projects/{project}", {"name": "x"}, format="json"),
        client.delete(f"/v1/projects/{project}"),
        client.get(f"/v1/projects/{project}/members"),
        client.post(f"/v1/projects/{project}/members", {"user_id": 1}, format="json"),
        client.delete(f"/v1/projects/{project}/members/{world.outsider.pk}"),
    ]
    for response in calls:
        assert_error(response, 404, "NOT_FOUND")
    assert Project.objects.get(pk=project).name == "Secret"
    assert not Event.objects.exists()
