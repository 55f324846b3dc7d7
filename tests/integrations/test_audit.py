"""The audit of credentials: every write says who made it and through what (the event's and
the history row's ``actor``), and a workspace's owners and admins read its credential events
at ``GET /v1/workspaces/:id/audit-log``: keys and apps' tokens made, used for the first time
from an address, revoked; apps registered and authorised; service accounts changed."""

import pytest
from django.test import Client

from accounts.models import ApiKey, AuditEntry
from events.models import Event
from issues.models import IssueHistory
from tests.conftest import assert_error, assert_ok, bearer, client_for, jwt_client

from .oauth import REDIRECT_URI, app_register, authorize_path, code_of, pkce_pair, token_request

pytestmark = pytest.mark.django_db


def audit_url(world) -> str:
    return f"/v1/workspaces/{world.acme.pk}/audit-log"


def entries(world, **filters) -> list[dict]:
    query = "&".join(f"{name}={value}" for name, value in filters.items())
    answer = assert_ok(jwt_client(world.owner).get(f"{audit_url(world)}?per_page=100&{query}"))
    return answer["data"]


def test_a_keys_life_is_in_the_audit_log(world):
    made = jwt_client(world.developer).post(
        "/v1/api-keys", {"name": "ci", "scopes": ["issues:write"]}, format="json"
    )
    key = assert_ok(made, 201)["data"]
    [created] = entries(world, type="api_key.created")
    assert created["subject"]["api_key"] == {
        "id": key["id"],
        "name": "ci",
        "prefix": key["prefix"],
        "user_id": world.developer.pk,
        "scopes": ["issues:write"],
        "projects": None,
    }
    assert created["actor"]["id"] == world.developer.pk
    assert created["actor"]["via"] == {"credential": "jwt", "key_id": None, "app_id": None}
    assert created["address"] == "127.0.0.1"
    assert "key" not in str(created["subject"]).replace('"api_key"', "").replace("'api_key'", "")

    # Its first use from an address, once; another address, once more.
    as_key = bearer(key["key"])
    for _ in range(3):
        assert_ok(as_key.get(f"/v1/projects/{world.project.pk}/issues"))
    assert_ok(as_key.get(f"/v1/projects/{world.project.pk}/issues", REMOTE_ADDR="203.0.113.9"))
    used = entries(world, type="api_key.used_from_new_address")
    assert [entry["address"] for entry in used] == ["203.0.113.9", "127.0.0.1"]
    assert used[0]["actor"]["via"] == {"credential": "api_key", "key_id": key["id"], "app_id": None}
    assert ApiKey.objects.get(pk=key["id"]).addresses == ["127.0.0.1", "203.0.113.9"]

    assert_ok(jwt_client(world.developer).delete(f"/v1/api-keys/{key['id']}"))
    [revoked] = entries(world, type="api_key.revoked")
    assert revoked["subject"]["api_key"]["id"] == key["id"]
    # Newest first, and only Acme's: the developer is no member of Globex.
    kinds = [entry["type"] for entry in entries(world, actor_id=world.developer.pk)]
    assert kinds == [
        "api_key.revoked",
        "api_key.used_from_new_address",
        "api_key.used_from_new_address",
        "api_key.created",
    ]
    assert not AuditEntry.objects.filter(workspace=world.globex).exists()


