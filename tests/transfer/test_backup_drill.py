"""The restore drill, as an operator would run it on the embedded default (``./run``: SQLite,
no Redis): a live service is written to over HTTP (a repository synced from its origin, a
webhook with its secret, issues and comments), backed up with ``manage.py backup`` while a
client keeps writing, restored with ``manage.py restore`` into a new data folder, and a second
server started on that folder serves the same data: every write committed before the backup
began, whole transactions only (the writes it holds are exactly the writer's first ones), the
same API key, the same password, a token the first server signed, the webhook's secret, and
the repository's mirror with the same refs.
"""

import re
import sqlite3
import threading
import time
from contextlib import closing
from dataclasses import dataclass

import httpx
import pytest

from notifications.crypto import secret_decrypt
from tests.gitorigin import git
from tests.liveserver import Worker, asgi_server, embedded_env, free_port, manage, wait_until

pytestmark = [pytest.mark.slow(seconds=120), pytest.mark.live]

ADMIN = "admin@collab.localhost"
HOOK_SECRET = "the-drill-webhook-secret"


@dataclass
class Written:
    """One write of the writer: an issue and then its comment, each committed on its own."""

    number: int
    title: str
    commented: bool
    done_at: float


def api(port: int, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=f"http://127.0.0.1:{port}",
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )


def created(client: httpx.Client, path: str, body: dict) -> dict:
    response = client.post(path, json=body)
    assert response.status_code == 201, response.text
    return response.json()["data"]


def issues_of(client: httpx.Client, project: int) -> dict[int, dict]:
    found: dict[int, dict] = {}
    page = 1
    while True:
        response = client.get(
            f"/v1/projects/{project}/issues", params={"per_page": 100, "page": page}
        )
        assert response.status_code == 200, response.text
        rows = response.json()["data"]
        found.update({issue["number"]: issue for issue in rows})
        if len(rows) < 100:
            return found
        page += 1


def refs(mirror) -> str:
    return git("for-each-ref", "--format=%(refname) %(objectname)", cwd=mirror)


def test_a_service_backed_up_while_written_to_is_restored_whole(
    tmp_path, origin, settings, embedded_database
):
    one, two = tmp_path / "one", tmp_path / "two"
    env_one, env_two = embedded_env(one), embedded_env(two)
    embedded_database(one)
    announced = manage(env_one, "bootstrap", "--port", "8000")
    key = re.search(r"clb_\w+", announced)
    password = re.search(r"Password\s+(\S+)", announced)
    assert key and password, announced
    key, password = key.group(), password.group(1)

    written: list[Written] = []
    stop = threading.Event()
    worker = Worker(env_one, tmp_path, beat=False).start()  # syncs the repository
    try:
        with asgi_server(env_one, tmp_path) as port, api(port, key) as client:
            project = created(client, "/v1/projects", {"name": "Drill"})["id"]
            repository = created(
                client,
                f"/v1/projects/{project}/repositories",
                {"name": "rocket", "clone_url": origin.url},
            )["id"]
            created(
                client,
                f"/v1/projects/{project}/webhooks",
                {
                    "url": f"http://127.0.0.1:{free_port()}/hook",
                    "events": ["label.deleted"],
                    "secret": HOOK_SECRET,
                },
            )
            for number in range(1, 6):
                issue = created(
                    client, f"/v1/projects/{project}/issues", {"title": f"Before {number}"}
                )
                created(client, f"/v1/issues/{issue['id']}/comments", {"body": "first"})
                created(client, f"/v1/issues/{issue['id']}/comments", {"body": "second"})
            wait_until(
                lambda: (
                    client.get(f"/v1/repositories/{repository}").json()["data"]["sync_status"]
                    == "synced"
                ),
                timeout=60,
                message=lambda: "the repository never synced:\n" + worker.output(),
            )
            login = client.post("/v1/auth/login", json={"email": ADMIN, "password": password})
            assert login.status_code == 200, login.text
            signed_by_one = login.json()["data"]["access_token"]
            branches = client.get(f"/v1/repositories/{repository}/branches").json()["data"]

            def write() -> None:
                with api(port, key) as writer:
                    for step in range(1, 10_000):
                        if stop.is_set():
                            return
                        title = f"During {step}"
                        issue = created(writer, f"/v1/projects/{project}/issues", {"title": title})
                        entry = Written(issue["number"], title, False, time.monotonic())
                        written.append(entry)
                        created(writer, f"/v1/issues/{issue['id']}/comments", {"body": title})
                        entry.commented, entry.done_at = True, time.monotonic()

            thread = threading.Thread(target=write)
            thread.start()
            try:
                wait_until(lambda: len(written) >= 3, timeout=60)
                began = time.monotonic()
                committed_before = [entry.number for entry in written if entry.done_at < began]
                manage(env_one, "backup", "--output", str(tmp_path / "backup"))
                ended = time.monotonic()
                started_during = len(written)
                wait_until(lambda: len(written) >= started_during + 2, timeout=60)
            finally:
                stop.set()
                thread.join(timeout=60)
            assert not thread.is_alive()
            assert any(began < entry.done_at < ended for entry in written), (
                "the writer was meant to commit while the backup ran"
            )
            original = issues_of(client, project)
            meanwhile = sum(1 for entry in written if began < entry.done_at < ended)
            print(f"backup in {ended - began:.1f} s; {meanwhile} writes committed meanwhile")
    finally:
        worker.stop()

    manage(env_two, "restore", str(tmp_path / "backup"))
    with asgi_server(env_two, tmp_path) as port, api(port, key) as client:
        me = client.get("/v1/users/me")
        assert me.status_code == 200, me.text
        assert me.json()["data"]["email"] == ADMIN
        with api(port, signed_by_one) as by_token:
            assert by_token.get("/v1/users/me").status_code == 200
        login = client.post("/v1/auth/login", json={"email": ADMIN, "password": password})
        assert login.status_code == 200, login.text

        restored = issues_of(client, project)
        for number in range(1, 6):
            assert restored[number]["title"] == original[number]["title"] == f"Before {number}"
            assert restored[number]["comment_count"] == 2
        during = sorted(number for number in restored if number > 5)
        # A prefix of what the writer wrote, in its order: one instant, nothing torn.
        assert during == [entry.number for entry in written[: len(during)]]
        assert set(committed_before) <= set(during)
        assert len(during) <= started_during
        for entry in written[: len(during)]:
            issue = restored[entry.number]
            assert issue["title"] == entry.title == original[entry.number]["title"]
            comments = client.get(f"/v1/issues/{issue['id']}/comments").json()["data"]
            assert issue["comment_count"] == len(comments) <= 1
            if entry.done_at < began:
                assert [comment["body"] for comment in comments] == [entry.title]

        shown = client.get(f"/v1/repositories/{repository}").json()["data"]
        assert shown["sync_status"] == "synced"
        assert client.get(f"/v1/repositories/{repository}/branches").json()["data"] == branches
    assert refs(two / "git" / f"{repository}.git") == refs(one / "git" / f"{repository}.git")

    # The webhook's secret is read with the restored keys, as the restored worker will read it.
    settings.SECRET_KEY = (two / "secret_key").read_text().strip()
    settings.WEBHOOK_ENCRYPTION_KEYS = [(two / "webhook_encryption_key").read_text().strip()]
    with closing(sqlite3.connect(two / "collab.sqlite3")) as db:
        (token,) = db.execute("SELECT secret_encrypted FROM notifications_webhook").fetchone()
    assert secret_decrypt(token) == HOOK_SECRET
