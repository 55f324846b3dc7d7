"""No secret reaches a log, at any level: every route that takes one is called with every
logger at DEBUG (SQL statements and their parameters too, as with DEBUG on), and what the
service's JSON and console handlers wrote, and what pytest captured, is searched for each
secret and its obvious encodings. Also the redaction itself (collab/logs.py), defence in
depth for what a future line lets slip."""

import base64
import io
import json
import logging
import urllib.parse

import pytest
from celery.app.task import Task
from django.core import mail
from django.db import connection
from rest_framework.test import APIClient

from collab.logs import ContextLogFilter, formatter, redact_text
from notifications import signing
from tests.conftest import assert_ok, bearer, jwt_client
from tests.factories import PASSWORD
from tests.gitintegration.conftest import git_storage, synced  # noqa: F401 - fixtures
from tests.gitintegration.test_repositories import sign
from tests.notifications.test_delivery import create_issue

pytestmark = pytest.mark.django_db(transaction=True)


def encodings(secret: str) -> set[str]:
    raw = secret.encode()
    return {
        secret,
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret),
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        raw.hex(),
        json.dumps(secret)[1:-1],
    }


class Captured:
    def __init__(self, caplog):
        self.caplog = caplog
        self.streams = {"json": io.StringIO(), "console": io.StringIO()}

    def text(self) -> str:
        """What the service's handlers wrote, and every record's message as logged (before
        any redaction) but the SQL ones: with DEBUG on, Django's record of a statement holds
        its parameters as they are (a refresh token is stored as it is, by simplejwt), and
        only the handlers' masking keeps those out (collab.logs.mask_sql)."""
        records = "\n".join(
            record.getMessage()
            for record in self.caplog.records
            if not record.name.startswith("django.db.backends")
        )
        return "\n".join(s.getvalue() for s in self.streams.values()) + records

    def json_lines(self) -> list[dict]:
        return [json.loads(line) for line in self.streams["json"].getvalue().splitlines()]

    def assert_clean(self, *secrets: str) -> None:
        text = self.text()
        assert '"logger": "django.db.backends"' in text, "no SQL logged: the sweep proves little"
        for secret in secrets:
            assert secret
            for form in encodings(secret):
                at = text.find(form)
                assert at < 0, f"a secret reached the logs, after: {text[max(0, at - 160) : at]}"


@pytest.fixture
def captured(caplog):
    """Every logger at DEBUG into the service's JSON and console handlers, SQL included."""
    capture = Captured(caplog)
    handlers = []
    for log_format, stream in capture.streams.items():
        handler = logging.StreamHandler(stream)
        handler.setFormatter(formatter(log_format))
        handler.addFilter(ContextLogFilter())
        handlers.append(handler)
    root = logging.getLogger()
    root_level = root.level
    # Before the levels change: caplog puts back at its end the root's level it finds now (set
    # after them, it found DEBUG, and left every later test of the worker logging at DEBUG).
    caplog.set_level(logging.DEBUG)
    levels = {name: logging.getLogger(name).level for name in logging.root.manager.loggerDict}
    for name in levels:
        logging.getLogger(name).setLevel(logging.DEBUG)
    root.setLevel(logging.DEBUG)
    for handler in handlers:
        root.addHandler(handler)
    # Django logs SQL (django.db.backends) only with DEBUG on, which production refuses;
    # forced here so a parameter holding a secret would show.
    forced = connection.force_debug_cursor
    connection.force_debug_cursor = True
    yield capture
    connection.force_debug_cursor = forced
    for handler in handlers:
        root.removeHandler(handler)
    root.setLevel(root_level)
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def login(email: str, password: str):
    return APIClient().post("/v1/auth/login", {"email": email, "password": password}, format="json")


def test_passwords_and_tokens_of_login_refresh_and_logout(world, captured):
    wrong = "not-the-Password-99"
    assert login(world.owner.email, wrong).status_code == 401
    tokens = assert_ok(login(world.owner.email, PASSWORD))["data"]
    access, refresh = tokens["access_token"], tokens["refresh_token"]
    assert bearer(access).get("/v1/projects").status_code == 200
    refreshed = assert_ok(
        APIClient().post("/v1/auth/refresh", {"refresh_token": refresh}, format="json")
    )["data"]
    assert (
        bearer(refreshed["access_token"])
        .post("/v1/auth/logout", {"refresh_token": refreshed["refresh_token"]}, format="json")
        .status_code
        == 200
    )
    # A refresh token used twice, and a tampered access token.
    APIClient().post("/v1/auth/refresh", {"refresh_token": refresh}, format="json")
    assert bearer(access[:-4] + "AAAA").get("/v1/projects").status_code == 401

    captured.assert_clean(
        PASSWORD,
        wrong,
        access,
        refresh,
        refreshed["access_token"],
        refreshed["refresh_token"],
        access.rsplit(".", 1)[1],  # a signature alone
    )
    access_lines = [line for line in captured.json_lines() if line["logger"] == "collab.access"]
    assert {line["route"] for line in access_lines} >= {"/v1/auth/login", "/v1/auth/refresh"}


