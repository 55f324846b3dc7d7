"""The embedded default's worker (``./run``: SQLite, no Redis, kombu's filesystem broker, a
prefork worker of two processes with beat) under a flood, and killed mid-task.

Real processes only: the ASGI server and a Celery worker as Procfile.local starts them, in a
data directory of the test's own, with receivers on 127.0.0.1.
"""

import re
import shutil
import socket
import sqlite3
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.liveserver import Worker, asgi_server, embedded_env, manage, wait_until
from tests.notifications.receiver import start_receiver

pytestmark = [pytest.mark.slow, pytest.mark.live]

# Sweeps often, so lost work is taken up within seconds (production's defaults are minutes).
QUICK = {
    "WEBHOOK_SWEEP_SECONDS": "1",
    "WEBHOOK_SWEEP_GRACE_SECONDS": "1",
    "WEBHOOK_LEASE_MARGIN_SECONDS": "1",
    "WEBHOOK_TIMEOUT_SECONDS": "3",
}


@pytest.fixture(scope="module")
def embedded_template(tmp_path_factory, embedded_database) -> tuple[Path, str]:
    """A migrated, bootstrapped data directory (and its API key), made once per module and
    copied by each test."""
    data = tmp_path_factory.mktemp("embedded-template")
    env = embedded_env(data)
    embedded_database(data)
    announced = manage(env, "bootstrap", "--port", "8000")
    key = re.search(r"clb_\w+", announced)
    assert key, announced
    return data, key.group()


class Embedded:
    """The embedded stack of one test: its environment, its server and its API."""

    def __init__(self, data: Path, key: str, tmp_path: Path, **overrides: str):
        self.data, self.tmp_path = data, tmp_path
        self.env = embedded_env(data, **overrides)
        self.key = key
        self.port = 0
        self.client: httpx.Client | None = None

    def worker(self) -> Worker:
        """A worker as Procfile.local runs it: prefork, two processes, beat embedded."""
        return Worker(self.env, self.tmp_path, pool="prefork", concurrency=2)

    def post(self, path: str, body: dict) -> dict:
        assert self.client is not None
        response = self.client.post(path, json=body)
        assert response.status_code == 201, response.text
        return response.json()["data"]

    def delete(self, path: str) -> None:
        assert self.client is not None
        response = self.client.delete(path)
        assert response.status_code == 200, response.text

    def rows(self, sql: str, *params) -> list[tuple]:
        """A read of the stack's database, beside the processes."""
        with sqlite3.connect(self.data / "collab.sqlite3", timeout=30) as db:
            return db.execute(sql, params).fetchall()


@pytest.fixture
def embedded(embedded_template, tmp_path):
    template, key = embedded_template
    data = tmp_path / "data"
    shutil.copytree(template, data)

    def start(**overrides: str):
        stack = Embedded(data, key, tmp_path, **overrides)
        return stack

    return start


class Receiver:
    """A receiver on 127.0.0.1 that can go away: ``silence()`` leaves every later request
    unanswered (held open until the test ends)."""

    def __init__(self):
        self.receiver, self.server = start_receiver()
        self.gone = threading.Event()
        self.ended = threading.Event()
        handler = self.server.RequestHandlerClass
        original, outer = handler.do_POST, self

        def do_post(handler_self):
            if outer.gone.is_set():
                outer.ended.wait(60)
                return
            original(handler_self)

        handler.do_POST = do_post

    @property
    def url(self) -> str:
        return self.receiver.url

    def silence(self) -> None:
        self.gone.set()

    def close(self) -> None:
        self.ended.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receivers():
    made: list[Receiver] = []

    def make() -> Receiver:
        made.append(Receiver())
        return made[-1]

    yield make
    for receiver in made:
        receiver.close()


FLOOD = 400
CHURN = 8


