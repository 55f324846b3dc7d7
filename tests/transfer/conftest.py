"""A GitHub REST API on 127.0.0.1 answering recorded pages (``tests/transfer/github/``), with
GitHub's headers: ``Link`` between pages, ``x-ratelimit-*``, ``etag``. A test may change the
pages it serves (``github.pages``), make a path answer a spent rate limit once
(``github.limit_once``), and read the requests it received (``github.requests``).

``full`` is a workspace that holds every record type a workspace archive carries, made through
the services and the API as people would make it, with a real repository (tests/gitorigin.py)
synced into the service's mirrors (``git_storage``)."""

import copy
import hashlib
import json
import math
import threading
import time
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from accounts.models import Role
from accounts.services import invitation_create
from comments.services import comment_create, comment_update
from gitintegration.models import PullRequest, Repository
from gitintegration.services import review_create
from integrations.services import service_account_create
from issues.models import Issue
from issues.services import issue_delete, issue_update, label_create
from tests.conftest import assert_ok
from tests.factories import WebhookFactory, make_issue
from transfer.models import GithubLink

RECORDED = Path(__file__).parent / "github"
OWNER_REPO = "acme-labs/rocket"
REPOSITORY_ID = 70917345
TOKEN = "ghp_recordedTestToken0000000000000000000"


def _load(name: str) -> Any:
    return json.loads((RECORDED / name).read_text())


# path -> the recorded pages of that list (page 1 at the repository's path, the next ones at
# /repositories/<id>/..., as GitHub's Link headers give them).
LISTS = {
    "labels": ["labels.json"],
    "issues": ["issues-1.json", "issues-2.json"],
    "issues/comments": ["comments-1.json", "comments-2.json"],
}


@dataclass
class Request:
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    at: float


@dataclass
class GithubServer:
    url: str = ""
    pages: dict[str, list[Any]] = field(default_factory=dict)
    repository: Any = None
    users: dict[str, Any] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    # path -> (status, seconds to the reset) answered once each, before the recorded page
    limited: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    remaining: int = 4999
    link_base: str | None = None  # where the Link headers point (the server itself by default)
    resets: list[int] = field(default_factory=list)  # the resets answered, epoch seconds

    def limit_once(self, path: str, *, status: int = 403, reset_in: int = 1) -> None:
        """The next request to ``path`` answers a spent rate limit resetting ``reset_in``
        seconds after the next whole second (a reset is an epoch second, as GitHub gives it),
        or, as a 429, a ``retry-after`` of ``reset_in`` seconds."""
        self.limited.setdefault(path, []).append((status, reset_in))

    def hits(self, path: str) -> list[Request]:
        return [request for request in self.requests if request.path == path]


def _handler(server: GithubServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            reset = int(time.time()) + 3600
            base = {
                "Content-Type": "application/json; charset=utf-8",
                "Content-Length": str(len(data)),
                "Date": formatdate(usegmt=True),
                "Cache-Control": "private, max-age=60, s-maxage=60",
                "Vary": "Accept, Authorization, Cookie, X-GitHub-OTP,Accept-Encoding, Origin",
                "ETag": f'W/"{hashlib.sha256(data).hexdigest()}"',
                "X-GitHub-Media-Type": "github.v3; format=json",
                "x-github-api-version-selected": "2022-11-28",
                "X-RateLimit-Limit": "5000",
                "X-RateLimit-Remaining": str(server.remaining),
                "X-RateLimit-Reset": str(reset),
                "X-RateLimit-Used": str(5000 - server.remaining),
                "X-RateLimit-Resource": "core",
                "X-GitHub-Request-Id": f"C0DE:1F2E:{len(server.requests):06X}:0:0",
            }
            for name, value in (headers or {}).items():
                base = {key: v for key, v in base.items() if key.lower() != name.lower()}
                base[name] = value
            for name, value in base.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _link(self, path: str, query: dict[str, str], page: int, last: int) -> str:
            def at(number: int) -> str:
                params = {k: v for k, v in query.items() if k != "page"}
                base = server.link_base or server.url
                return f"<{base}{path}?{urlencode({**params, 'page': number})}>"

            rels = []
            if page > 1:
                rels += [f'{at(page - 1)}; rel="prev"']
            if page < last:
                rels += [f'{at(page + 1)}; rel="next"', f'{at(last)}; rel="last"']
            if page > 1:
                rels += [f'{at(1)}; rel="first"']
            return ", ".join(rels)

        def do_GET(self):
            split = urlsplit(self.path)
            query = dict(parse_qsl(split.query))
            server.requests.append(
                Request(
                    split.path, query, {k.lower(): v for k, v in self.headers.items()}, time.time()
                )
            )
            if server.limited.get(split.path):
                status, reset_in = server.limited[split.path].pop(0)
                reset = math.ceil(time.time()) + reset_in
                server.resets.append(reset)
                if status == 429:
                    headers = {"Retry-After": str(reset_in)}
                else:
                    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)}
                body = _load("rate-limited.json")
                body["status"] = str(status)
                self._send(status, body, headers)
                return
            server.remaining -= 1
            repo_path = f"/repos/{OWNER_REPO}"
            if split.path == repo_path and server.repository is not None:
                self._send(200, server.repository)
                return
            if split.path.startswith("/users/") and split.path[7:] in server.users:
                self._send(200, server.users[split.path[7:]])
                return
            for name, pages in server.pages.items():
                # Page 1 where the client starts; the others where the Link sends it.
                first = f"{repo_path}/{name}"
                later = f"/repositories/{REPOSITORY_ID}/{name}"
                page = int(query.get("page", "1"))
                if split.path in (first, later) and 1 <= page <= max(len(pages), 1):
                    link = self._link(later, query, page, len(pages))
                    body = pages[page - 1] if pages else []
                    self._send(200, body, {"Link": link} if link else {})
                    return
            self._send(404, _load("not-found.json"))

    return Handler


