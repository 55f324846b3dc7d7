"""Rate limits over the API (docs/guide/rate-limits.md), on each counter store: the headers and
their values, the window and its reset, tiers, ``GET /v1/rate_limit``, and requests without
valid credentials counted per client address."""

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import AccessToken

from accounts.models import Membership, Role, User
from collab.api.ratelimit import client_address
from tests.conftest import assert_error, assert_ok, bearer, client_for
from tests.factories import PASSWORD, UserFactory, WorkspaceFactory, make_api_key
from tests.ratelimit.conftest import rate_headers
from tests.test_admin import form_data, url

ME = "/v1/users/me"
STATUS = "/v1/rate_limit"


@pytest.fixture
def ada(db) -> User:
    user = UserFactory(email="ada@example.com")
    Membership.objects.create(workspace=WorkspaceFactory(), user=user, role=Role.OWNER)
    return user


# Headers and their values -------------------------------------------------------------------


def test_headers_count_down_one_per_request_then_429(backend, clock, ada):
    client = client_for(ada)
    reset = int(clock.time) + 3600
    for used in range(1, 6):
        response = client.get(ME)
        assert_ok(response)
        assert rate_headers(response) == {
            "Limit": 5,
            "Remaining": 5 - used,
            "Used": used,
            "Reset": reset,
        }
        clock.advance(10)

    refused = client.get(ME)
    error = assert_error(refused, 429, "RATE_LIMITED")
    assert rate_headers(refused) == {"Limit": 5, "Remaining": 0, "Used": 5, "Reset": reset}
    assert int(refused["Retry-After"]) == 3600 - 50
    assert "5 requests per hour on the standard tier" in error["message"]
    assert error["details"] == {
        "limit": 5,
        "reset": reset,
        "retry_after": 3550,
        "tier": "standard",
    }
    # A refused request is not counted.
    assert assert_ok(client.get(STATUS))["data"]["used"] == 5


def test_every_kind_of_answer_carries_the_headers_and_counts(backend, settings, ada):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "standard": 100}
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client = client_for(ada)
    reader = client_for(ada, scopes=["issues:read"])
    answers = [
        (client.get(ME), 200),
        (client.post("/v1/projects", {"name": "Engine"}, format="json"), 201),
        (client.get("/v1/projects/987654321"), 404),
        (client.get("/v1/no/such/route"), 404),
        (reader.get("/v1/projects"), 403),
        (client.put(ME, {}, format="json"), 405),
        (client.post("/v1/projects", {"name": "x" * 2000}, format="json"), 413),
        (client.post("/v1/projects", "name=x", content_type="text/plain"), 415),
        (client.post("/v1/projects", {}, format="json"), 422),
        (client.get("/v1/projects?page=abc"), 400),
    ]
    for used, (response, status) in enumerate(answers, start=1):
        assert response.status_code == status, (status, response.content)
        headers = rate_headers(response)
        assert (headers["Limit"], headers["Used"], headers["Remaining"]) == (
            100,
            used,
            100 - used,
        ), status


def test_the_window_ends_at_its_reset_and_a_new_one_starts(backend, clock, ada):
    client = client_for(ada)
    first = rate_headers(client.get(ME))
    start = int(clock.time)
    assert first["Reset"] == start + 3600
    for _ in range(4):
        clock.advance(100)
        assert rate_headers(client.get(ME))["Reset"] == first["Reset"], "one window, one reset"

    clock.advance(1000)
    refused = client.get(ME)
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) == first["Reset"] - int(clock.time)

    clock.time = first["Reset"] - 0.5  # still the same window
    assert client.get(ME).status_code == 429

    clock.time = first["Reset"]  # the window has ended: a new one opens with this request
    renewed = client.get(ME)
    assert_ok(renewed)
    assert rate_headers(renewed) == {
        "Limit": 5,
        "Remaining": 4,
        "Used": 1,
        "Reset": first["Reset"] + 3600,
    }


def test_every_credential_of_an_account_shares_one_count(backend, ada):
    laptop = bearer(make_api_key(ada, ["projects:read"], name="laptop"))
    ci = bearer(make_api_key(ada, ["issues:read"], name="ci"))
    jwt = bearer(str(AccessToken.for_user(ada)))
    remaining = [rate_headers(client.get(ME))["Remaining"] for client in (laptop, ci, jwt)]
    assert remaining == [4, 3, 2]


