"""The Python client (``client/``, ``collab_client``) driving a live server: the ASGI server
production runs, a real Celery worker and a real webhook receiver on 127.0.0.1.

Everything goes through the client's public interface, as an integrator's code would.
"""

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import threading
import time

import collab_client
import httpx
import pytest
from collab_client import AsyncCollab, Collab, webhooks
from collab_client.models import Event, Issue, Project
from django.contrib.auth.hashers import make_password

from collab.api.scopes import ALL_SCOPES
from issues.models import Issue as IssueRow
from tests.factories import PASSWORD as FACTORY_PASSWORD
from tests.factories import make_api_key, make_issue
from tests.integrations.oauth import REDIRECT_URI, consent_over_http, pkce_pair
from tests.liveserver import (
    asgi_server,
    celery_worker,
    process_env,
    require_services,
    running_servers,
)
from tests.notifications.receiver import start_receiver

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.live]

PASSWORD = "a long enough password 123"
SECRET = "client-webhook-secret"


@pytest.fixture
def server(world, tmp_path):
    require_services()
    env = process_env(
        EVENT_STREAM_HEARTBEAT_SECONDS="1",
        DATABASE_POOL="1",
        WEBHOOK_ALLOW_PRIVATE_NETWORKS="1",
        WEBHOOK_RETRY_BASE_SECONDS="0.2",
        WEBHOOK_SWEEP_SECONDS="1",
        # The folder of export archives the server and the test's worker share, as nodes do.
        EXPORT_DIR=str(tmp_path / "exports"),
    )
    with asgi_server(env, tmp_path) as port:
        yield {"url": f"http://127.0.0.1:{port}", "port": port, "env": env}


@pytest.fixture
def owner(world, server):
    with Collab(server["url"], api_key=make_api_key(world.owner, ALL_SCOPES)) as client:
        yield client


def test_projects_issues_labels_and_pages(world, owner):
    project = owner.projects.create(name="Apollo", description="To the moon", visibility="private")
    assert isinstance(project, Project) and project.name == "Apollo" and project.id
    issue = owner.issues.create(project.id, title="Fuel leak", labels=["bug", "urgent"])
    assert isinstance(issue, Issue) and issue.number == 1
    assert sorted(issue.labels) == ["bug", "urgent"]
    closed = owner.issues.update(issue.id, status="closed", priority="high")
    assert (closed.status, closed.priority) == ("closed", "high")
    assert IssueRow.objects.get(pk=issue.id).status == "closed"
    for n in range(7):
        owner.issues.create(project.id, title=f"Task {n}")

    walked = list(owner.issues.list(project.id, status="open", per_page=3))
    assert [i.title for i in walked] == [f"Task {n}" for n in reversed(range(7))]
    page = owner.issues.list(project.id).page(2, per_page=3)
    assert (page.meta.total, page.meta.page, page.meta.total_pages) == (8, 2, 3)
    assert len(page.data) == 3 and all(isinstance(i, Issue) for i in page.data)
    everywhere = {i.id for i in owner.issues.list(q="Fuel")}
    assert everywhere == {issue.id}
    labels = {label.name for label in owner.labels.list(project.id)}
    assert labels == {"bug", "urgent"}
    assert owner.metrics.get(project.id).issues.total == 8
    assert [i.id for i in owner.reports.issues(project.id, format="json", status="closed")] == [
        issue.id
    ]
    assert owner.reports.issues(project.id).startswith("id,project_id,number,title")
    history = [h.field for h in owner.issues.history(issue.id)]
    assert history[0] == "created" and "status" in history


def test_iteration_is_stable_while_issues_are_created(world, owner):
    """The pager follows cursors: an issue created on top while the walk is between pages does
    not push the page boundary down (pages by number would give one issue twice)."""
    for n in range(5):
        owner.issues.create(world.project.pk, title=f"Steady {n}")
    expected = [issue.id for issue in owner.issues.list(world.project.pk)]
    walked = []
    for issue in owner.issues.list(world.project.pk, per_page=2):
        walked.append(issue.id)
        if len(walked) == 1:
            owner.issues.create(world.project.pk, title="Created meanwhile")
    assert walked == expected
    page = owner.issues.list(world.project.pk).page(1, per_page=2)
    following = owner.issues.list(world.project.pk).after(page.next_cursor, per_page=2)
    assert [issue.id for issue in following.data] == expected[1:3]
    assert following.meta.page is None and following.meta.total == len(expected) + 1


