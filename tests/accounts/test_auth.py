"""JWT sessions: POST /v1/auth/login, /refresh and /logout, and the access token as Bearer."""

import threading
from datetime import timedelta

import jwt
import pytest
from django.db import connection, connections
from rest_framework.test import APIClient
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken
from rest_framework_simplejwt.tokens import AccessToken, RefreshToken

from accounts import services
from accounts.models import Role, User
from collab.api.exceptions import Unauthorized
from tests.conftest import assert_error, assert_ok, bearer
from tests.factories import PASSWORD, MembershipFactory, UserFactory, WorkspaceFactory

LOGIN = "/v1/auth/login"
REFRESH = "/v1/auth/refresh"
LOGOUT = "/v1/auth/logout"


def login(email: str, password: str = PASSWORD):
    return APIClient().post(LOGIN, {"email": email, "password": password}, format="json")


def assert_unauthorized(response) -> dict:
    error = assert_error(response, 401, "UNAUTHORIZED")
    assert response["WWW-Authenticate"].startswith("Bearer")
    return error


# Login --------------------------------------------------------------------------------------


def test_login_answers_a_token_pair(world):
    outstanding_before = OutstandingToken.objects.count()

    body = assert_ok(login("owner@acme.test"))

    assert set(body) == {"success", "data"}
    data = body["data"]
    assert set(data) == {"access_token", "refresh_token", "token_type", "expires_in"}
    assert data["token_type"] == "Bearer"
    assert data["expires_in"] == 900
    access = AccessToken(data["access_token"])
    refresh = RefreshToken(data["refresh_token"])
    assert access["user_id"] == refresh["user_id"] == str(world.owner.pk)
    assert access["exp"] - access["iat"] == 900
    assert refresh["exp"] - refresh["iat"] == 7 * 86400
    # The refresh token is tracked, so it can be rotated and revoked.
    assert OutstandingToken.objects.count() == outstanding_before + 1
    assert OutstandingToken.objects.filter(jti=refresh["jti"], user=world.owner).exists()


def test_login_email_is_case_insensitive(world):
    assert_ok(login("  Owner@ACME.test "))


@pytest.mark.parametrize(
    ("email", "password"),
    [("owner@acme.test", "wrong-password"), ("nobody@acme.test", PASSWORD)],
    ids=["wrong-password", "unknown-email"],
)
def test_login_with_bad_credentials_is_401(world, email, password):
    error = assert_unauthorized(login(email, password))

    assert error["details"] == {}
    assert not OutstandingToken.objects.exists()


def test_login_with_a_blank_password_is_422(world):
    error = assert_error(login("owner@acme.test", ""), 422, "VALIDATION_ERROR")

    assert list(error["details"]) == ["password"]
    assert not OutstandingToken.objects.exists()


@pytest.mark.parametrize("status", [User.Status.SUSPENDED, User.Status.INVITED])
def test_login_of_an_inactive_user_is_401(world, status):
    User.objects.filter(pk=world.developer.pk).update(status=status)

    assert_unauthorized(login("dev@acme.test"))
    assert not OutstandingToken.objects.exists()


def test_login_gives_the_same_answer_for_unknown_email_and_wrong_password(world):
    unknown = assert_unauthorized(login("nobody@acme.test"))
    wrong = assert_unauthorized(login("owner@acme.test", "nope-nope-nope"))
    assert unknown == wrong


def test_login_missing_fields_is_422_with_details_per_field(db):
    error = assert_error(APIClient().post(LOGIN, {}, format="json"), 422, "VALIDATION_ERROR")

    assert set(error["details"]) == {"email", "password"}
    for messages in error["details"].values():
        assert isinstance(messages, list) and all(isinstance(m, str) for m in messages)


def test_login_without_json_body_is_rejected(db):
    response = APIClient().post(LOGIN, "email=a&password=b", content_type="text/plain")
    assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")


# The access token as a credential ---------------------------------------------------------


