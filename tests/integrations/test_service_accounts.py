"""Service accounts: a workspace's identity for a program, managed by its owners and admins,
signing in with its keys alone, shown as the actor of what it does, and gone (its keys at
once) when deleted, its past actions keeping its name."""

import pytest

from accounts.models import ApiKey, User
from comments.selectors import mention_audience
from events.models import Event
from integrations.models import ServiceAccount
from issues.models import Issue, IssueHistory
from tests.conftest import assert_error, assert_ok, bearer, client_for, jwt_client

pytestmark = pytest.mark.django_db

BODY = {"name": "CI bot", "role": "developer", "tier": "standard"}


def accounts_url(world) -> str:
    return f"/v1/workspaces/{world.acme.pk}/service-accounts"


@pytest.fixture
def robot(world):
    """A service account of Acme on the team of its project, and a key of it (every scope),
    made as the API makes them."""
    body = {**BODY, "projects": [world.project.pk]}
    record = assert_ok(jwt_client(world.owner).post(accounts_url(world), body, format="json"), 201)
    made = jwt_client(world.owner).post(
        f"/v1/service-accounts/{record['data']['id']}/keys",
        {"name": "deploy", "scopes": ["projects:admin", "issues:admin", "users:read"]},
        format="json",
    )
    return record["data"], assert_ok(made, 201)["data"]["key"]


def test_an_owner_makes_a_service_account(world, robot):
    record, _key = robot
    assert record["kind"] == "service"
    assert record["name"] == "CI bot" and record["handle"] == "ci-bot"
    assert record["workspace_id"] == world.acme.pk
    assert record["role"] == "developer" and record["tier"] == "standard"
    assert record["projects"] == [world.project.pk]
    assert record["created_by"] == world.owner.pk
    user = User.objects.get(pk=record["id"])
    assert user.kind == "service" and not user.has_usable_password()
    assert ServiceAccount.objects.get(pk=record["id"]).workspace == world.acme
    assert Event.objects.filter(type="service_account.created", actor_id=world.owner.pk).exists()
    # It is listed and read as it was made, and among the workspace's members as a service.
    owner = client_for(world.owner, ["users:read"])
    listed = assert_ok(owner.get(accounts_url(world)))
    assert listed["data"] == [record] and listed["meta"]["total"] == 1
    assert assert_ok(owner.get(f"/v1/service-accounts/{record['id']}"))["data"] == record
    members = assert_ok(owner.get(f"/v1/workspaces/{world.acme.pk}/members"))["data"]
    assert {member["id"]: member["kind"] for member in members}[record["id"]] == "service"


def test_only_owners_and_admins_manage_them(world, robot):
    record, _key = robot
    one = f"/v1/service-accounts/{record['id']}"
    for persona in ("developer", "viewer"):
        client = client_for(getattr(world, persona))
        error = assert_error(client.get(accounts_url(world)), 403, "FORBIDDEN")
        assert error["details"]["required_ability"] == "manage"
        assert_error(client.get(one), 403, "FORBIDDEN")
        assert_error(client.post(accounts_url(world), BODY, format="json"), 403, "FORBIDDEN")
    outsider = client_for(world.outsider)
    assert_error(outsider.get(accounts_url(world)), 404, "NOT_FOUND")
    assert_error(outsider.get(one), 404, "NOT_FOUND")
    assert_ok(client_for(world.admin).get(one))
    error = assert_error(
        client_for(world.owner, projects=[world.project.pk]).get(one), 403, "FORBIDDEN"
    )
    assert error["details"] == {"project_limited": True}


def test_what_a_service_account_is_made_with_is_checked(world):
    owner = jwt_client(world.owner)
    for body, field in [
        ({**BODY, "role": "owner"}, "role"),
        ({**BODY, "tier": "enterprise"}, "tier"),  # more than the owner's own
        ({**BODY, "projects": [world.other_project.pk]}, "projects"),
        ({**BODY, "name": ""}, "name"),
    ]:
        error = assert_error(
            owner.post(accounts_url(world), body, format="json"), 422, "VALIDATION_ERROR"
        )
        assert list(error["details"]) == [field]
    assert not ServiceAccount.objects.exists()