def test_bulk_writes_answer_each_item(world, owner):
    results = owner.issues.bulk_create(
        world.project.pk,
        [{"title": "One", "labels": ["bulk"]}, {"title": ""}, {"title": "Three"}],
    )
    assert [r.status for r in results] == [201, 422, 201]
    assert isinstance(results[0].data, Issue) and results[0].data.labels == ["bulk"]
    assert results[1].data is None and "title" in results[1].error.details
    changed = owner.issues.bulk_update(
        [{"id": results[0].data.id, "status": "closed"}, {"id": 987654321, "status": "closed"}]
    )
    assert [(r.status, r.data and r.data.status) for r in changed] == [(200, "closed"), (404, None)]
    with pytest.raises(collab_client.ValidationError) as refused:
        owner.issues.bulk_create(world.project.pk, [{"title": "Fine"}, {"title": ""}], atomic=True)
    assert refused.value.details["index"] == 1
    assert IssueRow.objects.filter(project=world.project).count() == 2


def test_each_error_is_its_own_exception(world, owner, server):
    with pytest.raises(collab_client.NotFound) as missing:
        owner.issues.get(987654321)
    assert missing.value.status == 404 and missing.value.code == "NOT_FOUND"
    assert missing.value.request_id and len(missing.value.request_id) >= 16

    with pytest.raises(collab_client.ValidationError) as invalid:
        owner.issues.create(world.project.pk, title="", priority="urgent-ish")
    assert set(invalid.value.details) == {"title", "priority"}

    viewer = Collab(server["url"], api_key=make_api_key(world.viewer, ALL_SCOPES))
    with pytest.raises(collab_client.PermissionDenied):
        viewer.issues.create(world.project.pk, title="Not mine to write")

    reader = Collab(server["url"], api_key=make_api_key(world.owner, ["issues:read"]))
    with pytest.raises(collab_client.PermissionDenied) as scope:
        reader.issues.create(world.project.pk, title="Read only")
    assert scope.value.details["required_scope"] == "issues:write"

    owner.projects.archive(world.project.pk)
    with pytest.raises(collab_client.Conflict):
        owner.issues.create(world.project.pk, title="Too late")

    with pytest.raises(collab_client.Unauthorized):
        Collab(server["url"], api_key="clb_not_a_real_key").projects.list().all()
    assert issubclass(collab_client.RateLimited, collab_client.CollabError)


def test_conditional_requests_save_budget_and_stop_lost_updates(world, server):
    key = make_api_key(world.owner, ALL_SCOPES)
    issue = make_issue(world.project, world.owner, title="Shared")
    alice = Collab(server["url"], api_key=key, cache=True)
    bob = Collab(server["url"], api_key=key)
    first = alice.issues.get(issue.pk)
    assert first.etag
    used = alice.last_rate_limit.used
    for _ in range(3):
        again = alice.issues.get(issue.pk)  # 304s, answered from the cache
        assert alice.last_response.status_code == 304
        assert again == first and again.etag == first.etag
    assert alice.last_rate_limit.used == used, "a 304 costs nothing"

    bob.issues.update(issue.pk, title="Bob's", if_match=bob.issues.get(issue.pk).etag)
    with pytest.raises(collab_client.PreconditionFailed) as stale:
        alice.issues.update(issue.pk, title="Alice's", if_match=first.etag)
    assert stale.value.current_etag and stale.value.current_etag != first.etag
    assert IssueRow.objects.get(pk=issue.pk).title == "Bob's"
    fresh = alice.issues.get(issue.pk)
    assert alice.last_response.status_code == 200 and fresh.title == "Bob's"
    assert alice.issues.update(issue.pk, title="Alice's", if_match=fresh.etag).title == "Alice's"


def test_login_refresh_logout_and_a_key_made_by_the_client(world, server):
    world.owner.password = make_password(PASSWORD)
    world.owner.save(update_fields=["password"])
    session = Collab.login(server["url"], email=world.owner.email, password=PASSWORD)
    assert session.users.me().email == world.owner.email
    created = session.api_keys.create(name="ci", scopes=["issues:read"], expires_in="1y")
    assert created.key.startswith("clb_") and created.scopes == ["issues:read"]
    assert [k.name for k in session.api_keys.list()] == ["ci"]

    with pytest.raises(collab_client.PermissionDenied):
        Collab(server["url"], api_key=created.key).projects.list().all()
    issue = make_issue(world.project, world.owner, title="Visible to the key")
    assert Collab(server["url"], api_key=created.key).issues.get(issue.pk).title == issue.title

    # An access token that ran out is refreshed by itself (the pair rotates).
    old_refresh = session.session.refresh_token
    session.session.expires_at = 0
    assert session.users.me().id == world.owner.pk
    assert session.session.refresh_token != old_refresh
    last_refresh = session.session.refresh_token
    session.logout()
    assert session.session is None
    with pytest.raises(collab_client.Unauthorized):
        session.auth.refresh(refresh_token=last_refresh)


