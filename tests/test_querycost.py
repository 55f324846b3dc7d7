"""A deadline on each statement of a web request (collab/db/querycost.py): past it the database
cancels the statement and the answer is a 503 in the envelope with Retry-After; nothing of
it outlives the request on a pooled connection. A read whose client disconnects has its
statements cancelled the same way, and never those of a later request."""

import json
import logging
import threading
import time

import pytest
from django.db import connection, transaction

import search.selectors
from collab.db.querycost import DISCONNECT_KEY, Disconnect
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


@pytest.mark.django_db
def test_a_readiness_probe_whose_client_left_is_not_logged_as_an_error(client, caplog):
    """A probe that hung up while it waited for a thread: its check's statement is not sent,
    the 503 goes to nobody, and nothing is logged at WARNING or above (Django's own "Service
    Unavailable" included)."""
    disconnect = Disconnect()
    assert disconnect.cancel() is True
    caplog.set_level(logging.INFO)
    response = client.get("/readyz", **{DISCONNECT_KEY: disconnect})
    assert response.status_code == 503
    assert response.json()["data"]["checks"]["database"] == "error: ClientDisconnected"
    assert "the client left before the database was checked" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.django_db
def test_a_page_outside_the_api_whose_client_left_is_not_logged_as_an_error(browser, caplog):
    """An admin page (a view outside /v1/) whose client hung up: its statement is not sent,
    it is answered as the API's are (a 503 in the envelope, to nobody), and nothing is logged
    at WARNING or above: no "Unhandled error", no Django "Internal Server Error"."""
    disconnect = Disconnect()
    assert disconnect.cancel() is True
    caplog.set_level(logging.INFO)
    browser.raise_request_exception = False  # as a server answers: with handler500's page
    response = browser.get("/admin/", **{DISCONNECT_KEY: disconnect})
    assert_error(response, 503, "QUERY_TIMEOUT")
    assert "client disconnected" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


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


# Through the server production runs: the client closes its socket ------------------------


@pytest.fixture
def held_issues(world):
    """The issues table (one issue in it) locked by another session: the server's
    statements on it wait."""
    import psycopg

    from tests.factories import make_issue
    from tests.liveserver import database_url, require_services

    require_services()
    make_issue(world.project, world.owner, title="Listed")
    locker = psycopg.connect(database_url(), autocommit=False)
    try:
        locker.execute("SET lock_timeout = 0")
        locker.execute("LOCK TABLE issues_issue IN ACCESS EXCLUSIVE MODE")
        yield locker
    finally:
        locker.rollback()
        locker.close()


def _waiting_on_the_lock(locker) -> int:
    """How many other sessions wait for the lock ``locker`` holds."""
    # In a transaction, the activity read is a snapshot taken at its first read: a new one.
    locker.execute("SELECT pg_stat_clear_snapshot()")
    row = locker.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
        "AND datname = current_database() AND pid <> pg_backend_pid()"
    ).fetchone()
    return row[0]


def _send_and_hang_up(port: int, request: bytes, locker):
    """Send ``request``, wait until the server's statement waits on the lock, hang up."""
    import socket

    from tests.liveserver import wait_until

    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        sock.sendall(request)
        wait_until(lambda: _waiting_on_the_lock(locker) == 1, 10, message="no statement waits")
    finally:
        sock.close()


@pytest.fixture
def served(world, tmp_path):
    from tests.liveserver import asgi_server, process_env

    # A deadline far past the test's bounds, and one thread: a later request reuses it (and
    # its connection).
    env = process_env(DATABASE_STATEMENT_TIMEOUT_MS="60000", WEB_THREADS="1")
    with asgi_server(env, tmp_path) as port:
        yield port, tmp_path / f"server-{port}.log"


def _head(method: str, path: str, key: str, body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: Bearer {key}"]
    if body:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_read_whose_client_hangs_up_stops_waiting_for_the_database(world, served, held_issues):
    from collab.api.scopes import ALL_SCOPES
    from tests.factories import make_api_key, make_issue
    from tests.liveserver import http_get, wait_until

    port, log = served
    key = make_api_key(world.owner, ALL_SCOPES)
    path = f"/v1/projects/{world.project.pk}/issues"
    _send_and_hang_up(port, _head("GET", path, key), held_issues)
    # Its statement is cancelled: nothing waits on the lock any more, long before the deadline.
    wait_until(
        lambda: _waiting_on_the_lock(held_issues) == 0,
        3,
        message="the server's statement still waits after its client left",
    )
    held_issues.rollback()
    # The next request on the same thread and connection is answered.
    make_issue(world.project, world.owner, title="Still here")
    status, body = http_get(port, path, {"Authorization": f"Bearer {key}"})
    assert status == 200, body
    assert {row["title"] for row in json.loads(body)["data"]} == {"Listed", "Still here"}
    output = log.read_text()
    assert "client disconnected" in output
    assert " ERROR " not in output and "Traceback" not in output


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_write_whose_client_hangs_up_still_completes(world, served, held_issues):
    from collab.api.scopes import ALL_SCOPES
    from issues.models import Issue
    from tests.factories import make_api_key
    from tests.liveserver import wait_until

    port, _ = served
    key = make_api_key(world.owner, ALL_SCOPES)
    body = json.dumps({"title": "Sent and not awaited"}).encode()
    path = f"/v1/projects/{world.project.pk}/issues"
    _send_and_hang_up(port, _head("POST", path, key, body), held_issues)
    time.sleep(1)
    assert _waiting_on_the_lock(held_issues) == 1, "the write was cancelled"
    held_issues.rollback()
    wait_until(
        lambda: Issue.objects.filter(title="Sent and not awaited").exists(),
        10,
        message="the write whose client hung up was lost",
    )
