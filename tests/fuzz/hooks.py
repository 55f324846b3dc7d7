"""Schemathesis hooks for the run against a live server (tests/fuzz/test_live_schema.py).

``Idempotency-Key`` is unique per request: the schema says so in words, which no generator
reads, so a valid key drawn for one request could be drawn again for another (the server then
rightly answers 422). Each valid key is replaced by a new UUID at the call; an invalid one is
left alone.

A list's ``cursor`` is a token the server signed: one a generator draws in the schema's alphabet
is a forgery, which the server rightly refuses (400), and beside ``page`` it is refused too
(OpenAPI 3.0 cannot say that two parameters exclude each other). A valid-looking cursor is left
out of positive cases; negative ones (an empty cursor, a character outside the alphabet) go as
drawn, and must be refused.

Some creates take a value that names something outside the request, which no generator can
draw (tests/fuzz/steering.py): the stateful phase's positive cases take them, so that its
scenarios go on to what those creates link to (a repository's pull requests, a webhook's
deliveries, a project member). A repository's first sync is waited for, as a client does, and so
is a workspace export's build: whether the worker had finished it decided whether the next
export's create answered 202 or 409, and the steps drawn after it (the run followed 52 links or
37 with the same seed). Which deliveries a webhook lists hangs on the worker's fan-out too (it
makes them for the webhooks active when it runs): before a webhook is made, and before its
deliveries are listed, every event committed so far is waited for until it is fanned out, read
from the embedded default's database (the run's server; read only). A push notification is
signed with the repository's secret, which only the create's answer holds, as the git server
that sends it would. The other phases go as drawn, and so does a run whose environment names
none of them (one by hand).

``DELETE /v1/api-keys/{id}`` revokes the key, which stays readable, shown revoked (``revoked``,
``revoked_at``: docs/guide/authentication.md). A read after the delete that shows the key
revoked is no use after free; one that shows it still valid is.
"""

import os
import re
import sqlite3
import time
import uuid
from pathlib import Path
from urllib.parse import urljoin

import requests
import schemathesis

from tests.fuzz.steering import PUSH, REPOSITORIES, WEBHOOKS, Steering, push_signature

HEADER = "Idempotency-Key"
VALID = re.compile(r"[!-~]{1,255}")
STEERING = Steering.from_environ(os.environ)
PUSH_SECRETS: dict[str, str] = {}  # a repository's id -> its push secret, from its create
EXPORTS = "POST /v1/workspaces/{workspace_id}/exports"
SYNC_ENDED = {"synced", "failed"}
EXPORT_ENDED = {"completed", "failed"}
DELIVERIES = "GET /v1/webhooks/{id}/deliveries"
WAIT_SECONDS = 30
# The embedded default's database, where the server's worker marks the events it fanned out.
DATA_DIR = os.environ.get("COLLAB_DATA_DIR")


def _steer(case, label: str, body: dict) -> None:
    if label == PUSH:
        secret = PUSH_SECRETS.get(str(case.path_parameters.get("repository_id")))
        if secret:
            case.headers = {
                **(case.headers or {}),
                "X-Hub-Signature-256": push_signature(secret, body),
            }
    else:
        STEERING.body(label, body)


@schemathesis.hook
def before_call(context, case, kwargs):
    # Only positive cases: an edit makes schemathesis validate the case again, and a negative
    # one (a request sent without its Authorization, say) would come out positive.
    if case.meta is not None and case.meta.generation.mode.is_negative:
        return
    if isinstance(case.query, dict) and isinstance(case.query.get("cursor"), str):
        del case.query["cursor"]
    key = (case.headers or {}).get(HEADER)
    if isinstance(key, str) and VALID.fullmatch(key):
        case.headers[HEADER] = str(uuid.uuid4())
    if case.meta is None or case.meta.phase.name != "stateful":
        return
    label = f"{case.method.upper()} {case.path}"
    if label in (WEBHOOKS, DELIVERIES):
        _fanned_out()
    if isinstance(case.body, dict):
        _steer(case, label, case.body)


@schemathesis.hook
def after_call(context, case, response):
    label = f"{case.method.upper()} {case.path}"
    if response.status_code == 201 and label == REPOSITORIES:
        created = response.json()["data"]
        PUSH_SECRETS[str(created["id"])] = created["webhook_secret"]
        if created["clone_url"] == STEERING.origin:
            url = urljoin(response.request.url, f"/v1/repositories/{created['id']}")
            _ended(response.request, url, "sync_status", SYNC_ENDED)
    elif response.status_code == 202 and label == EXPORTS:
        export = response.json()["data"]
        url = f"/v1/workspaces/{export['workspace_id']}/exports/{export['id']}"
        _ended(response.request, url, "status", EXPORT_ENDED)


def _ended(call: requests.PreparedRequest, url: str, field: str, ended: set[str]) -> None:
    """Wait until the worker's part of what ``call`` asked for has ended (a repository's first
    sync, an export's build), as a client does before it goes on (docs/guide/git-integration.md,
    docs/operations/backups-and-moving-data.md): what the next steps are answered then does not
    hang on how soon the worker came to it."""
    headers = {"Authorization": call.headers["Authorization"]}
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        answer = requests.get(urljoin(call.url, url), headers=headers, timeout=5)
        if answer.status_code != 200 or answer.json()["data"][field] in ended:
            return
        time.sleep(0.05)


def _fanned_out() -> None:
    """Wait until the worker has fanned out every event committed so far (``dispatched_at``
    set), on the embedded default; elsewhere (a run by hand against another server), go on."""
    if not DATA_DIR or not (Path(DATA_DIR) / "collab.sqlite3").exists():
        return
    database = sqlite3.connect(f"file:{Path(DATA_DIR) / 'collab.sqlite3'}?mode=ro", uri=True)
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        query = "SELECT EXISTS (SELECT 1 FROM notifications_event WHERE dispatched_at IS NULL)"
        while time.monotonic() < deadline and database.execute(query).fetchone()[0]:
            time.sleep(0.05)
    finally:
        database.close()


@schemathesis.hook
def filter_failure(context, failure, case, response):
    if failure.code == "ST301" and f"{case.method.upper()} {case.path}" == "GET /v1/api-keys/{id}":
        return response.json()["data"]["revoked"] is not True
    return True