def test_an_oauth_app_acts_through_the_client_and_renews_its_tokens(world, server):
    """An app registered with the client, authorised by a person, exchanging its code with
    ``Collab.oauth`` and renewing its tokens by itself, until the person revokes it."""
    world.owner.password = make_password(PASSWORD)
    world.owner.save(update_fields=["password"])
    session = Collab.login(server["url"], email=world.owner.email, password=PASSWORD)
    app = session.oauth_apps.create(
        world.acme.pk,
        name="Sync",
        client_type="confidential",
        redirect_uris=[REDIRECT_URI],
        scopes=["issues:write", "projects:read"],
    )
    assert app.client_secret and [a.id for a in session.oauth_apps.list(world.acme.pk)] == [app.id]
    verifier, challenge = pkce_pair()
    with httpx.Client(base_url=server["url"]) as browser:
        code = consent_over_http(
            browser,
            email=world.developer.email,
            password=FACTORY_PASSWORD,
            app={
                "client_id": app.client_id,
                "redirect_uris": app.redirect_uris,
                "scopes": app.scopes,
            },
            challenge=challenge,
            projects=[world.project.pk],
        )
    kept: list[collab_client.Session] = []
    as_app = Collab.oauth(
        server["url"],
        client_id=app.client_id,
        client_secret=app.client_secret,
        code=code,
        code_verifier=verifier,
        redirect_uri=REDIRECT_URI,
        on_refresh=kept.append,
    )
    made = as_app.issues.create(world.project.pk, title="From the app")
    assert made.reporter_id == world.developer.pk
    # Its access token runs out: it renews itself, and the app is told the new pair.
    spent = as_app.session.refresh_token
    as_app.session.expires_at = 0
    assert [p.id for p in as_app.projects.list()] == [world.project.pk]
    assert len(kept) == 1 and kept[0].refresh_token not in (spent, None)
    # An OAuth error (RFC 6749) is raised as the client raises any: its code kept.
    with pytest.raises(collab_client.BadRequest) as refused:
        Collab.oauth(
            server["url"],
            client_id=app.client_id,
            client_secret=app.client_secret,
            code="not-a-code",
            code_verifier=verifier,
            redirect_uri=REDIRECT_URI,
        )
    assert refused.value.code == "invalid_grant"
    mine = Collab.login(server["url"], email=world.developer.email, password=FACTORY_PASSWORD)
    [authorization] = mine.authorizations.list()
    mine.authorizations.revoke(authorization.id)
    with pytest.raises(collab_client.Unauthorized):
        as_app.projects.list().all()


def test_the_stream_follows_across_a_reconnect(world, server, tmp_path):
    key = make_api_key(world.owner, ALL_SCOPES)
    client = Collab(server["url"], api_key=key)
    received: list[Event] = []
    failed: list[BaseException] = []

    def read():
        try:
            for event in client.events.stream(project_id=world.project.pk, types=["issue.*"]):
                received.append(event)
                if len(received) == 3:
                    return
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            failed.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(1.0)
    first = make_issue(world.project, world.owner, title="Before the restart")
    wait_until(lambda: len(received) == 1)

    # The server goes away mid-stream, an issue is made meanwhile, and it comes back.
    running_servers[server["port"]].terminate()
    running_servers[server["port"]].wait(15)
    missed = make_issue(world.project, world.owner, title="While it was down")
    with asgi_server(server["env"], tmp_path, port=server["port"]):
        later = make_issue(world.project, world.owner, title="After it came back")
        reader.join(30)
    assert not failed, failed
    assert [e.data["issue"]["id"] for e in received] == [first.pk, missed.pk, later.pk]
    assert len({e.id for e in received}) == 3
    assert all(e.type == "issue.created" for e in received)