@pytest.fixture
def github():
    """The recorded repository ``acme-labs/rocket`` served on 127.0.0.1 (a free port)."""
    server = GithubServer(
        repository=_load("repo.json"),
        pages={name: [_load(file) for file in files] for name, files in LISTS.items()},
        users={path.stem: json.loads(path.read_text()) for path in (RECORDED / "users").iterdir()},
    )
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def recorded():
    """A recorded page by file name, a copy to change."""
    return lambda name: copy.deepcopy(_load(name))


# A workspace with every record type -----------------------------------------------------------


@pytest.fixture
def git_storage(tmp_path, settings):
    settings.GIT_STORAGE_DIR = tmp_path / "mirrors"
    return settings.GIT_STORAGE_DIR


@dataclass
class Full:
    workspace: object
    project: object
    repository: Repository
    merged: PullRequest
    open: PullRequest


@pytest.fixture
def full(world, api, origin, git_storage, django_capture_on_commit_callbacks) -> Full:
    """The world's Acme workspace with issues (one deleted, one closed by a merged pull
    request's closing keyword), labels, comments with mentions and an edit, a repository with
    a merged and an open pull request and a review, a project's and the workspace's webhooks, a
    pending invitation, a service account on the project's team, and links to GitHub
    records."""
    capture = django_capture_on_commit_callbacks
    project = world.project
    label_create(project=project, actor=world.owner, name="bug", color="#ff0000")
    label_create(project=project, actor=world.owner, name="ux")
    crash = make_issue(project, world.owner, title="Crash on start", labels=["bug"])
    assigned = make_issue(project, world.developer, title="Slow list", description="See #1.")
    gone = make_issue(project, world.owner, title="A mistake")
    with capture(execute=True):
        issue_update(
            issue=Issue.objects.get(pk=assigned.pk),
            actor=world.owner,
            assignee_id=world.developer.pk,
            labels=["ux", "bug"],
            priority="high",
        )
        issue_delete(issue=Issue.objects.get(pk=gone.pk), actor=world.owner)
        comment = comment_create(
            parent=Issue.objects.get(pk=crash.pk),
            actor=world.developer,
            body="I see it too, @owner. Steps in #2.",
        )
        comment_update(
            comment=comment_model(comment["id"]),
            actor=world.developer,
            body="I see it too, @owner. Steps in #2; **only** on Linux.",
        )
    with capture(execute=True):
        response = api.owner.post(
            f"/v1/projects/{project.pk}/repositories",
            {"name": "rocket", "clone_url": origin.url},
            format="json",
        )
    repository = Repository.objects.get(pk=assert_ok(response, 201)["data"]["id"])
    pulls = f"/v1/repositories/{repository.pk}/pulls"
    merged = assert_ok(
        api.developer.post(
            pulls,
            {"title": "The feature", "head": "feature", "base": "main", "description": "Fixes #1"},
            format="json",
        ),
        201,
    )["data"]
    with capture(execute=True):
        assert_ok(
            api.owner.post(f"/v1/pulls/{merged['id']}/merge", {"method": "merge"}, format="json")
        )
    opened = assert_ok(
        api.developer.post(
            pulls, {"title": "The docs", "head": "docs", "base": "main"}, format="json"
        ),
        201,
    )["data"]
    open_pull = PullRequest.objects.get(pk=opened["id"])
    review_create(pull=open_pull, actor=world.owner, state="approved", body="Good.")
    with capture(execute=True):
        comment_create(parent=open_pull, actor=world.owner, body="Thanks @dev!")
    WebhookFactory(project=project, created_by=world.owner, events=["issue.created"])
    WebhookFactory(workspace=world.acme, project=None, created_by=world.owner, events=["export.*"])
    # As the GitHub import leaves them (transfer.github_import).
    GithubLink.objects.create(
        project=project, kind=GithubLink.Kind.ISSUE, github_id=901, issue_id=crash.pk
    )
    GithubLink.objects.create(
        project=project,
        kind=GithubLink.Kind.LABEL,
        github_id=902,
        label=project.labels.get(name="bug"),
    )
    with capture(execute=True):
        invitation_create(
            workspace=world.acme,
            inviter=world.owner,
            email="newcomer@example.test",
            role=Role.DEVELOPER,
            projects=[project],
        )
        service_account_create(
            workspace=world.acme, actor=world.owner, name="Release bot", projects=[project.pk]
        )
    return Full(
        world.acme, project, repository, PullRequest.objects.get(pk=merged["id"]), open_pull
    )


def comment_model(pk):
    from comments.models import Comment

    return Comment.objects.get(pk=pk)


@pytest.fixture(autouse=True)
def _exports_here(exports_storage):
    """Every test of exports keeps its archives in a folder of its own."""
    return exports_storage