@pytest.mark.slow(seconds=50)
def test_a_flood_in_one_project_leaves_anothers_webhook_on_time(embedded, receivers):
    """The issue's reproduction: project A creates 400 issues as fast as one client can,
    while its webhook is registered and deleted 8 times, then registered again; its receiver
    then stops answering (half of the flood goes to it). Project B's webhook, on a healthy
    receiver, gets each new event within 5 s: amid the flood, right after it, and while A's
    retries and deferrals come due."""
    stack = embedded()  # the embedded default's own settings
    a_receiver, b_receiver = receivers(), receivers()
    waits: list[float] = []

    def b_event(title: str) -> None:
        sent = time.monotonic()
        stack.post(f"/v1/projects/{b}/issues", {"title": title})
        wait_until(
            lambda: any(title.encode() in r.body for r in b_receiver.receiver.requests),
            timeout=30,
            interval=0.05,
            message=f"{title} never arrived; waits so far {waits}",
        )
        waits.append(time.monotonic() - sent)

    with asgi_server(stack.env, stack.tmp_path, workers=2) as port:
        stack.client = httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {stack.key}"},
            timeout=60,
        )
        worker = stack.worker().start()
        try:
            a = stack.post("/v1/projects", {"name": "Flood"})["id"]
            b = stack.post("/v1/projects", {"name": "Quiet"})["id"]
            hook = {"url": a_receiver.url, "events": ["*"]}
            stack.post(f"/v1/projects/{b}/webhooks", {"url": b_receiver.url, "events": ["*"]})
            b_event("Before")  # the worker is up
            waits.clear()
            webhook = stack.post(f"/v1/projects/{a}/webhooks", hook)["id"]
            started = time.monotonic()
            for number in range(1, FLOOD + 1):
                stack.post(f"/v1/projects/{a}/issues", {"title": f"Flood {number}"})
                if number <= CHURN * 20 and number % 20 == 0:
                    stack.delete(f"/v1/webhooks/{webhook}")
                    webhook = stack.post(f"/v1/projects/{a}/webhooks", hook)["id"]
                if number == FLOOD // 2:
                    a_receiver.silence()
                if number == FLOOD * 3 // 4:
                    b_event("Amid")
            flooded = time.monotonic() - started
            for round_number in range(6):
                b_event(f"After {round_number}")
                time.sleep(6)
        finally:
            worker.stop()
        print(f"flood of {FLOOD} in {flooded:.1f} s; B's waits {waits}")
        stuck = stack.rows(
            "SELECT count(*) FROM notifications_delivery WHERE webhook_id = ? AND status = ?",
            webhook,
            "pending",
        )[0][0]
        assert stuck >= FLOOD // 4, "A's receiver was meant to leave a backlog"
    assert max(waits) <= 5, waits