def test_access_token_authenticates_as_bearer(world):
    tokens = assert_ok(login("owner@acme.test"))["data"]

    body = assert_ok(bearer(tokens["access_token"]).get("/v1/projects"))

    assert [project["name"] for project in body["data"]] == ["Rocket"]
    me = assert_ok(bearer(tokens["access_token"]).get("/v1/users/me"))["data"]
    assert me["id"] == world.owner.pk


def test_access_token_carries_every_scope(world):
    """A JWT is not limited by scopes: it can create projects and read users."""
    access = assert_ok(login("dev@acme.test"))["data"]["access_token"]
    client = bearer(access)

    assert_ok(client.post("/v1/projects", {"name": "By JWT"}, format="json"), 201)
    assert_ok(client.get("/v1/users"))


def test_refresh_token_is_refused_as_a_bearer_credential(world):
    tokens = assert_ok(login("owner@acme.test"))["data"]

    assert_unauthorized(bearer(tokens["refresh_token"]).get("/v1/projects"))


def test_expired_access_token_is_401(world):
    token = AccessToken.for_user(world.owner)
    token.set_exp(lifetime=-timedelta(seconds=1))

    assert_unauthorized(bearer(str(token)).get("/v1/projects"))


@pytest.mark.parametrize(
    "credential",
    ["not-a-jwt", "a.b.c", "eyJhbGciOiJIUzI1NiJ9.e30.", "clb_short"],
    ids=["garbage", "three-parts", "unsigned", "short-key"],
)
def test_malformed_bearer_credential_is_401(world, credential):
    assert_unauthorized(bearer(credential).get("/v1/projects"))


def test_token_signed_with_another_key_is_401(world):
    genuine = AccessToken.for_user(world.owner)
    forged = jwt.encode(
        dict(genuine.payload), "not-the-server-secret-but-long-enough-for-hs256", algorithm="HS256"
    )

    assert_unauthorized(bearer(forged).get("/v1/projects"))


def test_token_of_a_suspended_user_is_401(world):
    access = assert_ok(login("dev@acme.test"))["data"]["access_token"]
    User.objects.filter(pk=world.developer.pk).update(status=User.Status.SUSPENDED)

    assert_unauthorized(bearer(access).get("/v1/projects"))


def test_token_of_a_deleted_user_is_401(world):
    access = str(AccessToken.for_user(world.developer))
    world.developer.delete()

    assert_unauthorized(bearer(access).get("/v1/projects"))


