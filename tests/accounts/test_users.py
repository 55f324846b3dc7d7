"""Users and workspaces: /v1/users, /v1/users/me, /v1/workspaces and their members."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Membership, Role, User, Workspace
from events.models import Event
from projects.models import ProjectMember
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import MembershipFactory, UserFactory

USER_FIELDS = {"id", "email", "name", "role", "status", "created_at"}


def emails(body) -> list[str]:
    return [user["email"] for user in body["data"]]


# GET /v1/users ------------------------------------------------------------------------------


def test_users_lists_the_members_of_the_callers_workspace(api, world):
    body = assert_ok(api.developer.get("/v1/users"))

    assert emails(body) == [
        "owner@acme.test",
        "admin@acme.test",
        "dev@acme.test",
        "viewer@acme.test",
    ]
    assert body["meta"]["total"] == body["meta"]["total_count"] == 4
    assert body["meta"]["page"] == body["meta"]["current_page"] == 1
    for user in body["data"]:
        assert set(user) >= USER_FIELDS
        assert "password" not in user
        assert user["status"] == "active"
        assert user["created_at"].endswith("Z")
    owner = body["data"][0]
    assert owner["id"] == world.owner.pk
    assert owner["name"] == "Olive Owner"
    assert owner["role"] == "owner"
    assert [user["role"] for user in body["data"]] == ["owner", "admin", "developer", "viewer"]


def test_users_of_another_workspace_are_not_listed(api, world):
    body = assert_ok(api.outsider.get("/v1/users"))

    assert emails(body) == ["outsider@globex.test"]


def test_users_default_to_the_callers_first_workspace(api, world):
    MembershipFactory(workspace=world.globex, user=world.developer, role=Role.VIEWER)

    body = assert_ok(api.developer.get("/v1/users"))

    assert "outsider@globex.test" not in emails(body)
    assert len(body["data"]) == 4


def test_users_of_a_named_workspace(api, world):
    MembershipFactory(workspace=world.globex, user=world.developer, role=Role.VIEWER)

    body = assert_ok(api.developer.get("/v1/users", {"workspace_id": world.globex.pk}))

    assert emails(body) == ["dev@acme.test", "outsider@globex.test"]
    assert {user["role"] for user in body["data"]} == {"viewer", "owner"}


def test_users_of_another_workspace_is_404(api, world):
    response = api.owner.get("/v1/users", {"workspace_id": world.globex.pk})

    assert_error(response, 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"role": "developer"}, ["dev@acme.test"]),
        ({"role": "owner"}, ["owner@acme.test"]),
        ({"status": "suspended"}, ["viewer@acme.test"]),
        ({"status": "active"}, ["owner@acme.test", "admin@acme.test", "dev@acme.test"]),
        ({"status": "active", "role": "admin"}, ["admin@acme.test"]),
        ({"status": "invited"}, []),
    ],
)
def test_users_filters(api, world, params, expected):
    User.objects.filter(pk=world.viewer.pk).update(status=User.Status.SUSPENDED)

    body = assert_ok(api.owner.get("/v1/users", params))

    assert emails(body) == expected
    assert body["meta"]["total"] == len(expected)
    for user in body["data"]:
        for name, value in params.items():
            assert user[name] == value


@pytest.mark.parametrize("params", [{"role": "wizard"}, {"status": "sleeping"}])
def test_users_invalid_filter_value_is_400_naming_the_parameter(api, world, params):
    error = assert_error(api.owner.get("/v1/users", params), 400, "BAD_REQUEST")

    assert list(error["details"]) == list(params)
    assert all(isinstance(message, str) for message in next(iter(error["details"].values())))


def test_users_paginate(api, world):
    body = assert_ok(api.owner.get("/v1/users", {"per_page": 3, "page": 2}))

    assert emails(body) == ["viewer@acme.test"]
    assert body["meta"]["total_pages"] == 2
    assert body["meta"]["per_page"] == 3


def test_users_need_the_users_read_scope(world):
    client = client_for(world.owner, ["projects:admin", "issues:admin"])

    error = assert_error(client.get("/v1/users"), 403, "FORBIDDEN")

    assert error["details"]["required_scope"] == "users:read"
    assert_error(client.get(f"/v1/users/{world.owner.pk}"), 403, "FORBIDDEN")


def test_users_list_queries_do_not_grow_with_the_page(api, world):
    assert_ok(api.owner.get("/v1/users"))  # the key's first use writes last_used_at
    with CaptureQueriesContext(connection) as few:
        assert_ok(api.owner.get("/v1/users"))
    for _ in range(10):
        MembershipFactory(workspace=world.acme, user=UserFactory())
    with CaptureQueriesContext(connection) as many:
        body = assert_ok(api.owner.get("/v1/users"))

    assert len(body["data"]) == 14
    assert len(many.captured_queries) == len(few.captured_queries)


def test_user_detail(api, world):
    body = assert_ok(api.viewer.get(f"/v1/users/{world.developer.pk}"))

    assert set(body) == {"success", "data"}
    assert set(body["data"]) >= USER_FIELDS
    assert body["data"]["id"] == world.developer.pk
    assert body["data"]["role"] == "developer"


def test_user_detail_of_an_outsider_is_404(api, world):
    assert_error(api.owner.get(f"/v1/users/{world.outsider.pk}"), 404, "NOT_FOUND")
    assert_error(api.outsider.get(f"/v1/users/{world.owner.pk}"), 404, "NOT_FOUND")


def test_users_anonymous_is_401(world, api):
    response = api.anonymous.get("/v1/users")

    assert_error(response, 401, "UNAUTHORIZED")
    assert response["WWW-Authenticate"].startswith("Bearer")


# GET /v1/users/me ---------------------------------------------------------------------------


def test_me(api, world):
    body = assert_ok(api.developer.get("/v1/users/me"))

    assert set(body) == {"success", "data"}
    me = body["data"]
    assert {"id", "email", "name", "status", "created_at"} <= set(me)
    assert me["id"] == world.developer.pk
    assert me["email"] == "dev@acme.test"
    assert me["name"] == "Dana Developer"
    assert me["status"] == "active"
    assert "password" not in me


def test_me_of_a_user_without_workspace(db):
    loner = UserFactory(email="loner@example.com")

    body = assert_ok(client_for(loner).get("/v1/users/me"))

    assert body["data"]["email"] == "loner@example.com"
    assert assert_ok(client_for(loner).get("/v1/users"))["data"] == []


# /v1/workspaces -----------------------------------------------------------------------------


def test_workspaces_list_the_callers_own(api, world):
    MembershipFactory(workspace=world.globex, user=world.developer, role=Role.VIEWER)

    body = assert_ok(api.developer.get("/v1/workspaces"))

    assert [(w["name"], w["role"]) for w in body["data"]] == [
        ("Acme", "developer"),
        ("Globex", "viewer"),
    ]
    assert body["meta"]["total"] == 2
    assert {"id", "name", "created_at"} <= set(body["data"][0])
    assert [w["name"] for w in assert_ok(api.outsider.get("/v1/workspaces"))["data"]] == ["Globex"]


def test_workspace_detail(api, world):
    body = assert_ok(api.viewer.get(f"/v1/workspaces/{world.acme.pk}"))

    assert body["data"]["id"] == world.acme.pk
    assert body["data"]["role"] == "viewer"


def test_workspace_detail_of_an_outsider_is_404(api, world):
    assert_error(api.outsider.get(f"/v1/workspaces/{world.acme.pk}"), 404, "NOT_FOUND")
    assert_error(api.owner.get("/v1/workspaces/999999"), 404, "NOT_FOUND")


def test_create_workspace_makes_the_caller_its_owner(api, world):
    response = api.developer.post("/v1/workspaces", {"name": "Side Project"}, format="json")

    body = assert_ok(response, 201)
    data = body["data"]
    assert response["Location"] == f"/v1/workspaces/{data['id']}"
    assert data["name"] == "Side Project"
    assert data["role"] == "owner"
    workspace = Workspace.objects.get(pk=data["id"])
    assert Membership.objects.filter(
        workspace=workspace, user=world.developer, role=Role.OWNER
    ).exists()
    assert Membership.objects.filter(workspace=workspace).count() == 1
    # The new workspace shows in the list, and the first workspace stays the default.
    names = [w["name"] for w in assert_ok(api.developer.get("/v1/workspaces"))["data"]]
    assert names == ["Acme", "Side Project"]
    assert len(assert_ok(api.developer.get("/v1/users"))["data"]) == 4


def test_create_workspace_slugs_are_unique(api, world):
    first = assert_ok(api.owner.post("/v1/workspaces", {"name": "Acme"}, format="json"), 201)
    second = assert_ok(api.owner.post("/v1/workspaces", {"name": "Acme"}, format="json"), 201)

    assert first["data"]["slug"] != second["data"]["slug"]
    assert first["data"]["slug"] != "acme"


def test_create_workspace_without_name_is_422(api, world):
    error = assert_error(
        api.owner.post("/v1/workspaces", {}, format="json"), 422, "VALIDATION_ERROR"
    )

    assert "name" in error["details"]
    assert Workspace.objects.count() == 2


def test_create_workspace_needs_users_write(world):
    client = client_for(world.owner, ["users:read", "projects:admin"])

    error = assert_error(
        client.post("/v1/workspaces", {"name": "Nope"}, format="json"), 403, "FORBIDDEN"
    )

    assert error["details"]["required_scope"] == "users:write"
    assert not Workspace.objects.filter(name="Nope").exists()


# /v1/workspaces/:id/members -----------------------------------------------------------------


def member_url(world, user) -> str:
    return f"/v1/workspaces/{world.acme.pk}/members/{user.pk}"


def role_of(world, user) -> str | None:
    return (
        Membership.objects.filter(workspace=world.acme, user=user)
        .values_list("role", flat=True)
        .first()
    )


def test_workspace_members_list(api, world):
    body = assert_ok(api.viewer.get(f"/v1/workspaces/{world.acme.pk}/members", {"role": "admin"}))

    assert emails(body) == ["admin@acme.test"]
    assert_error(api.outsider.get(f"/v1/workspaces/{world.acme.pk}/members"), 404, "NOT_FOUND")


@pytest.mark.parametrize("actor", ["owner", "admin"])
def test_owner_or_admin_changes_a_role(api, world, actor):
    response = getattr(api, actor).patch(
        member_url(world, world.developer), {"role": "viewer"}, format="json"
    )

    body = assert_ok(response)
    assert set(body) == {"success", "data"}
    assert body["data"]["id"] == world.developer.pk
    assert body["data"]["role"] == "viewer"
    assert body["data"]["email"] == "dev@acme.test"
    assert role_of(world, world.developer) == Role.VIEWER
    event = Event.objects.filter(type="workspace.member_updated").get()
    assert event.changes == {"role": {"previous": "developer", "current": "viewer"}}


@pytest.mark.parametrize("actor", ["developer", "viewer"])
def test_developer_or_viewer_cannot_change_roles(api, world, actor):
    response = getattr(api, actor).patch(
        member_url(world, world.developer), {"role": "admin"}, format="json"
    )

    assert_error(response, 403, "FORBIDDEN")
    assert role_of(world, world.developer) == Role.DEVELOPER


def test_outsider_cannot_see_members(api, world):
    response = api.outsider.patch(
        member_url(world, world.developer), {"role": "owner"}, format="json"
    )

    assert_error(response, 404, "NOT_FOUND")
    assert_error(api.outsider.delete(member_url(world, world.developer)), 404, "NOT_FOUND")
    assert role_of(world, world.developer) == Role.DEVELOPER


def test_role_change_of_a_non_member_is_404(api, world):
    response = api.owner.patch(member_url(world, world.outsider), {"role": "viewer"}, format="json")

    assert_error(response, 404, "NOT_FOUND")
    assert role_of(world, world.outsider) is None


@pytest.mark.parametrize("body", [{"role": "wizard"}, {"role": ""}, {"role": None}])
def test_role_change_with_an_invalid_role_is_422(api, world, body):
    error = assert_error(
        api.owner.patch(member_url(world, world.developer), body, format="json"),
        422,
        "VALIDATION_ERROR",
    )

    assert "role" in error["details"]
    assert role_of(world, world.developer) == Role.DEVELOPER


def test_patch_without_role_changes_nothing(api, world):
    body = assert_ok(api.owner.patch(member_url(world, world.developer), {}, format="json"))

    assert body["data"]["role"] == "developer"
    assert role_of(world, world.developer) == Role.DEVELOPER
    assert not Event.objects.filter(type="workspace.member_updated").exists()


def test_role_change_needs_users_write(world):
    client = client_for(world.owner, ["users:read", "projects:admin"])

    error = assert_error(
        client.patch(member_url(world, world.developer), {"role": "viewer"}, format="json"),
        403,
        "FORBIDDEN",
    )

    assert error["details"]["required_scope"] == "users:write"


def test_demoting_the_last_owner_is_409(api, world):
    response = api.owner.patch(member_url(world, world.owner), {"role": "admin"}, format="json")

    assert_error(response, 409, "CONFLICT")
    assert role_of(world, world.owner) == Role.OWNER
    assert not Event.objects.filter(type="workspace.member_updated").exists()


def test_removing_the_last_owner_is_409(api, world):
    response = api.owner.delete(member_url(world, world.owner))

    assert_error(response, 409, "CONFLICT")
    assert role_of(world, world.owner) == Role.OWNER


def test_an_owner_can_step_down_when_another_owner_remains(api, world):
    assert_ok(api.owner.patch(member_url(world, world.admin), {"role": "owner"}, format="json"))

    body = assert_ok(
        api.owner.patch(member_url(world, world.owner), {"role": "admin"}, format="json")
    )

    assert body["data"]["role"] == "admin"
    assert role_of(world, world.owner) == Role.ADMIN
    assert role_of(world, world.admin) == Role.OWNER


def test_remove_member(api, world):
    assert ProjectMember.objects.filter(project=world.project, user=world.developer).exists()

    response = api.admin.delete(member_url(world, world.developer))

    assert response.status_code == 200
    assert response.json() == {"success": True, "data": None}
    assert role_of(world, world.developer) is None
    # Leaving the workspace also leaves its project teams.
    assert not ProjectMember.objects.filter(user=world.developer).exists()
    assert User.objects.filter(pk=world.developer.pk).exists()
    assert Event.objects.filter(type="workspace.member_removed").count() == 1
    assert "dev@acme.test" not in emails(assert_ok(api.owner.get("/v1/users")))


def test_developer_cannot_remove_members(api, world):
    assert_error(api.developer.delete(member_url(world, world.viewer)), 403, "FORBIDDEN")
    assert role_of(world, world.viewer) == Role.VIEWER


def test_only_an_owner_grants_or_takes_away_ownership(api, world):
    url = f"/v1/workspaces/{world.acme.pk}/members/{world.developer.pk}"
    assert_error(api.admin.patch(url, {"role": "owner"}, format="json"), 403, "FORBIDDEN")
    assert Membership.objects.get(workspace=world.acme, user=world.developer).role == "developer"
    owner_url = f"/v1/workspaces/{world.acme.pk}/members/{world.owner.pk}"
    assert_error(api.admin.patch(owner_url, {"role": "viewer"}, format="json"), 403, "FORBIDDEN")
    assert_error(api.admin.delete(owner_url), 403, "FORBIDDEN")
    body = assert_ok(api.owner.patch(url, {"role": "owner"}, format="json"))
    assert body["data"]["role"] == "owner"


def test_admin_cannot_invite_an_owner(api, world):
    url = f"/v1/workspaces/{world.acme.pk}/invitations"
    response = api.admin.post(url, {"email": "boss@acme.test", "role": "owner"}, format="json")
    assert_error(response, 403, "FORBIDDEN")
    assert_ok(api.owner.post(url, {"email": "boss@acme.test", "role": "owner"}, format="json"), 201)
