"""When Redis is unavailable the service keeps answering, unlimited, and logs it; /readyz
says so."""

import logging
import socket
import time

import pytest
from rest_framework.test import APIClient

from collab.api import counters
from tests.conftest import assert_ok, client_for
from tests.factories import PASSWORD, UserFactory
from tests.ratelimit.conftest import use_backend


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once the socket is closed


@pytest.fixture
def redis_down(settings, db):
    use_backend(settings, "database")  # only for the prefix; the store is Redis below
    settings.REDIS_URL = f"redis://127.0.0.1:{closed_port()}/0"
    settings.RATE_LIMIT_BACKEND = "redis"
    settings.RATE_LIMITS = {"standard": 2, "premium": 2, "enterprise": 2}
    settings.RATE_LIMIT_ANONYMOUS = 2


@pytest.fixture
def redis_silent(settings, db):
    """A Redis address that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    use_backend(settings, "database")
    settings.REDIS_URL = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    settings.RATE_LIMIT_BACKEND = "redis"
    yield
    listener.close()


def test_requests_are_served_and_a_warning_logged_when_redis_is_down(redis_down, caplog):
    client = client_for(UserFactory())
    caplog.set_level(logging.WARNING, logger="collab.ratelimit")
    started = time.monotonic()
    for _ in range(5):  # over the limit of 2: nothing counts while Redis is away
        response = client.get("/v1/users/me")
        assert_ok(response)
        assert "X-RateLimit-Remaining" not in response
    assert time.monotonic() - started < 2
    warnings = [r for r in caplog.records if r.name == "collab.ratelimit"]
    assert len(warnings) == 1, "one warning per outage and pause, not one per request"
    assert warnings[0].levelno == logging.WARNING
    assert "Redis store failed" in warnings[0].getMessage()
    assert "without limits" in warnings[0].getMessage()

    data = assert_ok(client.get("/v1/rate_limit"))["data"]
    assert (data["tier"], data["limit"]) == ("standard", 2)
    assert data["used"] is None and data["remaining"] is None and data["reset"] is None


def test_anonymous_requests_and_sign_in_still_work_when_redis_is_down(redis_down, settings):
    settings.LOGIN_FAILURES_PER_EMAIL = 1
    settings.LOGIN_LOCKOUT_SECONDS = 900
    user = UserFactory()
    for _ in range(4):
        assert APIClient().get("/v1/projects").status_code == 401
    for _ in range(3):
        failed = APIClient().post(
            "/v1/auth/login", {"email": user.email, "password": "wrong"}, format="json"
        )
        assert failed.status_code == 401
    signed_in = APIClient().post(
        "/v1/auth/login", {"email": user.email, "password": PASSWORD}, format="json"
    )
    assert_ok(signed_in)


def test_a_redis_that_never_answers_costs_a_short_timeout(redis_silent, caplog):
    client = client_for(UserFactory())
    caplog.set_level(logging.WARNING, logger="collab.ratelimit")
    started = time.monotonic()
    assert_ok(client.get("/v1/users/me"))
    first = time.monotonic() - started
    assert first < 2, first
    assert "TimeoutError" in caplog.text
    # Then the limiter leaves Redis alone for a while: no timeout on the next requests.
    started = time.monotonic()
    for _ in range(3):
        assert_ok(client.get("/v1/users/me"))
    assert time.monotonic() - started < 1


def test_the_limiter_tries_redis_again_after_its_pause(redis_down, settings, monkeypatch):
    settings.RATE_LIMIT_FAIL_OPEN_SECONDS = 30
    store = counters.store()
    assert counters.counter_hit("k", limit=5, window=60) is None
    calls = []
    monkeypatch.setattr(store, "_hit", lambda **kwargs: calls.append(kwargs) or [1, 0, 1])
    assert counters.counter_hit("k", limit=5, window=60) is None
    assert calls == [], "within the pause, Redis is not asked"
    store._down_until = time.monotonic() - 1
    assert counters.counter_hit("k", limit=5, window=60) == counters.Window(1, 0, True)
    assert len(calls) == 1


def test_readyz_reports_redis_when_it_is_down(redis_down, client):
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["success"] is False
    assert body["data"]["checks"]["database"] == "ok"
    assert body["data"]["checks"]["redis"].startswith("error")
    assert client.get("/healthz").status_code == 200
