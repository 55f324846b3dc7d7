"""The request head and its framing through the server the service ships (gunicorn with
``collab.serving.UvicornWorker``), over raw sockets on loopback: what no test client can show,
since the server reads the head before Django sees anything (collab/http_protocol.py).
"""

import json
import re
import socket
import threading
import time
from contextlib import suppress
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from collab.api.scopes import ALL_SCOPES
from projects.models import Project
from tests.factories import make_api_key
from tests.liveserver import (
    asgi_server,
    embedded_env,
    process_env,
    require_services,
    running_servers,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.live]

HEAD_TIMEOUT = 1  # HEADER_TIMEOUT_SECONDS of this module's server


@pytest.fixture(scope="module")
def server(django_db_setup, tmp_path_factory):
    # One server for the module: every case here is a connection of its own.
    directory = tmp_path_factory.mktemp("serving")
    if connection.vendor == "postgresql" and settings.REDIS_URL:
        env = process_env(HEADER_TIMEOUT_SECONDS=str(HEAD_TIMEOUT))
    else:
        # ./run's embedded default (SQLite, no Redis): a head is refused before either is used.
        env = embedded_env(directory / "data", HEADER_TIMEOUT_SECONDS=str(HEAD_TIMEOUT))
    with asgi_server(env, directory) as port:
        yield port


@pytest.fixture
def shared_database():
    """The tests that look at rows the server wrote: it must share the test database."""
    require_services()


