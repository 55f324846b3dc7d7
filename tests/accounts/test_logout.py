"""Logout ends the session (docs/guide/authentication.md): the refresh token, the access tokens
issued in the session, and the access token the call was made with; on both denylist stores."""

from datetime import UTC, datetime, timedelta

import pytest
import redis
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken
from rest_framework_simplejwt.tokens import AccessToken, RefreshToken

from accounts import tasks, token_denylist
from accounts.models import ApiKey, DeniedToken, User
from tests.accounts.test_auth import LOGOUT, REFRESH, assert_unauthorized, bearer, login
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import make_api_key

ME = "/v1/users/me"
API_KEYS = "/v1/api-keys"
NEW_KEY = {"name": "after logout", "scopes": ["projects:read"], "expiresIn": "1d"}


def logout(tokens: dict, *, access: str | None = None):
    client = APIClient() if access is None else bearer(access)
    return client.post(LOGOUT, {"refresh_token": tokens["refresh_token"]}, format="json")


def refresh(tokens: dict):
    return APIClient().post(REFRESH, {"refresh_token": tokens["refresh_token"]}, format="json")


def jti(token: str) -> str:
    return AccessToken(token, verify=False)["jti"]


def session_of(token: str) -> str:
    return AccessToken(token, verify=False)[token_denylist.SESSION_CLAIM]


def redis_expiry(key: str) -> int:
    return token_denylist.store().client.expiretime(f"{token_denylist.REDIS_KEY_PREFIX}{key}")


def test_logout_ends_the_access_token_it_was_called_with(backend, world):
    tokens = assert_ok(login("owner@acme.test"))["data"]
    client = bearer(tokens["access_token"])
    assert_ok(client.get(ME))
    keys_before = ApiKey.objects.filter(user=world.owner).count()

    body = assert_ok(logout(tokens, access=tokens["access_token"]))

    assert body == {"success": True, "data": None}
    error = assert_unauthorized(client.get(ME))
    assert error["details"] == {}
    assert_unauthorized(client.post(API_KEYS, NEW_KEY, format="json"))
    assert ApiKey.objects.filter(user=world.owner).count() == keys_before
    assert_unauthorized(client.get("/v1/projects"))
    # The refresh token is spent too.
    assert_unauthorized(refresh(tokens))
    refresh_jti = RefreshToken(tokens["refresh_token"], verify=False)["jti"]
    assert BlacklistedToken.objects.filter(token__jti=refresh_jti).exists()
    entries = {f"jti:{jti(tokens['access_token'])}", f"sid:{session_of(tokens['access_token'])}"}
    assert set(DeniedToken.objects.values_list("key", flat=True)) == entries
    if backend == "redis":
        assert all(redis_expiry(entry) > 0 for entry in entries)


def test_logout_with_the_refresh_token_alone_ends_the_sessions_access_tokens(backend, world):
    """Rotation keeps the session: the access tokens of the login and of each refresh all end
    with a logout by the latest refresh token, even without a bearer token."""
    first = assert_ok(login("dev@acme.test"))["data"]
    second = assert_ok(refresh(first))["data"]
    assert session_of(first["access_token"]) == session_of(second["access_token"])
    for tokens in (first, second):
        assert_ok(bearer(tokens["access_token"]).get(ME))

    assert_ok(logout(second))

    for tokens in (first, second):
        assert_unauthorized(bearer(tokens["access_token"]).get(ME))
        assert_unauthorized(bearer(tokens["access_token"]).post(API_KEYS, NEW_KEY, format="json"))
    assert not ApiKey.objects.filter(user=world.developer).exists()
    assert_unauthorized(refresh(second))