def test_a_signed_delivery_verifies(world, owner, server, tmp_path):
    receiver, http_server = start_receiver()
    try:
        with celery_worker(server["env"], tmp_path, beat=False) as worker:
            hook = owner.webhooks.create(
                world.project.pk, url=receiver.url, events=["issue.created"], secret=SECRET
            )
            issue = owner.issues.create(world.project.pk, title="Signed")
            [request] = receiver.wait_for(1, timeout=30) or [None]
            assert request is not None, worker.output()
    finally:
        http_server.shutdown()
        http_server.server_close()
    event = webhooks.verify(request.body, request.headers, secret=["rotated-out", SECRET])
    assert event.type == "issue.created" and event.data["issue"]["id"] == issue.id
    with pytest.raises(collab_client.WebhookVerificationError):
        webhooks.verify(request.body + b" ", request.headers, secret=SECRET)
    with pytest.raises(collab_client.WebhookVerificationError):
        webhooks.verify(request.body, request.headers, secret="wrong")
    deliveries = owner.deliveries.list(hook.id).all()
    assert [d.event_type for d in deliveries] == ["issue.created"]


def test_the_async_client(world, server):
    key = make_api_key(world.owner, ALL_SCOPES)

    async def scenario():
        async with AsyncCollab(server["url"], api_key=key) as client:
            project = await client.projects.create(name="Async", visibility="internal")
            made = [await client.issues.create(project.id, title=f"A{n}") for n in range(5)]
            walked = [issue.id async for issue in client.issues.list(project.id, per_page=2)]
            page = await client.issues.list(project.id).page(3, per_page=2)
            try:
                await client.issues.get(10**12)
            except collab_client.NotFound as missing:
                status = missing.status
            events = []
            async for event in client.events.stream(project_id=project.id, last_event_id=0):
                events.append(event)
                if len(events) == 6:
                    break
            return made, walked, page, status, events

    made, walked, page, status, events = asyncio.run(scenario())
    assert walked == [issue.id for issue in reversed(made)]
    assert page.meta.total == 5 and len(page.data) == 1
    assert status == 404
    assert [e.type for e in events] == ["project.created"] + ["issue.created"] * 5


