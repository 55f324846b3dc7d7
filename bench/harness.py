"""What every benchmark here needs: its environment, its database, gunicorn, and a load.

- ``environment_configure`` points the process (and the servers it starts) at PostgreSQL and
  Redis on loopback (DATABASE_URL, REDIS_URL; default postgres://postgres@127.0.0.1:5432/
  collab_bench and redis://127.0.0.1:6379/0) with production settings and no TLS redirect.
- ``database_ensure`` creates the benchmark database when it is missing.
- ``Server`` runs gunicorn as production does (collab.asgi, uvicorn workers) on a free loopback
  port, or for comparison ``collab.wsgi`` (gthread) or Django's plain ASGI handler.
- ``load_generator`` drives a URL with wrk (``apt-get install -y wrk``) or, without wrk, with
  Python threads bounded by a number of requests; both report requests, requests per second
  and the 50th and 99th percentile latencies in milliseconds. ``Target`` describes more than
  one GET: a method, a JSON body per request and several paths taken in turn.
- ``project_seed`` seeds (or reuses) the "Bench N" projects; ``api_key_for_owner`` makes the
  key the load uses; ``streams_open`` holds event streams open; ``process_rss_mib``,
  ``percentile`` and ``size_label`` help the reports.
"""

import asyncio
import http.client
import ipaddress
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/collab_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
WORKSPACE = "Bench"
OWNER = "owner@demo.collab.localhost"
# Each request on a new connection, as a proxy in front of gunicorn sends them (nginx speaks
# HTTP/1.0 upstream by default): with keep-alive, wrk's few connections can all land on one of
# the two worker processes, and a figure would be one process's or two's by chance.
FRESH_CONNECTION = {"Connection": "close"}


def stop_on_terminate() -> None:
    """SIGTERM ends the run as an exception would: the ``finally`` blocks stop the servers and
    workers it started (each in a session of its own, which a signal to the run's own process
    group does not reach). Without it, a run stopped from outside (a test's timeout) left
    them running, consuming the broker's queues of whatever came next."""

    def terminated(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminated)


def environment_configure(settings_module: str, **extra: str) -> dict:
    """This process's environment, which the servers inherit: loopback services only."""
    os.environ.setdefault("DATABASE_URL", DEFAULT_DATABASE_URL)
    os.environ.setdefault("REDIS_URL", DEFAULT_REDIS_URL)
    for name in ("DATABASE_URL", "REDIS_URL"):
        require_loopback(name, os.environ[name])
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": settings_module,
            "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            "DEBUG": "0",
            "SECURE_SSL_REDIRECT": "0",
            "ALLOWED_HOSTS": "127.0.0.1",
            "LOG_LEVEL": "WARNING",
            **extra,
        }
    )
    return dict(os.environ)


def require_loopback(name: str, url: str) -> None:
    host = urlparse(url).hostname or "localhost"
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        sys.exit(f"{name} must point at this machine (127.0.0.1 or localhost), not {host}.")


def database_ensure(url: str) -> None:
    """Create the benchmark database when it is missing."""
    import psycopg
    from psycopg import sql

    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    maintenance = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(maintenance, autocommit=True) as connection:
        exists = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [name]
        ).fetchone()
        if not exists:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            print(f"Created database {name}.")


# The servers a benchmark can start: what production runs (docker-compose.yml, Dockerfile,
# ./run), and for comparison gunicorn's threaded WSGI workers and Django's plain ASGI handler.
APPS = {
    "asgi": ("collab.asgi", ["--worker-class", "collab.serving.UvicornWorker"]),
    "wsgi": ("collab.wsgi", ["--worker-class", "gthread"]),
    "django_asgi": ("collab.asgi:django_asgi", ["--worker-class", "collab.serving.UvicornWorker"]),
}