class Answer:
    def __init__(self, raw: bytes, closed: bool):
        head, _, self.body = raw.partition(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        self.status = int(status_line.split(" ")[1]) if status_line else 0
        self.headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        self.closed = closed

    def error(self) -> dict:
        """The error envelope, as the contract words it, with Connection: close."""
        assert self.headers["content-type"] == "application/json", self.headers
        assert self.headers["connection"] == "close"
        assert self.closed, "the server kept the connection open"
        body = json.loads(self.body)
        assert body["success"] is False and set(body["error"]) == {"code", "message", "details"}
        assert isinstance(body["error"]["details"], dict) and body["error"]["message"]
        return body["error"]


def exchange(port: int, raw: bytes, timeout: float = 15) -> Answer:
    """Sends ``raw`` and reads one answer: to its Content-Length, and on to see whether the
    server then closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        # Refused and closed before all of it was sent: the answer still waits to be read.
        with suppress(ConnectionResetError, BrokenPipeError):
            sock.sendall(raw)
        received, closed = b"", False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            head, found, body = received.partition(b"\r\n\r\n")
            if found:
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                if len(body) >= length:
                    break
            data = sock.recv(65536)
            if not data:
                closed = True
                break
            received += data
        if not closed:
            sock.settimeout(1)
            try:
                closed = sock.recv(1) == b""
            except TimeoutError:
                closed = False
            except ConnectionResetError:
                closed = True
        return Answer(received, closed)


def get(*fields: bytes) -> bytes:
    return b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"".join(fields) + b"\r\n"


# The head's size and fields -----------------------------------------------------------


def test_a_head_of_17_kib_is_a_431_in_the_envelope(server):
    answer = exchange(server, get(b"X-Padding: " + b"a" * (17 * 1024) + b"\r\n"))
    assert answer.status == 431
    error = answer.error()
    assert error["code"] == "REQUEST_HEADER_FIELDS_TOO_LARGE"
    assert error["details"] == {"max_bytes": 16384}


def test_a_2_mb_cookie_is_a_431(server):
    answer = exchange(server, get(b"Cookie: session=" + b"c" * (2 * 1024 * 1024) + b"\r\n"))
    assert answer.status == 431
    assert answer.error()["code"] == "REQUEST_HEADER_FIELDS_TOO_LARGE"


def test_a_request_target_over_16_kib_is_a_414(server):
    answer = exchange(server, b"GET /healthz?q=" + b"q" * (17 * 1024) + b" HTTP/1.1\r\n\r\n")
    assert answer.status == 414
    assert answer.error()["code"] == "URI_TOO_LONG"


def test_101_header_fields_are_a_431_and_100_are_served(server):
    fields = [b"X-Field-%d: %d\r\n" % (number, number) for number in range(99)]  # and Host
    served = exchange(server, get(*fields))
    assert served.status == 200, served.body
    assert json.loads(served.body)["success"] is True

    refused = exchange(server, get(*fields, b"X-One-Too-Many: 1\r\n"))
    assert refused.status == 431
    error = refused.error()
    assert error["code"] == "REQUEST_HEADER_FIELDS_TOO_LARGE"
    assert error["details"] == {"max_fields": 100}


def test_a_head_just_under_16_kib_is_served(server):
    answer = exchange(server, get(b"X-Padding: " + b"a" * (16 * 1024 - 200) + b"\r\n"))
    assert answer.status == 200, answer.body


def test_a_refused_head_sent_ahead_is_answered_after_the_requests_before_it(server):
    """Pipelined: the answers keep the requests' order, the refusal last, then the close."""
    refused = get(b"X-Padding: " + b"a" * (17 * 1024) + b"\r\n")
    with socket.create_connection(("127.0.0.1", server), timeout=15) as sock:
        sock.sendall(get() + get() + refused + get())
        received = b""
        while data := sock.recv(65536):
            received += data
    statuses = [int(status) for status in re.findall(rb"HTTP/1\.1 (\d{3}) ", received)]
    assert statuses == [200, 200, 431], received[-600:]
    assert received.endswith(b"}}")


def _worker_rss_kib(port: int) -> int:
    """The resident memory of the server's one worker (a child of gunicorn's arbiter)."""
    arbiter = running_servers[port].pid
    children = Path(f"/proc/{arbiter}/task/{arbiter}/children").read_text().split()
    (worker,) = children
    status = Path(f"/proc/{worker}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0])


def test_a_header_sent_in_pieces_is_cut_at_16_kib_and_leaves_memory_as_it_was(server):
    """150 MB of one header value in 64 KiB writes: the server answers 431 and closes once the
    head passes 16 KiB; it neither reads the rest nor keeps it (it took a worker from 115 MB to
    400 MB before, or killed it)."""
    if not Path("/proc/self/status").exists():
        pytest.skip("reads the worker's memory from /proc")
    exchange(server, get())  # the worker's first request paid for whatever it loads lazily
    before = _worker_rss_kib(server)
    total = 150 * 1024 * 1024
    piece = b"a" * 65536
    sock = socket.create_connection(("127.0.0.1", server), timeout=20)
    sent = {"bytes": 0}

    def send():
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
            deadline = time.monotonic() + 60
            while sent["bytes"] < total and time.monotonic() < deadline:
                sock.sendall(piece)
                sent["bytes"] += len(piece)
        except OSError:
            pass  # the server answered and closed: what should happen

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    received = b""
    try:
        while b"\r\n\r\n" not in received:
            data = sock.recv(65536)
            if not data:
                break
            received += data
    except OSError:
        pass
    sender.join(timeout=70)
    sock.close()
    assert received.startswith(b"HTTP/1.1 431 "), received[:200]
    # Cut early: what was sent is what the sockets' buffers took, not the 150 MB.
    assert sent["bytes"] < 32 * 1024 * 1024, sent
    assert _worker_rss_kib(server) - before < 10 * 1024


# The head's time ----------------------------------------------------------------------


def test_a_head_dripping_past_the_timeout_is_closed_with_a_408(server):
    sock = socket.create_connection(("127.0.0.1", server), timeout=HEAD_TIMEOUT + 10)
    started = time.monotonic()
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    received = b""
    sock.settimeout(0.25)
    try:
        while time.monotonic() - started < HEAD_TIMEOUT + 10:
            try:
                data = sock.recv(65536)
            except TimeoutError:
                sock.sendall(b"X-Drip: 1\r\n")  # a line every 0.25 s: never a whole head
                continue
            if not data:
                break
            received += data
    except OSError:
        pass  # closed while a line was on its way
    finally:
        sock.close()
    took = time.monotonic() - started
    answer = Answer(received, closed=True)
    assert answer.status == 408, received[:300]
    assert answer.error()["code"] == "REQUEST_TIMEOUT"
    assert HEAD_TIMEOUT - 0.5 <= took < HEAD_TIMEOUT + 5, took


def test_a_connection_that_sends_nothing_is_closed(server):
    with socket.create_connection(("127.0.0.1", server), timeout=HEAD_TIMEOUT + 10) as sock:
        started = time.monotonic()
        assert sock.recv(1) == b""
        assert time.monotonic() - started < HEAD_TIMEOUT + 5


def test_a_connection_idle_between_requests_is_not_timed_out_as_a_head(server):
    """The clock runs from a head's first byte: a request after a pause longer than the head
    timeout on a kept-alive connection is served (gunicorn's keep-alive, 2 s, is the bound
    of that pause)."""
    with socket.create_connection(("127.0.0.1", server), timeout=10) as sock:
        for pause in (HEAD_TIMEOUT * 1.5, 0):
            sock.sendall(get())
            received = b""
            while not received.endswith(b"}}"):
                received += sock.recv(65536)
            assert received.startswith(b"HTTP/1.1 200 "), received[:200]
            time.sleep(pause)


# Transfer-Encoding ----------------------------------------------------------------------

SMUGGLED = "Smuggled"


def _framed_create(key: str, framing: str, *, version: str = "1.1") -> bytes:
    """A project create whose body is chunked, with another create placed after the body: the
    one a server reading the framing as chunked would run next."""
    body = json.dumps({"name": "Framed"}).encode()
    smuggled_body = json.dumps({"name": SMUGGLED}).encode()
    smuggled = (
        f"POST /v1/projects HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(smuggled_body)}\r\n\r\n"
    ).encode() + smuggled_body
    return (
        (
            f"POST /v1/projects HTTP/{version}\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n{framing}\r\n"
        ).encode()
        + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        + smuggled
    )


@pytest.mark.parametrize(
    ("framing", "status", "code"),
    [
        ("Transfer-Encoding: identity, chunked\r\n", 400, "BAD_REQUEST"),
        ("Transfer-Encoding: chunked, chunked\r\n", 400, "BAD_REQUEST"),
        ("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400, "BAD_REQUEST"),
        ("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", 400, "BAD_REQUEST"),
        ("Transfer-Encoding: chunked, gzip\r\n", 400, "BAD_REQUEST"),
        ("Content-Length: 4\r\nTransfer-Encoding: chunked\r\n", 400, "BAD_REQUEST"),
        ("Transfer-Encoding: gzip, chunked\r\n", 501, "NOT_IMPLEMENTED"),
        ("Transfer-Encoding: foo, chunked\r\n", 501, "NOT_IMPLEMENTED"),
    ],
)
def test_any_framing_but_chunked_alone_is_refused_and_nothing_after_it_runs(
    world, shared_database, server, framing, status, code
):
    key = make_api_key(world.owner, ALL_SCOPES)
    answer = exchange(server, _framed_create(key, framing))
    assert answer.status == status, answer.body
    assert answer.error()["code"] == code
    assert not Project.objects.filter(name__in=["Framed", SMUGGLED]).exists()


def test_transfer_encoding_on_http_1_0_is_refused(world, shared_database, server):
    key = make_api_key(world.owner, ALL_SCOPES)
    answer = exchange(server, _framed_create(key, "Transfer-Encoding: chunked\r\n", version="1.0"))
    assert answer.status == 400, answer.body
    assert answer.error()["code"] == "BAD_REQUEST"
    assert not Project.objects.filter(name__in=["Framed", SMUGGLED]).exists()


def test_chunked_alone_still_creates_and_the_connection_goes_on(world, shared_database, server):
    key = make_api_key(world.owner, ALL_SCOPES)
    raw = _framed_create(key, "Transfer-Encoding: chunked\r\n")
    with socket.create_connection(("127.0.0.1", server), timeout=15) as sock:
        sock.sendall(raw)
        received = b""
        while received.count(b"HTTP/1.1 201 ") < 2 or not received.endswith(b"}}"):
            data = sock.recv(65536)
            if not data:
                break
            received += data
    # Both requests, each framed as it says: the chunked one, then the one after it.
    assert received.count(b"HTTP/1.1 201 ") == 2, received[:600]
    names = set(Project.objects.filter(created_by=world.owner).values_list("name", flat=True))
    assert {"Framed", SMUGGLED} <= names
