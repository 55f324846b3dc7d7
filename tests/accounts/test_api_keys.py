"""API keys: /v1/api-keys (JWT only), the key as a credential, and scopes."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import keys
from accounts.models import ApiKey
from collab.api.scopes import ALL_GRANTED, ALL_SCOPES, expand
from tests.conftest import assert_error, assert_ok, client_for, jwt_client
from tests.conftest import bearer as key_client
from tests.factories import make_api_key

KEY_FIELDS = {
    "id",
    "name",
    "prefix",
    "scopes",
    "projects",
    "expires_at",
    "last_used_at",
    "revoked",
    "revoked_at",
    "created_at",
}


def parse_time(value: str) -> datetime:
    assert value.endswith("Z"), value
    return datetime.fromisoformat(value)


def create_key(user, **body):
    payload = {"name": "CI", "scopes": ["projects:read"], "expiresIn": "90d", **body}
    return jwt_client(user).post("/v1/api-keys", payload, format="json")


def assert_unauthorized(response) -> dict:
    error = assert_error(response, 401, "UNAUTHORIZED")
    assert response["WWW-Authenticate"].startswith("Bearer")
    return error


# Management is JWT only ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", "/v1/api-keys", None),
        ("post", "/v1/api-keys", {"name": "x", "scopes": ["projects:read"]}),
        ("get", "/v1/api-keys/{id}", None),
        ("delete", "/v1/api-keys/{id}", None),
    ],
)
def test_api_key_cannot_manage_keys(world, method, path, body):
    existing = create_key(world.owner).json()["data"]["id"]
    client = client_for(world.owner)  # a full-scope API key

    response = getattr(client, method)(path.format(id=existing), body, format="json")

    error = assert_error(response, 403, "FORBIDDEN")
    assert error["details"] == {"required_credential": "jwt"}
    assert ApiKey.objects.filter(user=world.owner, revoked_at__isnull=True).count() == 2


def test_anonymous_cannot_manage_keys(db):
    assert_unauthorized(APIClient().get("/v1/api-keys"))


# Create -------------------------------------------------------------------------------------


def test_create_answers_the_key_once(world):
    response = create_key(world.owner, name="Deploy bot", scopes=["issues:write", "projects:read"])

    body = assert_ok(response, 201)
    data = body["data"]
    assert set(body) == {"success", "data"}
    assert set(data) == KEY_FIELDS | {"key"}
    assert response["Location"] == f"/v1/api-keys/{data['id']}"
    key = data["key"]
    assert key.startswith("clb_")
    assert keys.is_well_formed(key)
    assert data["name"] == "Deploy bot"
    assert data["scopes"] == ["issues:write", "projects:read"]
    assert data["projects"] is None  # not limited
    assert data["prefix"] == key[: len(data["prefix"])]
    assert data["last_used_at"] is None
    assert data["revoked"] is False and data["revoked_at"] is None
    # Only a hash is stored; the plaintext is nowhere in the row.
    row = ApiKey.objects.get(pk=data["id"])
    assert row.user == world.owner
    assert row.key_hash == keys.hash_key(key)
    row_values = [
        str(value) for value in ApiKey.objects.filter(pk=row.pk).values().first().values()
    ]
    assert key not in row_values
    # And the new key works.
    assert_ok(key_client(key).get("/v1/projects"))


def test_list_and_detail_never_show_the_key_or_its_hash(world):
    created = assert_ok(create_key(world.owner), 201)["data"]
    make_api_key(world.developer, ["projects:read"])  # someone else's key stays out

    listing = assert_ok(jwt_client(world.owner).get("/v1/api-keys"))
    detail = assert_ok(jwt_client(world.owner).get(f"/v1/api-keys/{created['id']}"))

    assert [item["id"] for item in listing["data"]] == [created["id"]]
    assert listing["meta"]["total"] == 1
    for item in (*listing["data"], detail["data"]):
        assert set(item) == KEY_FIELDS
        assert created["key"] not in str(item)
        assert keys.hash_key(created["key"]) not in str(item)
    assert detail["data"] == {k: v for k, v in created.items() if k != "key"}


@pytest.mark.parametrize(
    ("expires_in", "lifetime"),
    [
        ("90d", timedelta(days=90)),
        ("12h", timedelta(hours=12)),
        ("1y", timedelta(days=365)),
        ("30m", timedelta(minutes=30)),
        ("2w", timedelta(weeks=2)),
        ("45s", timedelta(seconds=45)),
    ],
)
def test_expires_in_sets_expires_at(world, expires_in, lifetime):
    before = timezone.now()
    data = assert_ok(create_key(world.owner, expiresIn=expires_in), 201)["data"]
    after = timezone.now()

    expires_at = parse_time(data["expires_at"])
    assert before + lifetime - timedelta(seconds=1) <= expires_at <= after + lifetime
    assert ApiKey.objects.get(pk=data["id"]).expires_at == expires_at


@pytest.mark.parametrize("expires_in", [None, "never"])
def test_expires_in_never_means_no_expiry(world, expires_in, settings):
    settings.API_KEY_ALLOW_NO_EXPIRY = True

    data = assert_ok(create_key(world.owner, expiresIn=expires_in), 201)["data"]

    assert data["expires_at"] is None
    assert ApiKey.objects.get(pk=data["id"]).expires_at is None


def test_no_expiry_can_be_forbidden_by_the_operator(world, settings):
    settings.API_KEY_ALLOW_NO_EXPIRY = False

    error = assert_error(create_key(world.owner, expiresIn="never"), 422, "VALIDATION_ERROR")

    assert list(error["details"]) == ["expiresIn"]
    assert not ApiKey.objects.filter(user=world.owner).exists()


@pytest.mark.parametrize("expires_in", ["abc", "0d", "10x", 5, "d", "-1d", "1.5h"])
def test_bad_expires_in_is_422(world, expires_in):
    error = assert_error(create_key(world.owner, expiresIn=expires_in), 422, "VALIDATION_ERROR")

    assert list(error["details"]) == ["expiresIn"]
    assert all(isinstance(message, str) for message in error["details"]["expiresIn"])
    assert not ApiKey.objects.filter(user=world.owner).exists()


@pytest.mark.parametrize(
    "scopes",
    [["projects:read", "wizardry:cast"], ["users:admin"], ["projects"]],
    ids=["unknown-group", "unknown-level", "no-level"],
)
def test_unknown_scope_is_422(world, scopes):
    error = assert_error(create_key(world.owner, scopes=scopes), 422, "VALIDATION_ERROR")

    assert list(error["details"]) == ["scopes"]
    assert not ApiKey.objects.filter(user=world.owner).exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scopes": ["projects:read"]}, "name"),
        ({"name": "x"}, "scopes"),
        ({"name": "x", "scopes": []}, "scopes"),
        ({"name": "x", "scopes": "projects:read"}, "scopes"),
    ],
)
def test_create_with_missing_or_malformed_fields_is_422(world, body, field):
    response = jwt_client(world.owner).post("/v1/api-keys", body, format="json")

    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert field in error["details"]
    assert not ApiKey.objects.filter(user=world.owner).exists()


def test_read_only_fields_in_the_body_change_nothing(world):
    data = assert_ok(
        create_key(world.owner, id=999999, revoked_at="2020-01-01T00:00:00Z", key="clb_mine"),
        201,
    )["data"]

    assert data["id"] != 999999
    assert data["revoked_at"] is None
    assert data["key"] != "clb_mine"


# Revoke -------------------------------------------------------------------------------------


def test_delete_revokes_the_key(world):
    data = assert_ok(create_key(world.owner), 201)["data"]
    assert_ok(key_client(data["key"]).get("/v1/projects"))

    response = jwt_client(world.owner).delete(f"/v1/api-keys/{data['id']}")

    assert response.status_code == 200
    assert response.json() == {"success": True, "data": None}
    row = ApiKey.objects.get(pk=data["id"])
    assert row.revoked_at is not None
    error = assert_unauthorized(key_client(data["key"]).get("/v1/projects"))
    assert "revoked" in error["message"]
    # The revoked key stays listed, marked as such.
    detail = assert_ok(jwt_client(world.owner).get(f"/v1/api-keys/{data['id']}"))["data"]
    assert detail["revoked"] is True
    assert parse_time(detail["revoked_at"]) == row.revoked_at


def test_revoking_twice_keeps_the_first_revocation_time(world):
    data = assert_ok(create_key(world.owner), 201)["data"]
    assert_ok(jwt_client(world.owner).delete(f"/v1/api-keys/{data['id']}"))
    first = ApiKey.objects.get(pk=data["id"]).revoked_at

    assert_ok(jwt_client(world.owner).delete(f"/v1/api-keys/{data['id']}"))

    assert ApiKey.objects.get(pk=data["id"]).revoked_at == first


@pytest.mark.parametrize("method", ["get", "delete"])
def test_another_users_key_is_404(world, method):
    theirs = assert_ok(create_key(world.outsider), 201)["data"]

    response = getattr(jwt_client(world.owner), method)(f"/v1/api-keys/{theirs['id']}")

    assert_error(response, 404, "NOT_FOUND")
    assert ApiKey.objects.get(pk=theirs["id"]).revoked_at is None
    assert_ok(key_client(theirs["key"]).get("/v1/projects"))


def test_unknown_key_id_is_404(world):
    assert_error(jwt_client(world.owner).get("/v1/api-keys/987654"), 404, "NOT_FOUND")


# The key as a credential --------------------------------------------------------------------


def test_expired_key_is_401(world):
    key = make_api_key(world.owner, ALL_SCOPES, expires_at=timezone.now() - timedelta(seconds=1))

    error = assert_unauthorized(key_client(key).get("/v1/projects"))

    assert "expired" in error["message"]


def test_key_of_a_suspended_user_is_401(world):
    key = make_api_key(world.developer, ALL_SCOPES)
    world.developer.status = "suspended"
    world.developer.save(update_fields=["status"])

    assert_unauthorized(key_client(key).get("/v1/projects"))


def test_unknown_well_formed_key_is_401(world):
    assert_unauthorized(key_client(keys.generate_key()).get("/v1/projects"))


def test_key_with_a_wrong_checksum_is_refused_without_a_query(world):
    key = make_api_key(world.owner, ALL_SCOPES)
    last = key[-1]
    tampered = key[:-1] + ("A" if last != "A" else "B")
    assert not keys.is_well_formed(tampered)

    with CaptureQueriesContext(connection) as queries:
        response = key_client(tampered).get("/v1/projects")

    assert_unauthorized(response)
    # Without Redis the limiter counts the address in the database; the key is never looked up.
    table = ApiKey._meta.db_table
    assert [q["sql"] for q in queries.captured_queries if table in q["sql"]] == []


def _apikey_updates(queries) -> list[str]:
    return [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith("UPDATE") and "accounts_apikey" in q["sql"]
    ]


def test_last_used_at_is_written_at_most_once_a_minute(world):
    key = make_api_key(world.owner, ALL_SCOPES)
    row = ApiKey.objects.get(key_hash=keys.hash_key(key))
    assert row.last_used_at is None

    before = timezone.now()
    with CaptureQueriesContext(connection) as first:
        assert_ok(key_client(key).get("/v1/projects"))
    row.refresh_from_db()
    first_use = row.last_used_at
    assert first_use is not None and before <= first_use <= timezone.now()
    assert len(_apikey_updates(first)) == 1

    with CaptureQueriesContext(connection) as second:
        assert_ok(key_client(key).get("/v1/projects"))
    row.refresh_from_db()
    assert row.last_used_at == first_use
    assert _apikey_updates(second) == []

    # Once the recorded use is over a minute old, the next request records it again.
    stale = timezone.now() - timedelta(minutes=2)
    ApiKey.objects.filter(pk=row.pk).update(last_used_at=stale)
    with CaptureQueriesContext(connection) as third:
        assert_ok(key_client(key).get("/v1/projects"))
    row.refresh_from_db()
    assert row.last_used_at > stale + timedelta(minutes=1)
    assert len(_apikey_updates(third)) == 1


def test_last_used_at_shows_in_the_listing(world):
    data = assert_ok(create_key(world.owner), 201)["data"]
    assert_ok(key_client(data["key"]).get("/v1/projects"))

    listed = assert_ok(jwt_client(world.owner).get("/v1/api-keys"))["data"][0]

    assert parse_time(listed["last_used_at"]) <= datetime.now(UTC)


# Scopes -------------------------------------------------------------------------------------


def test_read_scope_cannot_write(world):
    client = client_for(world.developer, ["projects:read"])

    assert_ok(client.get("/v1/projects"))
    error = assert_error(
        client.post("/v1/projects", {"name": "Nope"}, format="json"), 403, "FORBIDDEN"
    )

    assert error["details"]["required_scope"] == "projects:write"
    assert not world.acme.projects.filter(name="Nope").exists()


def test_admin_scope_implies_write_and_read(world):
    client = client_for(world.owner, ["projects:admin"])

    assert_ok(client.get("/v1/projects"))
    created = assert_ok(client.post("/v1/projects", {"name": "Implied"}, format="json"), 201)
    assert_ok(client.delete(f"/v1/projects/{created['data']['id']}"))


def test_write_scope_does_not_imply_admin(world):
    client = client_for(world.owner, ["projects:write"])

    error = assert_error(client.delete(f"/v1/projects/{world.project.pk}"), 403, "FORBIDDEN")

    assert error["details"]["required_scope"] == "projects:admin"
    assert world.acme.projects.filter(pk=world.project.pk).exists()


def test_scopes_of_one_group_grant_nothing_in_another(world):
    client = client_for(world.owner, ["issues:admin", "users:write"])

    error = assert_error(client.get("/v1/projects"), 403, "FORBIDDEN")

    assert error["details"]["required_scope"] == "projects:read"
    assert_ok(client.get("/v1/users"))  # users:write implies users:read


def test_key_acts_with_its_owners_role(world):
    """Scopes limit a key; they never lift its owner's role (a viewer cannot write)."""
    client = client_for(world.viewer, ALL_SCOPES)

    assert_error(client.post("/v1/projects", {"name": "Nope"}, format="json"), 403, "FORBIDDEN")


@pytest.mark.parametrize(
    ("scopes", "expected"),
    [
        (["issues:admin"], {"issues:admin", "issues:write", "issues:read"}),
        (["issues:write"], {"issues:write", "issues:read"}),
        (["issues:read"], {"issues:read"}),
        (["projects:admin"], {"projects:admin", "projects:write", "projects:read"}),
        (["users:write"], {"users:write", "users:read"}),
        (["projects:read", "users:write"], {"projects:read", "users:read", "users:write"}),
        (["issues:admin", "issues:read"], {"issues:admin", "issues:write", "issues:read"}),
        (["users:admin", "nope:read", "projects", ""], set()),
        ([], set()),
    ],
)
def test_expand_applies_the_hierarchy(scopes, expected):
    assert expand(scopes) == frozenset(expected)


def test_all_scopes_expand_to_themselves():
    assert frozenset(ALL_SCOPES) == ALL_GRANTED
    assert set(ALL_SCOPES) == {
        "projects:read",
        "projects:write",
        "projects:admin",
        "issues:read",
        "issues:write",
        "issues:admin",
        "users:read",
        "users:write",
    }
