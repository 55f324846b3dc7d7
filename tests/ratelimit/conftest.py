"""The limiter under test: each test gets its own counters (a fresh key prefix) on each store,
small limits, and a clock it can move."""

import uuid

import pytest

from collab.api import counters

BACKENDS = ["database", "redis"]


def use_backend(settings, backend: str) -> str:
    """Point the limiter at ``backend`` with counters no other test has touched."""
    if backend == "redis" and not settings.REDIS_URL:
        pytest.skip("needs REDIS_URL (CI runs it with Redis)")
    prefix = f"test:{uuid.uuid4().hex}:"
    settings.RATE_LIMIT_BACKEND = backend
    settings.RATE_LIMIT_KEY_PREFIX = prefix
    return prefix


@pytest.fixture(params=BACKENDS)
def backend(request, settings, db):
    """Runs the test once on each counter store."""
    prefix = use_backend(settings, request.param)
    settings.RATE_LIMITS = {"standard": 5, "premium": 8, "enterprise": 12}
    settings.RATE_LIMIT_ANONYMOUS = 3
    settings.RATE_LIMIT_WINDOW_SECONDS = 3600
    yield request.param
    if request.param == "redis":
        client = counters.store().client
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)


class Clock:
    """``counters.now()`` under the test's control, starting from the real time."""

    def __init__(self, start: float):
        self.time = start

    def __call__(self) -> float:
        return self.time

    def advance(self, seconds: float) -> None:
        self.time += seconds


@pytest.fixture
def clock(monkeypatch) -> Clock:
    # Mid-second: the headers round to whole seconds, and a start in the last millisecond of
    # a second made Retry-After one short (a flake once in a thousand runs).
    fake = Clock(int(counters.now()) + 0.5)
    monkeypatch.setattr(counters, "now", fake)
    return fake


def rate_headers(response) -> dict[str, int]:
    """The four X-RateLimit-* headers as integers (KeyError if one is missing)."""
    return {
        name: int(response[f"X-RateLimit-{name}"])
        for name in ("Limit", "Remaining", "Used", "Reset")
    }