def test_the_command_line(world, server):
    key = make_api_key(world.owner, ALL_SCOPES)
    env = {**os.environ, "COLLAB_URL": server["url"], "COLLAB_API_KEY": key}
    cli = [sys.executable, "-m", "collab_client.cli"]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(  # noqa: S603 - our own command
            [*cli, *args], env=env, capture_output=True, text=True, timeout=60
        )

    created = run(
        "issues",
        "create",
        "--project",
        str(world.project.pk),
        "--title",
        "From a shell",
        "--label",
        "ops",
        "--json",
    )
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["labels"] == ["ops"]
    listed = run("projects", "list", "--json")
    assert [p["name"] for p in json.loads(listed.stdout)] == ["Rocket"]
    table = run("issues", "list", "--project", str(world.project.pk))
    assert table.returncode == 0
    assert table.stdout.splitlines()[0].split()[:4] == ["ID", "NUMBER", "TITLE", "STATUS"]
    assert "From a shell" in table.stdout
    missing = run("issues", "close", "999999999")
    assert missing.returncode == 1 and "NOT_FOUND" in missing.stderr
    no_key = subprocess.run(  # noqa: S603
        [*cli, "projects", "list"],
        env={**env, "COLLAB_API_KEY": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert no_key.returncode != 0 and "COLLAB_API_KEY" in no_key.stderr
    # A key limited to one project, made over a sign-in.
    made_key = run(
        "keys",
        "create",
        "--email",
        world.owner.email,
        "--password",
        FACTORY_PASSWORD,
        "--name",
        "ci",
        "--scope",
        "issues:read",
        "--project",
        str(world.project.pk),
        "--json",
    )
    assert made_key.returncode == 0, made_key.stderr
    assert json.loads(made_key.stdout)["projects"] == [world.project.pk]
    # A service account, a key of it, its list, and its end.
    workspace, project = str(world.acme.pk), str(world.project.pk)
    robot = run(
        *("service-accounts", "create", "--workspace", workspace, "--name", "CI bot"),
        *("--project", project),  # its team: the project is private
    )
    assert robot.returncode == 0, robot.stderr
    assert robot.stdout.splitlines()[0].split()[:3] == ["ID", "NAME", "HANDLE"]
    robot = run(*("service-accounts", "list", "--workspace", workspace, "--json"))
    [account] = json.loads(robot.stdout)
    robot_key = run(
        *("keys", "create", "--service-account", str(account["id"]), "--json"),
        *("--email", world.owner.email, "--password", FACTORY_PASSWORD),
        *("--name", "nightly", "--scope", "issues:write", "--project", project),
    )
    assert robot_key.returncode == 0, robot_key.stderr
    key_of_robot = json.loads(robot_key.stdout)["key"]
    by_robot = subprocess.run(  # noqa: S603
        [*cli, "issues", "create", "--project", project, "--title", "Nightly", "--json"],
        env={**env, "COLLAB_API_KEY": key_of_robot},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(by_robot.stdout)["reporter_id"] == account["id"]
    gone = run("service-accounts", "delete", str(account["id"]))
    assert gone.returncode == 0 and "no longer work" in gone.stdout
    # An OAuth app: registered over a sign-in (its secret shown once), listed with the key.
    sign_in = ("--email", world.owner.email, "--password", FACTORY_PASSWORD)
    app = run(
        *("apps", "create", "--workspace", workspace, "--name", "Sync", *sign_in),
        *("--redirect-uri", "https://sync.example.test/cb", "--scope", "issues:write"),
    )
    assert app.returncode == 0, app.stderr
    header = app.stdout.splitlines()[0].split()
    assert header[:3] == ["ID", "NAME", "CLIENT_ID"] and header[-1] == "CLIENT_SECRET"
    [listed_app] = json.loads(run("apps", "list", "--workspace", workspace, "--json").stdout)
    assert listed_app["name"] == "Sync" and "client_secret" not in listed_app
    none_yet = run("authorizations", "list", *sign_in, "--json")
    assert none_yet.returncode == 0 and json.loads(none_yet.stdout) == []
    removed = run("apps", "delete", str(listed_app["id"]))
    assert removed.returncode == 0 and "no longer work" in removed.stdout
    # The audit log of all this: the robot's key made by the owner, the app's end.
    audit = run("audit", "list", "--workspace", workspace, "--json")
    kinds = [entry["type"] for entry in json.loads(audit.stdout)]
    assert kinds[0] == "app.deleted" and "api_key.created" in kinds, kinds
    made = run("audit", "list", "--workspace", workspace, "--type", "service_account.created")
    assert made.stdout.splitlines()[0].split() == ["ID", "CREATED_AT", "TYPE", "ACTOR", "ADDRESS"]


def test_an_export_built_by_the_worker_downloads_through_client_and_cli(world, server, tmp_path):
    key = make_api_key(world.owner, ALL_SCOPES)
    make_issue(world.project, world.owner, title="Taken out")
    workspace = world.acme.pk
    with Collab(server["url"], api_key=key) as client:
        # Asked before any worker runs, so that it is still pending when its download is
        # asked for (a worker already running built it in milliseconds: 200, not 409).
        asked = client.exports.create(workspace)
        assert asked.status == "pending"
        with pytest.raises(collab_client.Conflict):
            client.exports.download(workspace, asked.id, to=tmp_path / "early.tar.gz")
        assert not (tmp_path / "early.tar.gz").exists(), "an error writes nothing"
        with celery_worker(server["env"], tmp_path, beat=False) as worker:
            wait_until(lambda: client.exports.get(workspace, asked.id).status == "completed", 60)
            done = client.exports.get(workspace, asked.id)
            assert [export.id for export in client.exports.list(workspace)] == [asked.id]
            target = tmp_path / "acme.tar.gz"
            written = client.exports.download(workspace, asked.id, to=target)
            assert written == done.size == target.stat().st_size, worker.output()
            assert hashlib.sha256(target.read_bytes()).hexdigest() == done.sha256
            with tarfile.open(target) as archive:
                manifest = json.load(archive.extractfile("manifest.json"))
                issues = archive.extractfile("issues.jsonl").read().decode()
            assert manifest["workspace"]["id"] == workspace
            assert "Taken out" in issues
            with pytest.raises(collab_client.NotFound):
                client.exports.get(world.globex.pk, asked.id)

            # The same from a shell: one command asks, waits and downloads.
            env = {**os.environ, "COLLAB_URL": server["url"], "COLLAB_API_KEY": key}
            output = tmp_path / "from-shell.tar.gz"
            shell = subprocess.run(  # noqa: S603 - our own command
                [sys.executable, "-m", "collab_client.cli", "export", "create"]
                + ["--workspace", str(workspace), "--output", str(output), "--json"],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert shell.returncode == 0, shell.stderr + worker.output()
            shown = json.loads(shell.stdout)
            assert shown["status"] == "completed" and shown["size"] == output.stat().st_size
            with tarfile.open(output) as archive:
                assert archive.getnames()[0] == "manifest.json"
            listed = subprocess.run(  # noqa: S603
                [sys.executable, "-m", "collab_client.cli", "export", "list"]
                + ["--workspace", str(workspace)],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert listed.returncode == 0, listed.stderr
            assert listed.stdout.splitlines()[0].split()[:2] == ["ID", "STATUS"]
            assert len(listed.stdout.splitlines()) == 3


def wait_until(predicate, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