def test_other_sessions_of_the_user_keep_working(backend, world):
    ended = assert_ok(login("owner@acme.test"))["data"]
    kept = assert_ok(login("owner@acme.test"))["data"]
    key = make_api_key(world.owner, ["users:read"])

    assert_ok(logout(ended, access=ended["access_token"]))

    assert_unauthorized(bearer(ended["access_token"]).get(ME))
    assert_ok(bearer(kept["access_token"]).get(ME))
    created = assert_ok(bearer(kept["access_token"]).post(API_KEYS, NEW_KEY, format="json"), 201)
    assert ApiKey.objects.filter(pk=created["data"]["id"], user=world.owner).exists()
    assert_ok(bearer(key).get(ME))
    renewed = assert_ok(refresh(kept))["data"]
    assert_ok(bearer(renewed["access_token"]).get(ME))


def test_logout_by_a_token_of_another_session_ends_that_access_token_only(backend, world):
    """The bearer token is ended even when it comes from another session of the same user;
    that other session's refresh token still works."""
    ended = assert_ok(login("owner@acme.test"))["data"]
    caller = assert_ok(login("owner@acme.test"))["data"]

    assert_ok(logout(ended, access=caller["access_token"]))

    assert_unauthorized(bearer(ended["access_token"]).get(ME))
    assert_unauthorized(bearer(caller["access_token"]).get(ME))
    renewed = assert_ok(refresh(caller))["data"]
    assert_ok(bearer(renewed["access_token"]).get(ME))


def test_logout_with_another_accounts_tokens_is_422_and_revokes_nothing(backend, world):
    owners = assert_ok(login("owner@acme.test"))["data"]
    developers = assert_ok(login("dev@acme.test"))["data"]

    response = logout(developers, access=owners["access_token"])

    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert list(error["details"]) == ["refresh_token"]
    assert not DeniedToken.objects.exists()
    assert not BlacklistedToken.objects.exists()
    assert_ok(bearer(owners["access_token"]).get(ME))
    assert_ok(bearer(developers["access_token"]).get(ME))
    assert_ok(refresh(developers))


@pytest.mark.parametrize("which", ["expired", "garbage", "api-key", "refresh-token"])
def test_logout_ignores_a_bearer_that_is_no_live_access_token(backend, world, which):
    """A client often logs out holding an expired access token: the logout still ends the
    session, and nothing that is not a live access token of ours is revoked."""
    tokens = assert_ok(login("owner@acme.test"))["data"]
    expired = AccessToken.for_user(world.owner)
    expired.set_exp(lifetime=-timedelta(seconds=1))
    key = make_api_key(world.owner, ["users:read"])
    credential = {
        "expired": str(expired),
        "garbage": "not-a-token",
        "api-key": key,
        "refresh-token": tokens["refresh_token"],
    }[which]

    assert_ok(logout(tokens, access=credential))

    assert_unauthorized(bearer(tokens["access_token"]).get(ME))
    assert_unauthorized(refresh(tokens))
    assert list(DeniedToken.objects.values_list("key", flat=True)) == [
        f"sid:{session_of(tokens['access_token'])}"
    ]
    assert_ok(bearer(key).get(ME))


def test_the_denylist_entry_lasts_as_long_as_the_token(backend, world):
    tokens = assert_ok(login("owner@acme.test"))["data"]
    access = AccessToken(tokens["access_token"])
    assert_ok(logout(tokens, access=tokens["access_token"]))
    token_entry = f"jti:{access['jti']}"
    session_entry = f"sid:{access[token_denylist.SESSION_CLAIM]}"
    expiry = datetime.fromtimestamp(access["exp"], UTC)

    rows = dict(DeniedToken.objects.values_list("key", "expires_at"))
    assert rows[token_entry] == expiry
    # The session's entry outlives every access token issued in it (at most 15 minutes).
    assert expiry <= rows[session_entry] <= datetime.now(UTC) + timedelta(seconds=902)
    if backend == "redis":
        assert redis_expiry(token_entry) == access["exp"]
        assert redis_expiry(session_entry) == int(rows[session_entry].timestamp())

    # Still within the token's life: the purge keeps the rows, the token stays refused.
    with time_machine.travel(expiry - timedelta(seconds=30), tick=False):
        assert tasks.denied_tokens_purge() == 0
        assert_unauthorized(bearer(tokens["access_token"]).get(ME))
    # Past both: the token's own expiry refuses it, and the rows go.
    with time_machine.travel(rows[session_entry] + timedelta(seconds=1), tick=False):
        assert_unauthorized(bearer(tokens["access_token"]).get(ME))
        assert tasks.denied_tokens_purge() == 2
    assert not DeniedToken.objects.exists()