def test_api_keys_made_used_and_refused(world, captured):
    owner = jwt_client(world.owner)
    made = assert_ok(
        owner.post("/v1/api-keys", {"name": "ci", "scopes": ["issues:read"]}, format="json"), 201
    )["data"]
    assert bearer(made["key"]).get("/v1/projects").status_code in (200, 403)
    bad = "clb_" + "x" * 40
    assert bearer(bad).get("/v1/projects").status_code == 401
    assert bearer(made["key"] + "x").get("/v1/projects").status_code == 401

    captured.assert_clean(made["key"], bad, made["key"][4:])
    lines = captured.json_lines()
    assert any(line.get("api_key_id") == made["id"] for line in lines)


def test_webhook_secrets_and_the_signatures_sent(api, world, receiver, captured, settings):
    settings.WEBHOOK_RETRY_BASE_SECONDS = 0
    secret, rotated = "hook-Secret-value-17", "hook-Secret-rotated-42"
    body = {"url": receiver.url, "events": ["*"], "secret": secret}
    made = assert_ok(
        api.owner.post(f"/v1/projects/{world.project.pk}/webhooks", body, format="json"), 201
    )["data"]
    generated = assert_ok(
        api.owner.post(
            f"/v1/projects/{world.project.pk}/webhooks",
            {"url": receiver.url, "events": ["comment.*"]},
            format="json",
        ),
        201,
    )["data"]["secret"]
    create_issue(api, world.project)
    [request] = receiver.wait_for(1)
    assert_ok(api.owner.patch(f"/v1/webhooks/{made['id']}", {"secret": rotated}, format="json"))

    sent = [
        request.headers["x-collab-signature-256"],
        request.headers["webhook-signature"].split(",", 1)[1],
    ]
    captured.assert_clean(secret, rotated, generated, *sent)


def test_invitation_tokens_and_new_passwords(
    api, world, captured, django_capture_on_commit_callbacks, monkeypatch
):
    # Every task queued, as its message would carry it: Celery logs a task's arguments at some
    # levels (and with a failure), and the broker keeps them.
    queued: list[tuple[str, object, object]] = []
    publish = Task.apply_async

    def recorded(task, args=None, kwargs=None, **options):
        queued.append((task.name, args, kwargs))
        return publish(task, args, kwargs, **options)

    monkeypatch.setattr(Task, "apply_async", recorded)
    with django_capture_on_commit_callbacks(execute=True):
        assert_ok(
            api.owner.post(
                f"/v1/workspaces/{world.acme.pk}/invitations",
                {"email": "new@example.com", "role": "developer", "projects": []},
                format="json",
            ),
            201,
        )
    token = mail.outbox[-1].body.split("token=", 1)[1].split()[0]
    password = "violet-Trombone-sunrise-42"
    wrong = APIClient().post(
        "/v1/invitations/accept",
        {"token": token[:-3] + "zzz", "name": "N", "password": password},
        format="json",
    )
    assert wrong.status_code in (400, 404)
    accepted = APIClient().post(
        "/v1/invitations/accept",
        {"token": token, "name": "Nina New", "password": password},
        format="json",
    )
    assert accepted.status_code in (200, 201), accepted.content

    captured.assert_clean(token, password)
    assert "accounts.tasks.invitation_send_email" in [name for name, _, _ in queued]
    for form in encodings(token):
        assert form not in repr(queued), "a task carries the token"


def test_push_signatures(api, world, git_storage, synced, captured):  # noqa: F811
    body = b'{"ref": "refs/heads/main"}'
    good = sign(synced.webhook_secret, body)
    bad = sign("not-the-secret", body)
    for signature in (good, bad):
        APIClient().generic(
            "POST",
            f"/v1/repositories/{synced.pk}/push",
            body,
            content_type="application/json",
            HTTP_X_HUB_SIGNATURE_256=signature,
        )
    captured.assert_clean(synced.webhook_secret, good, bad, good.split("=", 1)[1])


def test_redaction_catches_what_slips_into_a_line(captured):
    key = "clb_" + "k" * 40
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlLXZhbHVl"
    hook = signing.signature_hex("some-secret", b"{}")
    standard = signing.signature_standard("some-secret", "id", 1, b"{}")
    logger = logging.getLogger("collab.test")
    logger.debug("key %s, jwt %s", key, jwt)
    logger.info("Authorization: Bearer %s", "opaque-credential-value-1")
    logger.warning("signatures %s %s", hook, standard)
    logger.info("body", extra={"route": "/v1/auth/login"})
    logger.error("form password=hunter2-Value&token=tok-Value-1234")
    try:
        raise ValueError(f"refused {key}")
    except ValueError:
        logger.exception("failed")

    service_output = "\n".join(s.getvalue() for s in captured.streams.values())
    for secret in (key, jwt, hook, standard, "opaque-credential-value-1", "hunter2-Value"):
        assert secret not in service_output
    assert "tok-Value-1234" not in service_output
    assert "[redacted]" in service_output
    assert redact_text("plain words stay") == "plain words stay"
