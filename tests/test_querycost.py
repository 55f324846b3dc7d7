"""A deadline on each statement of a web request (collab/querycost.py): past it the database
cancels the statement and the answer is a 503 in the envelope with Retry-After; nothing of
it outlives the request on a pooled connection. A read whose client disconnects has its
statements cancelled the same way, and never those of a later request."""

import logging
import threading
import time

import pytest
from django.db import connection, transaction

import search.selectors
from collab.querycost import DISCONNECT_KEY, Disconnect
from tests.conftest import assert_error

SLOW = {
    "postgresql": "SELECT pg_sleep(3)",
    # Counts forever: only an interrupt ends it.
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
    "SELECT count(*) FROM c",
}


def slow_total(*args, **kwargs) -> int:
    with connection.cursor() as cursor:
        cursor.execute(SLOW[connection.vendor])
        return cursor.fetchone()[0]


def slow_total_in_transaction(*args, **kwargs) -> int:
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")  # the transaction's first statement sets the deadline
        return slow_total()


@pytest.fixture
def short_deadline(settings):
    settings.DATABASE_STATEMENT_TIMEOUT_MS = 100
    settings.DATABASE_TIMEOUT_RETRY_AFTER = 7


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("slow", [slow_total, slow_total_in_transaction])
def test_a_statement_past_its_deadline_answers_503_with_retry_after(
    api, short_deadline, monkeypatch, caplog, slow
):
    monkeypatch.setattr(search.selectors, "hit_total", slow)
    response = api.owner.get("/v1/search", {"q": "checkout"})
    error = assert_error(response, 503, "QUERY_TIMEOUT")
    assert error["details"] == {"retry_after": 7}
    assert response["Retry-After"] == "7"
    assert "cancelled" in caplog.text
    # The deadline ended with the request: the same connection runs long statements again.
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone()[0] == "0"
        else:
            cursor.execute(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                "WHERE x < 300000) SELECT count(*) FROM c"
            )
            assert cursor.fetchone()[0] == 300000


@pytest.mark.django_db(transaction=True)
def test_requests_under_the_deadline_are_answered(api, short_deadline):
    response = api.owner.get("/v1/search", {"q": "checkout"})
    assert response.status_code == 200
    assert api.owner.get("/v1/projects").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_no_deadline_outside_requests(short_deadline):
    """Commands and tasks run no middleware: a long statement of theirs is not cut."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_sleep(0.3)")
        else:
            cursor.execute(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                "WHERE x < 2000000) SELECT count(*) FROM c"
            )
        cursor.fetchone()


# Disconnects ---------------------------------------------------------------------------
# The web server hands a request its Disconnect in the environ (collab/asgi.py) and calls
# ``cancel`` from another thread once the client has gone; here the test is that thread.


@pytest.fixture
def long_deadline(settings):
    """A deadline that outlasts the tests: only a cancel can end their statements early."""
    settings.DATABASE_STATEMENT_TIMEOUT_MS = 5000


def _cancel_later(disconnect: Disconnect, seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, disconnect.cancel)
    timer.start()
    return timer


@pytest.mark.django_db(transaction=True)
def test_a_disconnect_cancels_the_statement_in_flight(api, long_deadline, monkeypatch, caplog):
    disconnect = Disconnect()
    timer = None

    def slow_after_a_moment(*args, **kwargs):
        nonlocal timer
        timer = _cancel_later(disconnect, 0.3)
        return slow_total()

    monkeypatch.setattr(search.selectors, "hit_total", slow_after_a_moment)
    caplog.set_level(logging.INFO)
    started = time.monotonic()
    response = api.owner.get("/v1/search", {"q": "checkout"}, **{DISCONNECT_KEY: disconnect})
    elapsed = time.monotonic() - started
    assert timer is not None
    timer.join(timeout=5)
    assert_error(response, 503, "QUERY_TIMEOUT")
    assert elapsed < 2, f"the statement ran {elapsed:.1f} s after its client left"
    assert "client disconnected" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    # The request is over: the hook is disarmed, and the connection runs statements again.
    assert disconnect.cancel() is False
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone()[0] == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("timeout_ms", [5000, 0])
def test_a_request_whose_client_left_before_it_ran_sends_no_statement(
    api, settings, caplog, timeout_ms
):
    """A request that waited for a thread while its client left (no deadline or one)."""
    settings.DATABASE_STATEMENT_TIMEOUT_MS = timeout_ms
    disconnect = Disconnect()
    assert disconnect.cancel() is True
    client = api.owner
    # The first statement is a middleware's (the credentials'), outside DRF's handler: the
    # test client would raise what Django's handler answers.
    client.raise_request_exception = False
    caplog.set_level(logging.INFO)
    response = client.get("/v1/projects", **{DISCONNECT_KEY: disconnect})
    assert_error(response, 503, "QUERY_TIMEOUT")
    assert response["Retry-After"] == str(settings.DATABASE_TIMEOUT_RETRY_AFTER)
    assert "client disconnected" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.django_db(transaction=True)
def test_a_late_cancel_never_reaches_a_later_request_on_the_same_connection(
    api, long_deadline, monkeypatch
):
    earlier = Disconnect()
    assert api.owner.get("/v1/projects", **{DISCONNECT_KEY: earlier}).status_code == 200
    timer = None

    def cancel_the_earlier_meanwhile(*args, **kwargs):
        nonlocal timer
        # The earlier request's client leaves while this one's statement runs.
        timer = _cancel_later(earlier, 0.1)
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("SELECT pg_sleep(0.6)")
            else:
                cursor.execute(
                    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                    "WHERE x < 3000000) SELECT count(*) FROM c"
                )
            cursor.fetchone()
        return 0

    monkeypatch.setattr(search.selectors, "hit_total", cancel_the_earlier_meanwhile)
    later = Disconnect()
    response = api.owner.get("/v1/search", {"q": "checkout"}, **{DISCONNECT_KEY: later})
    assert timer is not None
    timer.join(timeout=5)
    assert response.status_code == 200, response.content
    assert earlier.cancelled is False  # it had ended: nothing was cancelled