def test_the_purge_keeps_entries_of_live_tokens(backend, world):
    old = assert_ok(login("owner@acme.test"))["data"]
    assert_ok(logout(old, access=old["access_token"]))
    with time_machine.travel(datetime.now(UTC) + timedelta(minutes=20), tick=False):
        recent = assert_ok(login("owner@acme.test"))["data"]
        assert_ok(logout(recent, access=recent["access_token"]))

        assert tasks.denied_tokens_purge() == 2

        assert set(DeniedToken.objects.values_list("key", flat=True)) == {
            f"jti:{jti(recent['access_token'])}",
            f"sid:{session_of(recent['access_token'])}",
        }
        assert_unauthorized(bearer(recent["access_token"]).get(ME))


# Cost per request ---------------------------------------------------------------------------


def denylist_queries(client) -> tuple[list[str], int]:
    """(the queries touching the denylist table, the number of all queries) of one
    GET /v1/users/me, after a first one that records an API key's use."""
    client.get(ME)
    table = DeniedToken._meta.db_table
    with CaptureQueriesContext(connection) as captured:
        assert_ok(client.get(ME))
    return [q["sql"] for q in captured.captured_queries if table in q["sql"]], len(captured)


def test_a_jwt_request_costs_what_an_api_key_request_costs(backend, world):
    """The check makes no query of its own: in the database it rides on the query that
    loads the user (an API key's lookup loads key and user in one too); in Redis it is one
    call. API-key requests never look at the denylist."""
    tokens = assert_ok(login("owner@acme.test"))["data"]

    jwt_touching, jwt_total = denylist_queries(bearer(tokens["access_token"]))
    key_touching, key_total = denylist_queries(client_for(world.owner))

    assert key_touching == []
    assert jwt_total == key_total
    if backend == "database":
        [query] = jwt_touching
        assert User._meta.db_table in query
    else:
        assert jwt_touching == []


# Redis trouble --------------------------------------------------------------------------------


@pytest.fixture
def redis_down(backend, monkeypatch):
    if backend != "redis":
        pytest.skip("a Redis store only")
    denylist = token_denylist.store()

    def fail(*args, **kwargs):
        raise redis.ConnectionError("Redis is down")

    monkeypatch.setattr(denylist.client, "exists", fail)
    return denylist


def test_when_redis_cannot_answer_the_database_does(backend, world, redis_down, caplog):
    ended = assert_ok(login("owner@acme.test"))["data"]
    kept = assert_ok(login("owner@acme.test"))["data"]
    assert_ok(logout(ended, access=ended["access_token"]))

    assert_unauthorized(bearer(ended["access_token"]).get(ME))
    assert_ok(bearer(kept["access_token"]).get(ME))
    assert_unauthorized(bearer(ended["access_token"]).post(API_KEYS, NEW_KEY, format="json"))
    assert "Token denylist: Redis failed" in caplog.text


def test_a_logout_that_cannot_reach_redis_revokes_nothing(backend, world, monkeypatch):
    if backend != "redis":
        pytest.skip("a Redis store only")
    tokens = assert_ok(login("owner@acme.test"))["data"]
    client = token_denylist.store().client

    def fail(self, *args, **kwargs):
        raise redis.ConnectionError("Redis is down")

    monkeypatch.setattr(type(client.pipeline()), "execute", fail)
    response = logout(tokens, access=tokens["access_token"])
    monkeypatch.undo()

    assert_error(response, 500, "INTERNAL_ERROR")
    assert not DeniedToken.objects.exists()
    assert not BlacklistedToken.objects.exists()
    assert_ok(bearer(tokens["access_token"]).get(ME))
    assert_ok(refresh(tokens))
