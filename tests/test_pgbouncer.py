"""The service behind a real PgBouncer in transaction pooling, as deployments run it.

PgBouncer (Debian's package) is started on a free loopback port in front of the test database,
with a pool of two server connections, so consecutive queries of one client connection land in
different server sessions: anything that outlives a transaction on the server (a prepared
statement, a server-side cursor held across statements) breaks. The server runs with
``DATABASE_TRANSACTION_POOLING=1`` and its own psycopg pool on top, and is driven over HTTP.
"""

import concurrent.futures
import json
import os
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import connection

from collab.api.scopes import ALL_SCOPES
from issues.models import Issue
from tests.factories import make_api_key
from tests.liveserver import asgi_server, free_port, process_env, require_services

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.live]


def pgbouncer_binary() -> str:
    found = shutil.which("pgbouncer") or (
        "/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None
    )
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI needs pgbouncer (./test installs Debian's package)")
        pytest.skip("needs pgbouncer (apt-get install pgbouncer)")
    return found


@contextmanager
def pgbouncer(tmp_path: Path):
    db = connection.settings_dict
    # Its own folder in the system's temporary directory: pytest's is private to this user,
    # and PgBouncer runs as another (below).
    folder = Path(tempfile.mkdtemp(prefix="collab-pgbouncer-"))
    port = free_port()
    (folder / "users.txt").write_text(f'"{db["USER"]}" ""\n')
    (folder / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"* = host={db['HOST'] or '127.0.0.1'} port={db['PORT'] or 5432}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        "auth_type = trust\n"
        f"auth_file = {folder / 'users.txt'}\n"
        "pool_mode = transaction\n"
        "default_pool_size = 2\nmin_pool_size = 0\nmax_client_conn = 200\n"
        "ignore_startup_parameters = extra_float_digits,options\n"
        f"logfile = {folder / 'pgbouncer.log'}\npidfile = {folder / 'pgbouncer.pid'}\n"
    )
    command = [pgbouncer_binary(), str(folder / "pgbouncer.ini")]
    if os.geteuid() == 0:
        # PgBouncer refuses to run as root; it drops to the database's system user.
        shutil.chown(folder, "postgres")
        for path in folder.iterdir():
            shutil.chown(path, "postgres")
        command[1:1] = ["-u", "postgres"]
    process = subprocess.Popen(  # noqa: S603 - fixed arguments
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 15
        import socket

        while True:
            assert process.poll() is None, process.stderr.read().decode()
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "pgbouncer did not start"
                time.sleep(0.1)
        yield port, folder / "pgbouncer.log"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(folder, ignore_errors=True)


def _call(port, method, path, key, body=None):
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {key}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    try:
        conn.request(
            method, path, body=json.dumps(body) if body is not None else None, headers=headers
        )
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_the_service_works_behind_pgbouncer_in_transaction_pooling(world, tmp_path):
    require_services()
    db = connection.settings_dict
    with pgbouncer(tmp_path) as (bouncer_port, log):
        url = f"postgres://{db['USER']}@127.0.0.1:{bouncer_port}/{db['NAME']}"
        env = process_env(
            DATABASE_URL=url,
            DATABASE_TRANSACTION_POOLING="1",
            DATABASE_POOL="1",
            DATABASE_POOL_MAX="8",
            WEB_THREADS="8",
            # Many fetches per report, so a server-side cursor would be read across sessions.
            ANALYTICS_REPORT_CHUNK_SIZE="2",
        )
        key = make_api_key(world.owner, ALL_SCOPES)
        with asgi_server(env, tmp_path, workers=2) as port:
            project = f"/v1/projects/{world.project.pk}"
            # Concurrent writes and reads: 16 client threads over 2 server connections.
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                creates = list(
                    pool.map(
                        lambda n: _call(
                            port,
                            "POST",
                            f"{project}/issues",
                            key,
                            {"title": f"Pooled {n}", "labels": ["pgb"]},
                        ),
                        range(24),
                    )
                )
                reads = list(
                    pool.map(
                        lambda n: _call(
                            port,
                            "GET",
                            f"{project}/issues?labels=pgb&per_page=5&page={n % 5 + 1}",
                            key,
                        ),
                        range(40),
                    )
                )
            assert [status for status, _ in creates] == [201] * 24, creates[:3]
            assert {status for status, _ in reads} == {200}
            numbers = sorted(
                Issue.objects.filter(project=world.project).values_list("number", flat=True)
            )
            assert numbers == list(range(1, 25))
            # The streamed report reads with .iterator(): no server-side cursor may be used.
            # Six at once beside other reads, so the bouncer hands sessions around between
            # the fetches of each.
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                reports = list(
                    pool.map(
                        lambda n: _call(
                            port,
                            "GET",
                            f"{project}/reports/issues?format=csv"
                            if n % 2
                            else f"{project}/issues?per_page=3",
                            key,
                        ),
                        range(12),
                    )
                )
            for n, (status, body) in enumerate(reports):
                assert status == 200, body[:300]
                if n % 2:
                    assert body.count(b"\n") == 25, body[-300:]
            # The compiled per-request queries (the key, the project), many times over.
            for _ in range(20):
                status, _ = _call(port, "GET", "/v1/users/me", key)
                assert status == 200
            status, body = _call(
                port,
                "PATCH",
                "/v1/issues/"
                + str(
                    Issue.objects.filter(project=world.project).values_list("pk", flat=True).first()
                ),
                key,
                {"status": "closed"},
            )
            assert status == 200, body
        text = log.read_text()
    # Every connection went through the bouncer, and it saw no error.
    assert "login attempt" in text, text[-2000:]
    assert "ERROR" not in text and "WARNING" not in text, text[-2000:]


def test_request_reads_go_to_the_replica_and_a_writer_reads_its_own_writes(world, tmp_path):
    """The replica is the same database reached through its own PgBouncer, so its log shows
    which requests read there: plain reads do; requests that write, and API-key checks, do not."""
    require_services()
    from tests.liveserver import database_url

    db = connection.settings_dict
    with pgbouncer(tmp_path) as (bouncer_port, log):
        replica = f"postgres://{db['USER']}@127.0.0.1:{bouncer_port}/{db['NAME']}"
        env = process_env(
            DATABASE_URL=database_url(),
            DATABASE_REPLICA_URL=replica,
            DATABASE_TRANSACTION_POOLING="1",
            DATABASE_POOL="0",
        )
        key = make_api_key(world.owner, ALL_SCOPES)
        with asgi_server(env, tmp_path) as port:
            status, body = _call(
                port, "POST", f"/v1/projects/{world.project.pk}/issues", key, {"title": "Mine"}
            )
            assert status == 201, body
            assert "login attempt" not in log.read_text(), "the create read from the replica"
            status, body = _call(port, "GET", f"/v1/projects/{world.project.pk}/issues", key)
            assert status == 200
            assert [issue["title"] for issue in json.loads(body)["data"]] == ["Mine"]
            assert "login attempt" in log.read_text(), "a plain read went to the replica"
