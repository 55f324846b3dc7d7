"""Real processes for end-to-end tests: the ASGI server as production runs it, Celery workers
(with beat) and a private Redis, all on 127.0.0.1 and all on the live test database.

Used by transactional tests (``django_db(transaction=True)``): the rows a test makes are
committed, so the processes see them.
"""

import http.client
import os
import re
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from contextlib import contextmanager, suppress
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection

ROOT = Path(settings.BASE_DIR)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def serve_in_thread(server: socketserver.BaseServer) -> None:
    """``server`` served from a daemon thread that looks for ``shutdown()`` every 50 ms (the
    standard half second was what each test waited at its end for its receiver to stop)."""
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()


def require_services() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the processes need the test database: PostgreSQL (DATABASE_URL)")
    if not settings.REDIS_URL:
        pytest.skip("needs REDIS_URL")


def database_url() -> str:
    """The live test database, for other processes to see the rows this test made."""
    db = connection.settings_dict
    auth = quote(db["USER"] or "", safe="")
    if db["PASSWORD"]:
        auth += ":" + quote(db["PASSWORD"], safe="")
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}{port}/{db['NAME']}"


def process_env(**overrides: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "collab.settings.test",
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "PYTHONUNBUFFERED": "1",
    }
    env.update(overrides)
    return env


