"""The count is exact under concurrency, across server processes (docs/guide/rate-limits.md).

Two gunicorn servers (two processes, sixteen threads each) share one account's limit of 50;
200 requests are released at once from 200 threads, alternating between the servers. Exactly
50 are served and 150 refused, and the 50 served saw each of Remaining 49 ... 0 exactly once.
It runs on Redis, on the database counter (PostgreSQL), and on the embedded default (SQLite
file, no Redis) as ``./run`` starts it.
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection

from accounts.models import Membership, Role
from collab.api.scopes import ALL_SCOPES
from ratelimits.models import RateLimitCounter
from tests.factories import UserFactory, WorkspaceFactory, make_api_key
from tests.liveserver import manage

pytestmark = [pytest.mark.slow(seconds=12), pytest.mark.live]

ROOT = Path(settings.BASE_DIR)
LIMIT, REQUESTS = 50, 200


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _database_url() -> str:
    """The live test database, for the servers to see the rows this test made."""
    db = connection.settings_dict
    auth = quote(db["USER"] or "", safe="")
    if db["PASSWORD"]:
        auth += ":" + quote(db["PASSWORD"], safe="")
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}{port}/{db['NAME']}"


def _get(port: int, path: str, credential: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Authorization": f"Bearer {credential}"} if credential else {}
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        body = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body
    finally:
        conn.close()


@contextmanager
def servers(env: dict[str, str], tmp_path: Path, count: int = 2):
    """``count`` gunicorn servers on 127.0.0.1, each its own process; yields their ports."""
    started: list[tuple[subprocess.Popen, int, Path]] = []
    try:
        for n in range(count):
            port = _free_port()
            log = tmp_path / f"gunicorn-{n}.log"
            command = [sys.executable, "-m", "gunicorn", "collab.wsgi"]
            command += ["--bind", f"127.0.0.1:{port}", "--workers", "1"]
            command += ["--worker-class", "gthread", "--threads", "16", "--log-level", "warning"]
            with log.open("wb") as output:
                process = subprocess.Popen(  # noqa: S603 - our own server, fixed arguments
                    command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT
                )
            started.append((process, port, log))
        deadline = time.monotonic() + 40
        for process, port, log in started:
            while True:
                assert process.poll() is None, log.read_text()
                try:
                    if _get(port, "/healthz", "")[0] == 200:
                        break
                except OSError:
                    pass
                assert time.monotonic() < deadline, "server did not start:\n" + log.read_text()
                time.sleep(0.1)
        yield [port for _, port, _ in started]
    finally:
        for process, _, _ in started:
            process.terminate()
        for process, _, _ in started:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def fire_at_once(ports: list[int], credential: str) -> list[tuple[int, int, dict[str, str], dict]]:
    """REQUESTS requests from as many threads, released together, alternating servers."""
    barrier = threading.Barrier(REQUESTS)
    results: list[tuple[int, int, dict[str, str], dict]] = []
    lock = threading.Lock()

    def one(index: int) -> None:
        port = ports[index % len(ports)]
        barrier.wait(timeout=30)
        status, headers, body = _get(port, "/v1/users/me", credential)
        with lock:
            results.append((port, status, headers, json.loads(body)))

    threads = [threading.Thread(target=one, args=(n,)) for n in range(REQUESTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "requests hung"
    return results


def assert_exactly_the_limit_served(results, ports) -> None:
    statuses = Counter(status for _, status, _, _ in results)
    assert statuses == {200: LIMIT, 429: REQUESTS - LIMIT}, statuses
    assert Counter(port for port, _, _, _ in results) == dict.fromkeys(ports, REQUESTS // 2)

    served = [headers for _, status, headers, _ in results if status == 200]
    # Each served request took its own place in the count: Remaining 49, 48 ... 0, once each.
    assert sorted(int(h["x-ratelimit-remaining"]) for h in served) == list(range(LIMIT))
    assert sorted(int(h["x-ratelimit-used"]) for h in served) == list(range(1, LIMIT + 1))
    assert {h["x-ratelimit-limit"] for _, _, h, _ in results} == {str(LIMIT)}
    assert len({h["x-ratelimit-reset"] for _, _, h, _ in results}) == 1, "one window"

    for _, status, headers, body in results:
        if status == 429:
            assert body["success"] is False and body["error"]["code"] == "RATE_LIMITED"
            assert int(headers["retry-after"]) >= 1
            assert headers["x-ratelimit-remaining"] == "0"


def _server_env(**overrides: str) -> dict[str, str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "collab.settings.test"}
    env.update(
        RATE_LIMIT_STANDARD=str(LIMIT),
        RATE_LIMIT_KEY_PREFIX=f"test:{uuid.uuid4().hex}:",
        LOG_LEVEL="WARNING",
    )
    env.update(overrides)
    return env


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("backend", ["redis", "database"])
def test_two_server_processes_serve_exactly_the_limit(backend, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("the servers need the test database: PostgreSQL (DATABASE_URL)")
    if backend == "redis" and not settings.REDIS_URL:
        pytest.skip("needs REDIS_URL")
    user = UserFactory(email="hammer@example.com")
    Membership.objects.create(workspace=WorkspaceFactory(), user=user, role=Role.OWNER)
    key = make_api_key(user, ALL_SCOPES)
    env = _server_env(DATABASE_URL=_database_url(), RATE_LIMIT_BACKEND=backend)

    with servers(env, tmp_path) as ports:
        results = fire_at_once(ports, key)
        assert_exactly_the_limit_served(results, ports)
        for port in ports:  # both processes see the same, exhausted, window
            status, _, body = _get(port, "/v1/rate_limit", key)
            data = json.loads(body)["data"]
            assert (status, data["used"], data["remaining"]) == (200, LIMIT, 0)

    prefix = env["RATE_LIMIT_KEY_PREFIX"]
    if backend == "database":
        assert RateLimitCounter.objects.get(key=f"{prefix}user:{user.pk}").hits == LIMIT
    else:
        import redis

        client = redis.Redis.from_url(settings.REDIS_URL)
        assert client.hget(f"{prefix}user:{user.pk}", "n") == str(LIMIT).encode()
        client.delete(f"{prefix}user:{user.pk}")


def test_the_embedded_default_serves_exactly_the_limit(tmp_path, embedded_database):
    """SQLite in a file, no Redis: the counters are rows updated by one atomic upsert."""
    env = _server_env(
        DATABASE_URL=f"sqlite:///{tmp_path / 'collab.sqlite3'}",
        COLLAB_DATA_DIR=str(tmp_path),
        RATE_LIMIT_BACKEND="database",
    )
    env.pop("REDIS_URL", None)

    embedded_database(tmp_path)
    manage(env, "create_user", "--email", "e@example.com", "--password", "p-long-passphrase")
    key = manage(
        env, "create_api_key", "--email", "e@example.com", "--name", "k", "--scopes", "users:read"
    ).splitlines()[-1]

    with servers(env, tmp_path) as ports:
        results = fire_at_once(ports, key)
    assert_exactly_the_limit_served(results, ports)