def test_accounts_are_counted_separately(backend, ada):
    grace = UserFactory(email="grace@example.com")
    ada_client, grace_client = client_for(ada), client_for(grace)
    for _ in range(5):
        assert_ok(ada_client.get(ME))
    assert ada_client.get(ME).status_code == 429
    assert rate_headers(assert_response(grace_client.get(ME)))["Remaining"] == 4


def assert_response(response, status: int = 200):
    assert response.status_code == status, response.content
    return response


# Tiers ----------------------------------------------------------------------------------------


def test_set_tier_takes_effect_on_the_next_request(backend, ada):
    client = client_for(ada)
    for _ in range(5):
        assert_ok(client.get(ME))
    assert client.get(ME).status_code == 429

    call_command("set_tier", "--email", ada.email, "--tier", "premium")
    upgraded = client.get(ME)
    assert_ok(upgraded)
    # The refused request was not counted: 6 of 8 now.
    assert rate_headers(upgraded)["Limit"] == 8
    assert rate_headers(upgraded)["Used"] == 6
    assert assert_ok(client.get(STATUS))["data"]["tier"] == "premium"

    call_command("set_tier", "--email", ada.email, "--tier", "standard")
    downgraded = client.get(ME)
    assert_error(downgraded, 429, "RATE_LIMITED")
    assert rate_headers(downgraded)["Limit"] == 5
    assert rate_headers(downgraded)["Remaining"] == 0


def test_a_tier_changed_in_the_admin_takes_effect_on_the_next_request(backend, ada, browser):  # noqa: F811
    client = client_for(ada)
    assert rate_headers(client.get(ME))["Limit"] == 5
    page = browser.get(url(User, "change", ada.pk))
    data = form_data(page)
    data.update(tier="enterprise")
    assert browser.post(url(User, "change", ada.pk), data).status_code == 302
    after = rate_headers(client.get(ME))
    assert (after["Limit"], after["Used"]) == (12, 2)


def test_tier_limits_come_from_settings(backend, settings, ada):
    settings.RATE_LIMITS = {"standard": 2, "premium": 3, "enterprise": 4}
    ada.tier = User.Tier.ENTERPRISE
    ada.save()
    assert rate_headers(client_for(ada).get(ME))["Limit"] == 4


# GET /v1/rate_limit ---------------------------------------------------------------------------


def test_rate_limit_shows_the_window_without_counting(backend, clock, ada):
    client = client_for(ada, scopes=["issues:read"])  # any valid credential may read it
    fresh = assert_ok(client.get(STATUS))["data"]
    assert fresh == {
        "tier": "standard",
        "limit": 5,
        "remaining": 5,
        "used": 0,
        "reset": int(clock.time) + 3600,
        "reset_at": fresh["reset_at"],
        "window_seconds": 3600,
    }
    assert client.get(ME).status_code == 403  # no users:read scope: refused, but counted
    reset = int(clock.time) + 3600
    for _ in range(10):
        response = client.get(STATUS)
        data = assert_ok(response)["data"]
        assert (data["used"], data["remaining"], data["reset"]) == (1, 4, reset)
        assert rate_headers(response) == {"Limit": 5, "Remaining": 4, "Used": 1, "Reset": reset}
    assert data["reset_at"].endswith("Z")
    assert rate_headers(client.get(ME))["Remaining"] == 3


def test_rate_limit_answers_even_when_the_limit_is_reached(backend, ada):
    client = client_for(ada)
    for _ in range(6):
        client.get(ME)
    data = assert_ok(client.get(STATUS))["data"]
    assert (data["used"], data["remaining"]) == (5, 0)


def test_rate_limit_needs_credentials(backend):
    response = APIClient().get(STATUS)
    assert_error(response, 401, "UNAUTHORIZED")
    assert rate_headers(response)["Limit"] == 3


def test_rate_limit_when_the_limiter_is_switched_off(backend, settings, ada):
    settings.RATE_LIMIT_ENABLED = False
    client = client_for(ada)
    for _ in range(7):
        response = client.get(ME)
        assert_ok(response)
        assert "X-RateLimit-Limit" not in response
    data = assert_ok(client.get(STATUS))["data"]
    assert (data["limit"], data["used"]) == (5, 0)


# Requests without valid credentials ----------------------------------------------------------