def embedded_env(data_dir: Path, **overrides: str) -> dict[str, str]:
    """The environment of ``./run`` (SQLite, no Redis), in a data directory of the test's own."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "REDIS_URL") and not key.startswith("PYTEST")
    }
    env.update(
        DJANGO_SETTINGS_MODULE="collab.settings.local",
        COLLAB_DATA_DIR=str(data_dir),
        PYTHONPATH=str(ROOT),
        PYTHONUNBUFFERED="1",
    )
    env.update(overrides)
    return env


def manage(env: dict[str, str], *args: str, check: bool = True, timeout: float = 300) -> str:
    """``manage.py`` in a process of its own with ``env``: its standard output. With ``check``,
    a command that fails fails the test with what it printed on standard error."""
    done = manage_run(env, *args, timeout=timeout)
    if check:
        assert done.returncode == 0, done.stderr
    return done.stdout


def manage_run(
    env: dict[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess:
    """``manage.py`` in a process of its own with ``env``, whatever its exit status."""
    return subprocess.run(  # noqa: S603 - our own manage.py, fixed arguments
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def python_run(env: dict[str, str], code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``python -c code`` in a process of its own with ``env``, from the repository's root,
    whatever its exit status."""
    return subprocess.run(  # noqa: S603 - our own interpreter, the test's own code
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def http_get(port: int, path: str, headers: dict | None = None, timeout: float = 10):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def answers(port: int, path: str, timeout: float = 2) -> bool:
    """Whether a server on ``port`` answers ``path`` with a 200 (not yet, when nothing listens:
    for ``wait_until``)."""
    try:
        return http_get(port, path, timeout=timeout)[0] == 200
    except OSError:
        return False


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    _group_kill(process)


def _group_kill(process: subprocess.Popen) -> None:
    """SIGKILL whatever is left of the process's group: a child it could not stop, or one it
    left running when it was killed (celery's embedded beat outlives a SIGKILLed worker and
    would go on queueing tasks for the tests that follow)."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _spawn(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """The process in a group of its own, so that it and its children stop together."""
    with log.open("ab") as output:
        return subprocess.Popen(  # noqa: S603 - our own processes, fixed arguments
            command,
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


# The server process behind each port asgi_server started, for tests that kill one.
running_servers: dict[int, subprocess.Popen] = {}


@contextmanager
def asgi_server(env: dict[str, str], tmp_path: Path, workers: int = 1, port: int | None = None):
    """gunicorn with uvicorn workers on ``collab.asgi``, as production and compose run it
    (on ``port``: a server come back where one was stopped)."""
    port = port or free_port()
    log = tmp_path / f"server-{port}.log"
    command = [sys.executable, "-m", "gunicorn", "collab.asgi", "--bind", f"127.0.0.1:{port}"]
    command += ["--worker-class", "collab.serving.UvicornWorker", "--workers", str(workers)]
    command += ["--log-level", "warning", "--graceful-timeout", "2"]
    process = _spawn(command, env, log)
    running_servers[port] = process
    try:
        deadline = time.monotonic() + 40
        while True:
            assert process.poll() is None, log.read_text()
            try:
                if http_get(port, "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "server did not start:\n" + log.read_text()
            time.sleep(0.1)
        yield port
    finally:
        running_servers.pop(port, None)
        _stop(process)


# Every queue (CELERY_TASK_ROUTES), as the worker command of docs/operations/worker.md takes them.
QUEUES = "default,webhooks,git,analytics,email,exports"
# How long a worker may take to start and say it is ready.
WORKER_READY_SECONDS = 120


class Worker:
    """A Celery worker process (beat embedded), which a test may kill and start again.

    It consumes every queue, as production's worker command does; ``pool`` "prefork" with
    ``concurrency`` 2 is the embedded default's (Procfile.local)."""

    def __init__(
        self,
        env: dict[str, str],
        tmp_path: Path,
        beat: bool = True,
        pool: str = "solo",
        concurrency: int = 1,
    ):
        self.env, self.tmp_path, self.beat = env, tmp_path, beat
        self.pool, self.concurrency = pool, concurrency
        self.log = tmp_path / "worker.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> "Worker":
        command = [sys.executable, "-m", "celery", "-A", "collab", "worker", "--pool", self.pool]
        command += ["--concurrency", str(self.concurrency), "-Q", QUEUES]
        command += ["--loglevel", "INFO", "--without-mingle", "--without-gossip"]
        name = f"test-{free_port()}@"
        command += ["--hostname", f"{name}%h"]
        if self.beat:
            command += ["--beat", "--schedule", str(self.tmp_path / "beat-schedule")]
        self.process = _spawn(command, self.env, self.log)
        self._ready(name)
        return self

    def _ready(self, name: str) -> None:
        """Until the worker says it consumes its queues (``<name>... ready.``): what a test
        waits for next counts from there. On a loaded machine a worker took most of a
        delivery's 30 seconds to start (a test's webhook timed out while it did)."""
        assert self.process is not None
        deadline = time.monotonic() + WORKER_READY_SECONDS
        said = re.compile(re.escape(name) + r"\S* ready\.")
        while not said.search(self.output()):
            assert self.process.poll() is None, "the worker stopped:\n" + self.output()
            assert time.monotonic() < deadline, "the worker did not start:\n" + self.output()
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL to the worker and its beat, as when its container is killed: no chance to
        finish, acknowledge or clean up."""
        assert self.process is not None
        _group_kill(self.process)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)

    def purge(self) -> None:
        """Drop what is still queued (sweeps beat sent while the worker was busy, say), so the
        next test's worker starts on an empty queue."""
        from collab.celery import app

        if "REDIS_URL" not in self.env:
            return  # the embedded default's queue is in the test's own data directory
        with app.connection_for_write(self.env["REDIS_URL"]) as conn:
            try:
                conn.ensure_connection(max_retries=1)
            except conn.connection_errors:
                return  # the test's own broker is gone, and its queue with it
            app.control.purge(connection=conn)

    def output(self) -> str:
        return self.log.read_text() if self.log.exists() else ""


class Beat:
    """A ``celery beat`` process of its own (the scheduler of CELERY_BEAT_SCHEDULER, with its
    lock), as a cluster runs one or more next to the workers."""

    def __init__(self, env: dict[str, str], tmp_path: Path, name: str = "beat"):
        self.env, self.tmp_path = env, tmp_path
        self.log = tmp_path / f"{name}.log"
        self.schedule = tmp_path / f"{name}-schedule"
        self.process: subprocess.Popen | None = None

    def start(self) -> "Beat":
        command = [sys.executable, "-m", "celery", "-A", "collab", "beat"]
        command += ["--loglevel", "INFO", "--schedule", str(self.schedule)]
        self.process = _spawn(command, self.env, self.log)
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL: no chance to release its lock."""
        assert self.process is not None
        _group_kill(self.process)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)

    def output(self) -> str:
        return self.log.read_text() if self.log.exists() else ""


@contextmanager
def celery_worker(env: dict[str, str], tmp_path: Path, beat: bool = True):
    worker = Worker(env, tmp_path, beat=beat).start()
    try:
        yield worker
    finally:
        worker.stop()
        worker.purge()


class RedisServer:
    """A private redis-server on a free port, which a test may stop and start again."""

    def __init__(self, tmp_path: Path):
        if shutil.which("redis-server") is None:
            pytest.skip("needs redis-server on the PATH")
        self.port = free_port()
        self.tmp_path = tmp_path
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--save", "", "--appendonly", "no", "--dir", str(self.tmp_path)]
        self.process = _spawn(command, dict(os.environ), self.tmp_path / "redis.log")
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                return self
            except OSError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)
            self.process = None


def wait_until(predicate, timeout: float, interval: float = 0.1, message=""):
    """``predicate``'s first true value within ``timeout`` seconds. ``message`` (a string, or a
    function called only on failure, for a process's output as it is then) says what never
    happened."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(
                (message() if callable(message) else message) or "condition not met in time"
            )
        time.sleep(interval)