def test_its_key_acts_as_it_and_it_is_the_actor(world, robot):
    record, key = robot
    client = bearer(key)
    me = assert_ok(client.get("/v1/users/me"))["data"]
    assert me["kind"] == "service" and me["id"] == record["id"]
    made = assert_ok(
        client.post(f"/v1/projects/{world.project.pk}/issues", {"title": "Built"}, format="json"),
        201,
    )["data"]
    assert made["reporter_id"] == record["id"]
    assert Event.objects.get(type="issue.created").actor_id == record["id"]
    patched = client.patch(f"/v1/issues/{made['id']}", {"status": "closed"}, format="json")
    assert_ok(patched)
    assert IssueHistory.objects.filter(issue_id=made["id"], actor_id=record["id"]).exists()


def test_a_service_account_cannot_sign_in_with_a_password(world, robot):
    record, _key = robot
    user = User.objects.get(pk=record["id"])
    user.set_password("a long enough password 123")
    user.save(update_fields=["password"])
    response = jwt_client(world.owner).post(
        "/v1/auth/login",
        {"email": user.email, "password": "a long enough password 123"},
        format="json",
    )
    assert_error(response, 401, "UNAUTHORIZED")


def test_keys_are_made_listed_and_revoked_with_a_sign_in(world, robot):
    record, key = robot
    keys = f"/v1/service-accounts/{record['id']}/keys"
    listed = assert_ok(jwt_client(world.owner).get(keys))["data"]
    assert [item["name"] for item in listed] == ["deploy"] and "key" not in listed[0]
    # Keys cannot mint keys, not even the owner's own.
    error = assert_error(
        client_for(world.owner).post(keys, {"name": "x", "scopes": ["issues:read"]}, format="json"),
        403,
        "FORBIDDEN",
    )
    assert error["details"] == {"required_credential": "jwt"}
    # A key limited to a project it sees; one it does not see is refused.
    limited = jwt_client(world.owner).post(
        keys,
        {"name": "one", "scopes": ["issues:read"], "projects": [world.project.pk]},
        format="json",
    )
    assert assert_ok(limited, 201)["data"]["projects"] == [world.project.pk]
    refused = jwt_client(world.owner).post(
        keys,
        {"name": "two", "scopes": ["issues:read"], "projects": [world.other_project.pk]},
        format="json",
    )
    assert_error(refused, 422, "VALIDATION_ERROR")
    assert_ok(jwt_client(world.owner).delete(f"{keys}/{listed[0]['id']}"))
    assert_error(bearer(key).get("/v1/users/me"), 401, "UNAUTHORIZED")


def test_deleting_one_revokes_its_keys_at_once_and_keeps_its_name(world, robot):
    record, key = robot
    client = bearer(key)
    made = assert_ok(
        client.post(f"/v1/projects/{world.project.pk}/issues", {"title": "Built"}, format="json"),
        201,
    )["data"]
    assert_ok(client_for(world.admin).delete(f"/v1/service-accounts/{record['id']}"))
    assert_error(client.get("/v1/users/me"), 401, "UNAUTHORIZED")
    assert not ApiKey.objects.filter(user_id=record["id"], revoked_at__isnull=True).exists()
    owner = client_for(world.owner)
    assert_error(owner.get(f"/v1/service-accounts/{record['id']}"), 404, "NOT_FOUND")
    assert assert_ok(owner.get(accounts_url(world)))["data"] == []
    # What it did stays, in its name.
    assert Issue.objects.get(pk=made["id"]).reporter.name == "CI bot"
    assert Event.objects.filter(type="service_account.deleted").exists()
    assert_error(owner.delete(f"/v1/service-accounts/{record['id']}"), 404, "NOT_FOUND")


def test_changing_one(world, robot):
    record, _key = robot
    admin = client_for(world.admin)
    one = f"/v1/service-accounts/{record['id']}"
    changed = assert_ok(
        admin.patch(one, {"name": "Release bot", "role": "viewer", "projects": []}, format="json")
    )["data"]
    assert (changed["name"], changed["role"], changed["projects"]) == ("Release bot", "viewer", [])
    assert changed["handle"] == "ci-bot"  # its handle stays
    assert Event.objects.filter(type="service_account.updated").count() == 1


@pytest.mark.parametrize("setting", [False, True])
def test_it_is_mentioned_only_where_the_setting_says(world, robot, settings, setting):
    record, _key = robot
    settings.MENTION_SERVICE_ACCOUNTS = setting
    found = mention_audience(project=world.project, handles=["ci-bot"], author=world.owner)
    assert [user.pk for user in found] == ([record["id"]] if setting else [])
