"""Failed sign-ins are slowed, then refused for a while, per email and per client address."""

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts import services
from collab.api.exceptions import RateLimited, Unauthorized
from tests.conftest import assert_error, assert_ok
from tests.factories import PASSWORD, UserFactory

LOGIN = "/v1/auth/login"


@pytest.fixture
def protected(backend, settings):
    settings.LOGIN_FAILURE_WINDOW_SECONDS = 900
    settings.LOGIN_FAILURES_PER_EMAIL = 5
    settings.LOGIN_FAILURES_PER_ADDRESS = 20
    settings.LOGIN_SLOWDOWN_AFTER = 3
    settings.LOGIN_LOCKOUT_SECONDS = 900
    # The address budget of requests without credentials is not what these tests are about.
    settings.RATE_LIMIT_ANONYMOUS = 1000
    return backend


@pytest.fixture
def ada(db):
    return UserFactory(email="ada@example.com")


def login(email: str, password: str, address: str = "127.0.0.1"):
    return APIClient(REMOTE_ADDR=address).post(
        LOGIN, {"email": email, "password": password}, format="json"
    )


def assert_refused(response, retry_after: int, reason: str):
    error = assert_error(response, 429, "RATE_LIMITED")
    assert int(response["Retry-After"]) == retry_after
    assert error["details"] == {"retry_after": retry_after}
    assert reason in error["message"]
    assert f"Try again in {retry_after} seconds" in error["message"]


def test_failures_for_an_email_are_slowed_then_refused(protected, clock, ada):
    for _ in range(3):
        assert_error(login(ada.email, "wrong"), 401, "UNAUTHORIZED")
    # From the third failure, each next attempt waits: 1 s, then 2 s. Even the right password
    # is refused while waiting: the password is not checked at all.
    assert_refused(login(ada.email, PASSWORD), 1, "slowed after repeated failures")
    clock.advance(1)
    assert_error(login(ada.email, "wrong"), 401, "UNAUTHORIZED")  # the fourth failure
    assert_refused(login(ada.email, "wrong"), 2, "slowed")
    clock.advance(2)
    assert_error(login(ada.email, "wrong"), 401, "UNAUTHORIZED")  # the fifth: locked out

    assert_refused(login(ada.email, PASSWORD), 900, "Too many failed sign-ins for this email")
    clock.advance(899)
    assert_refused(login(ada.email.upper(), PASSWORD), 1, "for this email")
    clock.advance(1)
    assert_ok(login(ada.email, PASSWORD))


def test_a_success_clears_the_emails_failures(protected, clock, ada):
    for _ in range(2):
        assert_error(login(ada.email, "wrong"), 401, "UNAUTHORIZED")
    assert_ok(login(ada.email, PASSWORD))
    for _ in range(2):
        assert_error(login(ada.email, "wrong"), 401, "UNAUTHORIZED")
    assert_ok(login(ada.email, PASSWORD))  # two failures since the success: not slowed


def test_failures_are_forgotten_when_their_window_ends(protected, clock, ada):
    for _ in range(2):
        assert_error(login(ada.email, "wrong"), 401, "UNAUTHORIZED")
    clock.advance(900)
    for _ in range(2):
        assert_error(login(ada.email, "wrong"), 401, "UNAUTHORIZED")
    assert_ok(login(ada.email, PASSWORD))


def test_unknown_emails_are_counted_like_known_ones(protected, clock):
    for _ in range(3):
        assert_error(login("nobody@example.com", "wrong"), 401, "UNAUTHORIZED")
    assert_refused(login("nobody@example.com", "wrong"), 1, "slowed")


def test_failures_from_an_address_lock_it_out(protected, clock, ada):
    # Twenty failures spread over many emails, none of them slowed.
    for n in range(20):
        assert_error(
            login(f"guess{n % 10}@example.com", f"wrong{n}", "203.0.113.5"), 401, "UNAUTHORIZED"
        )
        if n == 9:
            clock.advance(1)
    assert_refused(
        login(ada.email, PASSWORD, "203.0.113.5"), 900, "Too many failed sign-ins from this address"
    )
    # The email itself did nothing wrong: from elsewhere it signs in.
    assert_ok(login(ada.email, PASSWORD, "198.51.100.1"))
    clock.advance(900)
    assert_ok(login(ada.email, PASSWORD, "203.0.113.5"))


def test_the_service_refuses_with_a_typed_error(protected, clock, ada):
    for attempt in range(5):
        clock.advance(60 if attempt else 0)
        with pytest.raises(Unauthorized):
            services.auth_login(email=ada.email, password="wrong")
    with pytest.raises(RateLimited) as refused:
        services.auth_login(email=ada.email, password=PASSWORD)
    assert refused.value.retry_after == 900


# The admin's sign-in ------------------------------------------------------------------------

ADMIN_LOGIN = "/admin/login/"


@pytest.fixture
def staff(db):
    return UserFactory(email="root@example.com", is_staff=True, is_superuser=True)


def admin_login(email: str, password: str, address: str = "127.0.0.1"):
    return Client(REMOTE_ADDR=address).post(
        ADMIN_LOGIN, {"username": email, "password": password, "next": "/admin/"}
    )


def assert_admin_signed_in(response):
    assert response.status_code == 302, response.content[:500]
    assert response["Location"] == "/admin/"


def assert_admin_refused(response, reason: str):
    # The admin's own page for people, with the reason on the form; nobody signed in.
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    errors = response.context["form"].non_field_errors()
    assert any(reason in error for error in errors), errors
    assert "_auth_user_id" not in response.wsgi_request.session


def test_the_admin_locks_an_email_out_even_with_the_right_password(protected, clock, staff):
    for attempt in range(5):
        clock.advance(60 if attempt else 0)  # past each slowdown: five plain failures
        assert_admin_refused(admin_login(staff.email, "wrong"), "enter the correct email")

    assert_admin_refused(admin_login(staff.email, PASSWORD), "Too many failed sign-ins")
    # The same lock holds on the API: one mechanism, one set of counters.
    assert_error(login(staff.email, PASSWORD), 429, "RATE_LIMITED")
    clock.advance(900)
    assert_admin_signed_in(admin_login(staff.email, PASSWORD))


def test_the_admin_locks_an_address_out(protected, clock, staff):
    for n in range(20):
        response = admin_login(f"guess{n % 10}@example.com", f"wrong{n}", "203.0.113.5")
        assert_admin_refused(response, "enter the correct email")
        if n == 9:
            clock.advance(1)
    assert_admin_refused(admin_login(staff.email, PASSWORD, "203.0.113.5"), "from this address")
    assert_admin_signed_in(admin_login(staff.email, PASSWORD, "198.51.100.1"))


def test_failures_on_the_api_count_against_the_admin(protected, clock, staff):
    for attempt in range(5):
        clock.advance(60 if attempt else 0)
        assert_error(login(staff.email, "wrong"), 401, "UNAUTHORIZED")
    assert_admin_refused(admin_login(staff.email, PASSWORD), "Too many failed sign-ins")