def test_a_service_accounts_writes_name_it_and_its_key(world):
    owner = jwt_client(world.owner)
    robot = assert_ok(
        owner.post(
            f"/v1/workspaces/{world.acme.pk}/service-accounts",
            {"name": "CI bot", "projects": [world.project.pk]},
            format="json",
        ),
        201,
    )["data"]
    key = assert_ok(
        owner.post(
            f"/v1/service-accounts/{robot['id']}/keys",
            {"name": "nightly", "scopes": ["issues:write"]},
            format="json",
        ),
        201,
    )["data"]
    made = bearer(key["key"]).post(
        f"/v1/projects/{world.project.pk}/issues", {"title": "Nightly failed"}, format="json"
    )
    issue = assert_ok(made, 201)["data"]
    via = {"credential": "api_key", "key_id": key["id"], "app_id": None}
    event = Event.objects.get(type="issue.created")
    assert event.as_payload()["actor"] == {"id": robot["id"], "kind": "service", "via": via}
    history = assert_ok(client_for(world.owner).get(f"/v1/issues/{issue['id']}/history"))
    assert history["data"][0]["actor"] == {"id": robot["id"], "kind": "service", "via": via}
    assert IssueHistory.objects.get(issue_id=issue["id"]).actor_detail["via"] == via

    assert_ok(owner.delete(f"/v1/service-accounts/{robot['id']}"))
    kinds = [entry["type"] for entry in entries(world)]
    assert kinds[:2] == ["service_account.deleted", "api_key.revoked"]
    assert "service_account.created" in kinds and "api_key.created" in kinds
    [key_made] = entries(world, type="api_key.created")
    assert key_made["actor"]["id"] == world.owner.pk  # the owner made the robot's key
    assert key_made["subject"]["api_key"]["user_id"] == robot["id"]


def test_an_apps_life_and_its_tokens_are_in_the_audit_log(world):
    app = app_register(world)
    verifier, challenge = pkce_pair()
    browser = Client()
    browser.force_login(world.developer)
    page = browser.get(authorize_path(app, challenge))
    form = {field.name: field.value() for field in page.context["form"] if field.is_hidden}
    allowed = browser.post(
        "/oauth/authorize",
        {**{k: v for k, v in form.items() if v}, "projects": [world.project.pk], "allow": "on"},
    )
    tokens = Client().post(
        "/oauth/token",
        token_request(
            app,
            grant_type="authorization_code",
            code=code_of(allowed["Location"]),
            redirect_uri=REDIRECT_URI,
            code_verifier=verifier,
        ),
    )
    token = tokens.json()["access_token"]
    as_app = bearer(token)
    made = as_app.post(
        f"/v1/projects/{world.project.pk}/issues", {"title": "Synced"}, format="json"
    )
    assert_ok(made, 201)
    assert_ok(as_app.get("/v1/projects"))
    event = Event.objects.get(type="issue.created")
    assert event.as_payload()["actor"] == {
        "id": world.developer.pk,
        "kind": "person",
        "via": {"credential": "oauth_app", "key_id": None, "app_id": app["id"]},
    }
    [used] = entries(world, type="app_token.used_from_new_address")
    assert used["subject"]["authorization"]["name"] == "Sync bot"
    assert used["address"] == "127.0.0.1"
    mine = jwt_client(world.developer)
    [authorization] = assert_ok(mine.get("/v1/users/me/authorizations"))["data"]
    assert_ok(mine.delete(f"/v1/users/me/authorizations/{authorization['id']}"))
    [authorized] = entries(world, type="app.authorized")
    assert authorized["actor"]["via"] == {"credential": "session", "key_id": None, "app_id": None}
    assert authorized["address"] == "127.0.0.1"
    kinds = [entry["type"] for entry in entries(world)]
    assert kinds == [
        "app.revoked",
        "app_token.used_from_new_address",
        "app.authorized",
        "app.created",
    ]


def test_only_owners_and_admins_read_the_audit_log(world):
    assert_ok(jwt_client(world.admin).get(audit_url(world)))
    assert_ok(client_for(world.owner, ["users:read"]).get(audit_url(world)))
    assert_error(client_for(world.developer).get(audit_url(world)), 403, "FORBIDDEN")
    assert_error(client_for(world.outsider).get(audit_url(world)), 404, "NOT_FOUND")
    limited = client_for(world.owner, projects=[world.project.pk])
    assert limited.get(audit_url(world)).json()["error"]["details"] == {"project_limited": True}
    assert_error(client_for(world.owner, ["issues:read"]).get(audit_url(world)), 403, "FORBIDDEN")
    refused = client_for(world.owner).get(f"{audit_url(world)}?type=nothing.here")
    assert_error(refused, 400, "BAD_REQUEST")