class Server:
    """gunicorn on a free loopback port; by default as production runs it (``collab.asgi``,
    uvicorn workers, the REST endpoints on ``threads`` threads per process)."""

    def __init__(
        self, environment: dict, *, workers: int = 2, threads: int = 8, kind: str = "asgi"
    ):
        self.environment = {**environment, "WEB_THREADS": str(threads)}
        self.workers = workers
        self.threads = threads
        self.kind = kind
        self.process: subprocess.Popen | None = None
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start it without waiting (start several, then ``wait_ready`` each)."""
        app, worker_class = APPS[self.kind]
        command = [
            str(Path(sys.executable).parent / "gunicorn"),
            app,
            "--chdir",
            str(ROOT),
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(self.workers),
            *worker_class,
            "--threads",
            str(self.threads),
            "--graceful-timeout",
            "3",
            "--log-level",
            "warning",
        ]
        self.process = subprocess.Popen(command, env=self.environment, start_new_session=True)

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"gunicorn exited with {self.process.returncode}.")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                connection.request("GET", "/readyz")
                if connection.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise SystemExit(f"gunicorn did not become ready in {timeout:.0f} s.")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Target:
    """What a measurement sends: ``method`` to ``base`` + each of ``paths`` in turn, with the
    JSON ``bodies`` in turn (none for a GET). Keep the two lengths coprime, so that each path
    meets every body."""

    base: str
    paths: list[str]
    headers: dict = field(default_factory=dict)
    method: str = "GET"
    bodies: list[str] = field(default_factory=list)

    @classmethod
    def get(cls, url: str, headers: dict) -> "Target":
        parsed = urlparse(url)
        path = f"{parsed.path}?{parsed.query}" if parsed.query else parsed.path
        return cls(f"{parsed.scheme}://{parsed.netloc}", [path or "/"], headers)

    @property
    def url(self) -> str:
        return self.base + self.paths[0]

    def request(self, number: int) -> tuple[str, str | None]:
        body = self.bodies[number % len(self.bodies)] if self.bodies else None
        return self.paths[number % len(self.paths)], body


def load_generator(*, connections: int, requests: int, python: bool = False):
    """wrk when installed (unless ``python``), else Python threads."""
    if shutil.which("wrk") and not python:
        return Wrk(connections)
    return ThreadLoad(connections, requests)


class Wrk:
    name = "wrk"
    UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}

    def __init__(self, connections: int):
        self.connections = connections

    def warm(self, url: str, headers: dict) -> None:
        """A second of requests: connections open, caches fill."""
        self._wrk(url, headers, 1)

    def run(self, url: str, headers: dict, seconds: float) -> dict:
        return self.drive(Target.get(url, headers), seconds)

    def drive(self, target: Target, seconds: float, warm: bool = False) -> dict | None:
        if target.method == "GET" and len(target.paths) == 1:
            output = self._wrk(target.url, target.headers, seconds)
        else:
            with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
                script.write(self._script(target))
                script.flush()
                headers = {**target.headers, "Content-Type": "application/json"}
                output = self._wrk(target.url, headers, seconds, script.name)
        return None if warm else self._parse(target.url, output)

    def _script(self, target: Target) -> str:
        """A wrk script sending each request with the next path and body."""

        def table(values: list[str]) -> str:
            return "{" + ", ".join(json_string(value) for value in values) + "}"

        return (
            f"local paths = {table(target.paths)}\n"
            f"local bodies = {table(target.bodies)}\n"
            "local n = -1\n"
            "request = function()\n"
            "  n = n + 1\n"
            "  local body = nil\n"
            "  if #bodies > 0 then body = bodies[(n % #bodies) + 1] end\n"
            f"  local method = {json_string(target.method)}\n"
            "  return wrk.format(method, paths[(n % #paths) + 1], nil, body)\n"
            "end\n"
        )

    def _parse(self, url: str, output: str) -> dict:
        failures = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
        if failures or "Socket errors" in output:
            raise SystemExit(f"wrk saw failures on {url}:\n{output}")
        latency = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", output, re.MULTILINE))
        return {
            "requests": int(re.search(r"(\d+) requests in", output).group(1)),
            "requests_per_second": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),
            "p50_ms": self._ms(latency["50"]),
            "p99_ms": self._ms(latency["99"]),
        }

    def _wrk(self, url: str, headers: dict, seconds: float, script: str | None = None) -> str:
        header_args = [arg for name, value in headers.items() for arg in ("-H", f"{name}: {value}")]
        command = ["wrk", "--threads", "1", "--connections", str(self.connections)]
        command += ["--duration", f"{max(1, round(seconds))}s", "--timeout", "10s", "--latency"]
        if script:
            command += ["--script", script]
        return subprocess.run(
            [*command, *header_args, url],
            capture_output=True,
            text=True,
            check=True,
            timeout=seconds + 30,
        ).stdout

    def _ms(self, text: str) -> float:
        number, unit = re.fullmatch(r"([\d.]+)(\w+)", text).groups()
        return round(float(number) * self.UNITS[unit], 3)


class ThreadLoad:
    """``connections`` threads on keep-alive connections, sending at most ``requests``
    requests per measurement and stopping after its seconds."""

    name = "python threads"

    def __init__(self, connections: int, requests: int):
        self.connections = connections
        self.requests = requests

    def warm(self, url: str, headers: dict) -> None:
        self._drive(Target.get(url, headers), 1, self.connections * 5)

    def run(self, url: str, headers: dict, seconds: float) -> dict:
        return self.drive(Target.get(url, headers), seconds)

    def drive(self, target: Target, seconds: float, warm: bool = False) -> dict | None:
        budget = self.connections * 5 if warm else self.requests
        latencies, elapsed = self._drive(target, seconds, budget)
        if warm:
            return None
        return {
            "requests": len(latencies),
            "requests_per_second": round(len(latencies) / elapsed, 1),
            "p50_ms": round(statistics.median(latencies) * 1000, 3),
            "p99_ms": round(
                latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000, 3
            ),
        }

    def _drive(self, target: Target, seconds: float, budget: int):
        parsed = urlparse(target.base)
        headers = dict(target.headers)
        if target.bodies:
            headers["Content-Type"] = "application/json"
        sent = [0]
        remaining, lock, latencies = [budget], threading.Lock(), []
        deadline = time.monotonic() + seconds
        errors: list[str] = []

        def worker():
            connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=10)
            mine = []
            while time.monotonic() < deadline and not errors:
                with lock:
                    if remaining[0] <= 0:
                        break
                    remaining[0] -= 1
                    path, body = target.request(sent[0])
                    sent[0] += 1
                started = time.perf_counter()
                connection.request(target.method, path, body=body, headers=headers)
                response = connection.getresponse()
                response.read()
                if response.status >= 300:
                    errors.append(f"{target.method} {path} answered {response.status}")
                    break
                if response.getheader("Connection", "").lower() == "close":
                    connection.close()
                mine.append(time.perf_counter() - started)
            connection.close()
            with lock:
                latencies.extend(mine)

        threads = [threading.Thread(target=worker) for _ in range(self.connections)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise SystemExit(errors[0])
        return sorted(latencies), time.perf_counter() - started


def json_string(value: str) -> str:
    """A Lua string literal (JSON's escapes are Lua's for what we send)."""
    import json

    return json.dumps(value)


# Data, keys and streams shared by the benchmarks -----------------------------------------


def project_seed(issues: int) -> dict:
    """The project of ``issues`` issues, seeded unless it holds them already."""
    from django.core.management import call_command

    from issues.selectors import issue_count
    from projects.models import Project

    name = f"Bench {issues}"

    def find():
        return Project.objects.filter(workspace__name=WORKSPACE, name=name).first()

    project = find()
    held = issue_count(project_ids=[project.pk], statuses=None) if project else 0
    seconds = None
    if held < issues:
        print(f"Seeding '{name}' ({held} issues now, {issues} wanted)...", flush=True)
        began = time.perf_counter()
        # A million rows copied in go faster into the GIN index alone: search's rank index
        # (RUM) is built again afterwards, concurrently, as the migration builds it.
        rank_index = _rank_index_set_aside()
        call_command(
            "seed_demo",
            "--workspace",
            WORKSPACE,
            "--project-name",
            name,
            "--issues",
            str(issues),
            verbosity=1,
        )
        if rank_index:
            from django.db import connection

            from collab.db import fulltext

            fulltext.rank_index_make(connection, "issues_issue")
        seconds = round(time.perf_counter() - began, 1)
        project = find()
        # Fresh statistics for the planner, as autovacuum would gather them in a while.
        from django.db import connection

        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
    print(f"Using '{name}' (id {project.pk}).", flush=True)
    return {
        "id": project.pk,
        "name": name,
        "issues": issue_count(project_ids=[project.pk], statuses=None),
        "open": issue_count(project_ids=[project.pk], statuses=["open"]),
        "seed_seconds": seconds,
    }


def _rank_index_set_aside() -> bool:
    """Drop the issues' rank index (PostgreSQL with RUM) before a big seeding; whether there
    was one to build again."""
    from django.db import connection

    from collab.db import fulltext

    if connection.vendor != "postgresql" or not fulltext.rank_index_built(["issues_issue"]):
        return False
    return fulltext.rank_index_drop(connection, "issues_issue")


def api_key_for_owner():
    from accounts.models import User
    from accounts.services import api_key_create
    from collab.api.scopes import ALL_SCOPES

    owner = User.objects.get(email=OWNER)
    return api_key_create(user=owner, name="bench", scopes=list(ALL_SCOPES), expires_in="1d")


def api_key_revoke(key) -> None:
    from accounts.services import api_key_revoke as revoke

    revoke(api_key=key)


def size_label(issues: int) -> str:
    if issues >= 1_000_000 and issues % 1_000_000 == 0:
        return f"{issues // 1_000_000}M"
    return f"{issues // 1000}k" if issues >= 1000 and issues % 1000 == 0 else str(issues)


def percentile(values: list[float], percent: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * percent / 100))]


async def streams_open(port: int, token: str, count: int, received: dict):
    request = (
        "GET /v1/events/stream?types=issue.created HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    ).encode()

    async def one():
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=2**20)
        writer.write(request)
        await writer.drain()
        head = await reader.readuntil(b": connected")
        if b" 200 " not in head.split(b"\r\n", 1)[0]:
            raise SystemExit(f"the stream answered {head[:200]!r}")
        return reader, writer

    async def listen(reader):
        while line := await reader.readline():
            if line.startswith(b"id: "):
                received.setdefault(int(line[4:]), []).append(time.perf_counter())

    streams = []
    for start in range(0, count, 100):  # in waves, as clients arrive
        streams += await asyncio.gather(*(one() for _ in range(min(100, count - start))))
    tasks = [asyncio.create_task(listen(reader)) for reader, _writer in streams]
    return streams, tasks


def process_rss_mib(server: Server) -> float:
    """Resident memory of the server's one worker process."""
    pid = server.process.pid
    child = int(Path(f"/proc/{pid}/task/{pid}/children").read_text().split()[0])
    for line in Path(f"/proc/{child}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0
