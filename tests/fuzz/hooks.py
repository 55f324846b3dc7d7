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
deliveries, a project member). A repository's first sync is waited for, as a client does, and a
push notification is signed with the repository's secret, which only the create's answer holds,
as the git server that sends it would. The other phases go as drawn, and so does a run whose
environment names none of them (one by hand).

``DELETE /v1/api-keys/{id}`` revokes the key, which stays readable, shown revoked (``revoked``,
``revoked_at``: docs/guide/authentication.md). A read after the delete that shows the key
revoked is no use after free; one that shows it still valid is.
"""

import os
import re
import time
import uuid
from urllib.parse import urljoin

import requests
import schemathesis

from tests.fuzz.steering import PUSH, REPOSITORIES, Steering, push_signature

HEADER = "Idempotency-Key"
VALID = re.compile(r"[!-~]{1,255}")
STEERING = Steering.from_environ(os.environ)
PUSH_SECRETS: dict[str, str] = {}  # a repository's id -> its push secret, from its create
SYNC_ENDED = {"synced", "failed"}
SYNC_SECONDS = 30


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
    if case.meta is not None and case.meta.phase.name == "stateful" and isinstance(case.body, dict):
        _steer(case, f"{case.method.upper()} {case.path}", case.body)


@schemathesis.hook
def after_call(context, case, response):
    if response.status_code == 201 and f"{case.method.upper()} {case.path}" == REPOSITORIES:
        created = response.json()["data"]
        PUSH_SECRETS[str(created["id"])] = created["webhook_secret"]
        if created["clone_url"] == STEERING.origin:
            _synced(response.request, created["id"])


def _synced(create: requests.PreparedRequest, repository_id: int) -> None:
    """Wait for a repository's first sync (the worker's), as a client does before it opens a
    pull request (docs/guide/git-integration.md): what the next steps are answered then does
    not hang on how soon the worker came to it."""
    url = urljoin(create.url, f"/v1/repositories/{repository_id}")
    headers = {"Authorization": create.headers["Authorization"]}
    deadline = time.monotonic() + SYNC_SECONDS
    while time.monotonic() < deadline:
        answer = requests.get(url, headers=headers, timeout=5)
        if answer.status_code != 200 or answer.json()["data"]["sync_status"] in SYNC_ENDED:
            return
        time.sleep(0.05)


@schemathesis.hook
def filter_failure(context, failure, case, response):
    if failure.code == "ST301" and f"{case.method.upper()} {case.path}" == "GET /v1/api-keys/{id}":
        return response.json()["data"]["revoked"] is not True
    return True