def test_requests_without_valid_credentials_are_limited_per_address(backend, clock, ada):
    expired = AccessToken.for_user(ada)
    expired.set_exp(lifetime=-AccessToken.lifetime)
    attempts = [
        APIClient(),
        bearer("clb_" + "A" * 36),
        bearer(str(expired)),
    ]
    reset = int(clock.time) + 3600
    for used, client in enumerate(attempts, start=1):
        response = client.get("/v1/projects")
        assert_error(response, 401, "UNAUTHORIZED")
        assert rate_headers(response) == {
            "Limit": 3,
            "Remaining": 3 - used,
            "Used": used,
            "Reset": reset,
        }
    refused = APIClient().get("/v1/projects")
    error = assert_error(refused, 429, "RATE_LIMITED")
    assert int(refused["Retry-After"]) == 3600
    assert "without valid credentials from this address" in error["message"]
    assert rate_headers(refused)["Remaining"] == 0
    # Also with a (bad) credential: the address is over its limit.
    assert bearer("not-a-token").get(ME).status_code == 429

    # Another address has its own budget; valid credentials from this one are not refused.
    elsewhere = APIClient(REMOTE_ADDR="198.51.100.7").get("/v1/projects")
    assert_error(elsewhere, 401, "UNAUTHORIZED")
    assert rate_headers(elsewhere)["Remaining"] == 2
    served = client_for(ada).get(ME)
    assert_ok(served)
    assert rate_headers(served)["Limit"] == 5


def test_sign_in_endpoints_do_not_spend_the_address_budget(backend, ada):
    anonymous = APIClient()
    for _ in range(3):
        anonymous.get("/v1/projects")
    assert anonymous.get("/v1/projects").status_code == 429

    login = anonymous.post(
        "/v1/auth/login", {"email": ada.email, "password": PASSWORD}, format="json"
    )
    tokens = assert_ok(login)["data"]
    headers = rate_headers(login)  # the address's window, read without counting
    assert (headers["Used"], headers["Remaining"]) == (3, 0)
    refreshed = anonymous.post(
        "/v1/auth/refresh", {"refresh_token": tokens["refresh_token"]}, format="json"
    )
    assert_ok(refreshed)
    accepted = anonymous.post(
        "/v1/invitations/accept",
        {"token": "nope", "name": "N", "password": "a-long-passphrase"},
        format="json",
    )
    assert_error(accepted, 404, "NOT_FOUND")
    assert rate_headers(accepted)["Used"] == 3
    assert_ok(bearer(tokens["access_token"]).get(ME))


def test_forwarded_for_is_ignored_unless_proxies_are_trusted(backend, settings):
    forged = {"HTTP_X_FORWARDED_FOR": "203.0.113.1"}
    first = APIClient().get("/v1/projects", **forged)
    second = APIClient().get("/v1/projects", HTTP_X_FORWARDED_FOR="203.0.113.2")
    assert [rate_headers(r)["Used"] for r in (first, second)] == [1, 2], "both are REMOTE_ADDR's"

    settings.RATE_LIMIT_TRUSTED_PROXIES = 1
    # The proxy appends the address it saw; what the client wrote before it proves nothing.
    via_proxy = {"HTTP_X_FORWARDED_FOR": "6.6.6.6, 203.0.113.9", "REMOTE_ADDR": "10.0.0.1"}
    assert rate_headers(APIClient().get("/v1/projects", **via_proxy))["Used"] == 1
    again = {"HTTP_X_FORWARDED_FOR": "7.7.7.7, 203.0.113.9", "REMOTE_ADDR": "10.0.0.1"}
    assert rate_headers(APIClient().get("/v1/projects", **again))["Used"] == 2


@pytest.mark.parametrize(
    ("meta", "trusted", "expected"),
    [
        ({"REMOTE_ADDR": "192.0.2.10"}, 0, "192.0.2.10"),
        ({"REMOTE_ADDR": "192.0.2.10", "HTTP_X_FORWARDED_FOR": "1.2.3.4"}, 0, "192.0.2.10"),
        ({"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "1.2.3.4, 5.6.7.8"}, 1, "5.6.7.8"),
        ({"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "1.2.3.4, 5.6.7.8"}, 2, "1.2.3.4"),
        ({"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "5.6.7.8"}, 3, "5.6.7.8"),
        ({"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": ""}, 1, "10.0.0.1"),
        ({"REMOTE_ADDR": "2001:db8:1:2:3:4:5:6"}, 0, "2001:db8:1:2::/64"),
        ({"REMOTE_ADDR": "::ffff:192.0.2.1"}, 0, "192.0.2.1"),
        ({"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "garbage"}, 1, "garbage"),
    ],
)
def test_client_address(settings, rf, meta, trusted, expected):
    settings.RATE_LIMIT_TRUSTED_PROXIES = trusted
    request = rf.get("/v1/projects", **meta)
    assert client_address(request) == expected
