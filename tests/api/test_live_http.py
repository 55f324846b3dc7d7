"""The request-level guards, through the server process production runs (gunicorn with uvicorn
workers on ``collab.asgi``), on loopback: what a test client cannot show, since the server
itself decodes chunked bodies, answers HEAD and decides the client's address.
"""

import http.client
import json
import random
import socket
import threading
import time

import pytest

from accounts.models import Invitation
from collab.api.scopes import ALL_SCOPES
from issues.models import Issue
from tests.factories import make_api_key, make_issue
from tests.liveserver import asgi_server, process_env, require_services

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.live]


def _request(port, method, path, *, body=None, headers=None, timeout=20):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        headers = {name.lower(): value for name, value in response.getheaders()}
        return response.status, headers, response.read()
    finally:
        conn.close()


def _chunks(payload: bytes, size: int = 7):
    for start in range(0, len(payload), size):
        yield payload[start : start + size]


@pytest.fixture
def server(world, tmp_path):
    require_services()
    with asgi_server(process_env(), tmp_path) as port:
        yield port


def test_a_chunked_patch_is_applied(world, server):
    key = make_api_key(world.owner, ALL_SCOPES)
    issue = make_issue(world.project, world.owner, title="Before")
    payload = json.dumps({"title": "After, sent chunked"}).encode()
    status, _, body = _request(
        server,
        "PATCH",
        f"/v1/issues/{issue.pk}",
        body=_chunks(payload),  # a generator: http.client sends Transfer-Encoding: chunked
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    assert status == 200, body
    assert json.loads(body)["data"]["title"] == "After, sent chunked"
    issue.refresh_from_db()
    assert issue.title == "After, sent chunked"


def test_a_chunked_create_is_applied_and_malformed_chunked_json_is_a_400(world, server):
    key = make_api_key(world.owner, ALL_SCOPES)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    path = f"/v1/projects/{world.project.pk}/issues"
    status, response_headers, body = _request(
        server, "POST", path, body=_chunks(b'{"title": "Chunked create"}'), headers=headers
    )
    assert status == 201, body
    assert Issue.objects.filter(project=world.project, title="Chunked create").exists()
    status, _, body = _request(server, "POST", path, body=_chunks(b'{"title": '), headers=headers)
    assert status == 400 and json.loads(body)["error"]["code"] == "BAD_REQUEST"
    status, _, body = _request(
        server,
        "POST",
        path,
        body=_chunks(b"title=plain"),
        headers={**headers, "Content-Type": "text/plain"},
    )
    assert status == 415


def test_a_huge_chunked_body_is_a_413_and_changes_nothing(world, server):
    """100 MB sent chunked: refused once the limit (1 MiB) is passed, without reading it all."""
    key = make_api_key(world.owner, ALL_SCOPES)
    issue = make_issue(world.project, world.owner, title="Unchanged")
    head = (
        f"PATCH /v1/issues/{issue.pk} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()
    block = b" " * 65536
    chunk = f"{len(block):x}\r\n".encode() + block + b"\r\n"
    total_blocks = 100 * 1024 * 1024 // len(block)
    sock = socket.create_connection(("127.0.0.1", server), timeout=20)
    sent = {"blocks": 0}

    def send():
        try:
            start = b'{"title": "Too big"'
            sock.sendall(head + f"{len(start):x}\r\n".encode() + start + b"\r\n")
            for _ in range(total_blocks):
                sock.sendall(chunk)
                sent["blocks"] += 1
            sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server answered and closed: what should happen

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    received = b""
    deadline = time.monotonic() + 30
    while b"\r\n\r\n" not in received and time.monotonic() < deadline:
        data = sock.recv(65536)
        if not data:
            break
        received += data
    sock.close()
    sender.join(timeout=10)
    status_line = received.split(b"\r\n", 1)[0]
    assert b" 413 " in status_line, received[:300]
    assert sent["blocks"] < total_blocks, "the server read the whole 100 MB before refusing"
    issue.refresh_from_db()
    assert issue.title == "Unchanged"


def test_head_through_the_server_never_writes(world, server):
    key = make_api_key(world.owner, ["users:read", "projects:read"])
    status, headers, body = _request(
        server,
        "HEAD",
        f"/v1/workspaces/{world.acme.pk}/invitations",
        body=json.dumps({"email": "attacker@example.test", "role": "owner"}),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    assert status == 200 and body == b""
    assert "location" not in headers
    assert not Invitation.objects.filter(email="attacker@example.test").exists()


def _anonymous_until_limited(port, headers=None) -> int:
    """Anonymous requests until the address budget is spent (a bounded number of them)."""
    for _ in range(20):
        status, _, _ = _request(port, "GET", "/v1/projects", headers=headers)
        if status == 429:
            return status
    return status


def test_forwarded_headers_are_ignored_unless_proxies_are_trusted(world, tmp_path):
    require_services()
    env = process_env(RATE_LIMIT_ANONYMOUS="3", RATE_LIMIT_TRUSTED_PROXIES="0")
    with asgi_server(env, tmp_path) as port:
        assert _anonymous_until_limited(port) == 429
        spoofed = f"5.6.{random.randint(0, 255)}.{random.randint(1, 254)}"  # noqa: S311
        for forwarded in ({"X-Forwarded-For": spoofed}, {"Forwarded": f"for={spoofed}"}):
            status, headers, body = _request(port, "GET", "/v1/projects", headers=forwarded)
            assert status == 429, (forwarded, body)
            assert json.loads(body)["error"]["code"] == "RATE_LIMITED"


def test_forwarded_for_is_honoured_from_a_trusted_proxy(world, tmp_path):
    """One trusted hop: the address the proxy appended counts, whatever the client wrote."""
    require_services()
    env = process_env(RATE_LIMIT_ANONYMOUS="3", RATE_LIMIT_TRUSTED_PROXIES="1")
    client_address = f"5.7.{random.randint(0, 255)}.{random.randint(1, 254)}"  # noqa: S311
    with asgi_server(env, tmp_path) as port:
        seen = []
        for claimed in ("1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"):
            # The client claims an address; the proxy appends the one it saw.
            forwarded = {"X-Forwarded-For": f"{claimed}, {client_address}"}
            status, headers, _ = _request(port, "GET", "/v1/projects", headers=forwarded)
            seen.append((status, headers.get("x-ratelimit-remaining")))
        assert [status for status, _ in seen] == [401, 401, 401, 429]
        assert [remaining for _, remaining in seen[:3]] == ["2", "1", "0"]


STREAM_HOSTILE = ("\x00", "a\x00b", "é✓", "x" * 5000, "9" * 40, "-1", "", "issue.*,\x00")


def _stream_status(port, query: str, headers: dict) -> tuple[int, str]:
    """The stream's status and media type, without waiting for any frame."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/v1/events/stream" + query, headers=headers)
        response = conn.getresponse()
        media_type = response.getheader("Content-Type", "")
        if response.status != 200:
            assert json.loads(response.read())["success"] is False
        return response.status, media_type
    finally:
        conn.close()


def test_hostile_stream_parameters_and_last_event_id_never_fail(world, server):
    from urllib.parse import quote

    key = make_api_key(world.owner, ALL_SCOPES)
    auth = {"Authorization": f"Bearer {key}"}
    for name in ("project_id", "types", "last_event_id"):
        for value in STREAM_HOSTILE:
            status, media_type = _stream_status(server, f"?{name}={quote(value)}", auth)
            assert status in {200, 400}, (name, value[:20], status)
            assert status != 200 or media_type.startswith("text/event-stream")
        status, _ = _stream_status(server, f"?{name}=a%00b", auth)
        assert status == 400, name
    # Header values as a client may send them (http.client refuses NUL and non-latin-1).
    for value in ("é".encode().decode("latin-1"), "x" * 5000, "9" * 40, "-1"):
        status, _ = _stream_status(server, "", {**auth, "Last-Event-ID": value})
        assert status in {200, 400}, (value[:20], status)


def test_head_on_the_stream_answers_its_headers_at_once(world, server):
    key = make_api_key(world.owner, ["projects:read"])
    started = time.monotonic()
    status, headers, body = _request(
        server, "HEAD", "/v1/events/stream", headers={"Authorization": f"Bearer {key}"}
    )
    assert status == 200 and body == b""
    assert headers["content-type"].startswith("text/event-stream")
    assert time.monotonic() - started < 5, "HEAD never waits for events"
    status, _, body = _request(
        server,
        "POST",
        "/v1/events/stream",
        body=b"{}",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    assert status == 405 and json.loads(body)["error"]["code"] == "METHOD_NOT_ALLOWED"