class HeldListener:
    """Accepts connections and says nothing until released (an SMTP server that never
    greets, a git server that never answers): a task talking to it is stuck mid-way."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.connected = threading.Event()
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.held.append(connection)
            self.connected.set()

    def close(self):
        self.socket.close()
        for connection in self.held:
            connection.close()


class HeldOnceReceiver(HeldListener):
    """A webhook receiver that holds its first request unanswered (a delivery stuck in
    flight) and answers every later one 200."""

    def _serve(self):
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            if not self.connected.is_set():
                self.held.append(connection)
                self.connected.set()
                continue
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    @staticmethod
    def _answer(connection: socket.socket) -> None:
        with connection:
            connection.settimeout(10)
            data = b""
            while b"\r\n\r\n" not in data:
                if not (chunk := connection.recv(65536)):
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            while len(body) < length and (chunk := connection.recv(65536)):
                body += chunk
            connection.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
            )


@pytest.mark.slow(seconds=50)
def test_work_a_killed_worker_held_is_done_after_it_restarts(embedded, tmp_path, origin):
    """SIGKILL the embedded worker while it is in the middle of a git sync (its origin never
    answers), of a mention email (its SMTP server never greets) and of a webhook delivery (its
    receiver holds the request), with an invitation's email queued behind them: the file
    broker has dropped the tasks. Restarted (the origin, the mail and the receiver back), the
    sweeps do all four, once."""
    smtp, origin_held, receiver = HeldListener(), HeldListener(), HeldOnceReceiver()
    outbox = tmp_path / "outbox"
    quick = {
        **QUICK,
        "GIT_SYNC_SWEEP_SECONDS": "1",
        "GIT_SYNC_STUCK_SECONDS": "3",
        "GIT_TIMEOUT_SECONDS": "60",
        "MENTIONS_SWEEP_SECONDS": "1",
        "MENTIONS_SWEEP_GRACE_SECONDS": "2",
        "INVITATION_EMAIL_SWEEP_SECONDS": "1",
        "INVITATION_EMAIL_SWEEP_GRACE_SECONDS": "2",
        "WEBHOOK_RETRY_BASE_SECONDS": "1",
    }
    stack = embedded(EMAIL_URL=f"smtp://127.0.0.1:{smtp.port}", **quick)
    manage(
        stack.env, "create_user", "--email", "pat@collab.localhost", "--password",
        "a-long-password-1", "--workspace", "Default", "--role", "developer",
    )  # fmt: skip
    try:
        with asgi_server(stack.env, stack.tmp_path) as port:
            stack.client = httpx.Client(
                base_url=f"http://127.0.0.1:{port}",
                headers={"Authorization": f"Bearer {stack.key}"},
                timeout=60,
            )
            worker = stack.worker().start()
            try:
                project = stack.post("/v1/projects", {"name": "Rocket", "visibility": "internal"})
                repository = stack.post(
                    f"/v1/projects/{project['id']}/repositories",
                    {"name": "rocket", "clone_url": f"git://127.0.0.1:{origin_held.port}/r.git"},
                )
                assert origin_held.connected.wait(60), worker.output()[-3000:]
                issue = stack.post(f"/v1/projects/{project['id']}/issues", {"title": "Crash"})
                stack.post(f"/v1/issues/{issue['id']}/comments", {"body": "@pat have a look"})
                assert smtp.connected.wait(60), worker.output()[-3000:]
                assert stack.rows("SELECT count(*) FROM comments_mention")[0][0] == 1
                stack.post(
                    f"/v1/workspaces/{project['workspace_id']}/invitations",
                    {"email": "new@example.test", "role": "viewer"},
                )
                stack.post(
                    f"/v1/projects/{project['id']}/webhooks",
                    {"url": f"http://127.0.0.1:{receiver.port}/hook", "events": ["issue.created"]},
                )
                stack.post(f"/v1/projects/{project['id']}/issues", {"title": "Hooked"})
                assert receiver.connected.wait(60), worker.output()[-3000:]
                worker.kill()
            finally:
                worker.stop()
            # Both were cut off mid-way: nothing sent, the repository not synced. It is still
            # ``syncing``, or ``pending`` again: when the steps above took longer than
            # GIT_SYNC_STUCK_SECONDS, a sweep took the held sync back and queued it anew
            # (behind the two held tasks).
            sync = "SELECT sync_status FROM gitintegration_repository WHERE id = ?"
            assert stack.rows(sync, repository["id"]) in ([("syncing",)], [("pending",)])
            assert stack.rows("SELECT notified_at FROM comments_mention") == [(None,)]
            invitation = "SELECT email_status FROM accounts_invitation"
            assert stack.rows(invitation) == [("queued",)]
            # One delivery in flight (the "Crash" issue's own may have been fanned out to the
            # webhook too, when the busy worker came to it after the webhook was made).
            deliveries = "SELECT DISTINCT status FROM notifications_delivery"
            assert stack.rows(deliveries) == [("pending",)]

            # The origin and the mail come back (the repository now names the origin itself).
            stack.rows(
                "UPDATE gitintegration_repository SET clone_url = ? WHERE id = ?",
                str(origin.path),
                repository["id"],
            )
            stack.env["EMAIL_URL"] = f"filemail:///{outbox}"  # the path after the third slash
            worker = stack.worker().start()
            try:
                wait_until(
                    lambda: stack.rows(sync, repository["id"]) == [("synced",)],
                    timeout=60,
                    interval=0.5,
                    message=lambda: worker.output()[-3000:],
                )
                wait_until(
                    lambda: outbox.exists() and len(list(outbox.iterdir())) >= 2,
                    timeout=60,
                    interval=0.5,
                    message=lambda: worker.output()[-3000:],
                )
                wait_until(
                    lambda: stack.rows(deliveries) == [("succeeded",)],
                    timeout=120,
                    interval=0.5,
                    message=lambda: worker.output()[-3000:],
                )
                time.sleep(3)  # a few more sweeps: nothing is sent twice
            finally:
                worker.stop()
    finally:
        smtp.close()
        origin_held.close()
        receiver.close()
    sent = sorted(message.read_text() for message in outbox.iterdir())
    assert len(sent) == 2
    assert [("pat@collab.localhost" in text, "new@example.test" in text) for text in sent] in (
        [(True, False), (False, True)],
        [(False, True), (True, False)],
    )
    assert stack.rows(invitation) == [("sent",)]
    assert stack.rows("SELECT count(*) FROM comments_mention WHERE notified_at IS NULL") == [(0,)]