@pytest.mark.parametrize("header", ["Token abc", "Basic Zm9vOmJhcg==", "Bearer", "Bearer a b"])
def test_other_authorization_schemes_are_401(world, header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    assert_unauthorized(client.get("/v1/projects"))


def test_no_credentials_is_401(world):
    assert_unauthorized(APIClient().get("/v1/projects"))


# Refresh ------------------------------------------------------------------------------------


def test_refresh_rotates_the_pair(world):
    first = assert_ok(login("owner@acme.test"))["data"]

    body = assert_ok(
        APIClient().post(REFRESH, {"refresh_token": first["refresh_token"]}, format="json")
    )

    second = body["data"]
    assert set(second) == {"access_token", "refresh_token", "token_type", "expires_in"}
    assert second["token_type"] == "Bearer"
    assert second["expires_in"] == 900
    assert second["refresh_token"] != first["refresh_token"]
    assert second["access_token"] != first["access_token"]
    # The old refresh token is spent, the new pair works.
    first_jti = RefreshToken(first["refresh_token"], verify=False)["jti"]
    second_jti = RefreshToken(second["refresh_token"], verify=False)["jti"]
    assert BlacklistedToken.objects.filter(token__jti=first_jti).exists()
    assert not BlacklistedToken.objects.filter(token__jti=second_jti).exists()
    assert_ok(bearer(second["access_token"]).get("/v1/projects"))
    assert_unauthorized(
        APIClient().post(REFRESH, {"refresh_token": first["refresh_token"]}, format="json")
    )
    third = assert_ok(
        APIClient().post(REFRESH, {"refresh_token": second["refresh_token"]}, format="json")
    )
    assert_ok(bearer(third["data"]["access_token"]).get("/v1/projects"))


def test_refresh_with_an_access_token_is_401(world):
    tokens = assert_ok(login("owner@acme.test"))["data"]

    assert_unauthorized(
        APIClient().post(REFRESH, {"refresh_token": tokens["access_token"]}, format="json")
    )


@pytest.mark.parametrize("value", ["garbage", "a.b.c"])
def test_refresh_with_a_malformed_token_is_401(world, value):
    assert_unauthorized(APIClient().post(REFRESH, {"refresh_token": value}, format="json"))


def test_refresh_with_an_expired_token_is_401(world):
    token = RefreshToken.for_user(world.owner)
    token.set_exp(lifetime=-timedelta(seconds=1))

    assert_unauthorized(APIClient().post(REFRESH, {"refresh_token": str(token)}, format="json"))


def test_refresh_of_a_suspended_user_is_401_and_mints_nothing(world):
    tokens = assert_ok(login("dev@acme.test"))["data"]
    User.objects.filter(pk=world.developer.pk).update(status=User.Status.SUSPENDED)
    outstanding = OutstandingToken.objects.count()

    response = APIClient().post(REFRESH, {"refresh_token": tokens["refresh_token"]}, format="json")

    assert_unauthorized(response)
    assert OutstandingToken.objects.count() == outstanding


def test_refresh_without_token_is_422(db):
    error = assert_error(APIClient().post(REFRESH, {}, format="json"), 422, "VALIDATION_ERROR")
    assert "refresh_token" in error["details"]


# Logout -------------------------------------------------------------------------------------


def test_logout_revokes_the_refresh_token(world):
    tokens = assert_ok(login("owner@acme.test"))["data"]

    body = assert_ok(
        APIClient().post(LOGOUT, {"refresh_token": tokens["refresh_token"]}, format="json")
    )

    assert body == {"success": True, "data": None}
    jti = RefreshToken(tokens["refresh_token"], verify=False)["jti"]
    assert BlacklistedToken.objects.filter(token__jti=jti).exists()
    assert_unauthorized(
        APIClient().post(REFRESH, {"refresh_token": tokens["refresh_token"]}, format="json")
    )


def test_logout_with_an_invalid_token_is_401(world):
    assert_unauthorized(APIClient().post(LOGOUT, {"refresh_token": "garbage"}, format="json"))


def test_logout_without_token_is_422(db):
    error = assert_error(APIClient().post(LOGOUT, {}, format="json"), 422, "VALIDATION_ERROR")
    assert "refresh_token" in error["details"]


# Concurrency --------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_concurrent_refreshes_of_one_token_let_exactly_one_through():
    """Twenty requests race with the same refresh token: one rotation, nineteen refusals."""
    if connection.vendor == "sqlite":
        pytest.skip("needs real concurrent transactions: CI runs this on PostgreSQL")
    workspace = WorkspaceFactory()
    user = UserFactory()
    MembershipFactory(workspace=workspace, user=user, role=Role.OWNER)
    raw = str(RefreshToken.for_user(user))
    outstanding_before = OutstandingToken.objects.count()

    threads_count = 20
    barrier = threading.Barrier(threads_count)
    results: list[object] = []
    lock = threading.Lock()

    def attempt():
        try:
            barrier.wait(timeout=10)
            try:
                outcome: object = services.auth_refresh(refresh_token=raw)
            except Unauthorized as exc:
                outcome = exc
            except Exception as exc:  # recorded, so the assertion shows it
                outcome = exc
            with lock:
                results.append(outcome)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=attempt) for _ in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)

    successes = [r for r in results if isinstance(r, dict)]
    refusals = [r for r in results if isinstance(r, Unauthorized)]
    assert len(results) == threads_count
    assert len(successes) == 1, results
    assert len(refusals) == threads_count - 1, results
    assert OutstandingToken.objects.count() == outstanding_before + 1
    jti = RefreshToken(raw, verify=False)["jti"]
    assert BlacklistedToken.objects.filter(token__jti=jti).count() == 1
    new_jti = RefreshToken(successes[0]["refresh_token"])["jti"]
    assert OutstandingToken.objects.filter(jti=new_jti, user=user).exists()
