"""Every route of the URLconf, with every method, as a caller holding only read scopes.

HEAD once reached the write half of views that share one handler for GET and POST (a read
key invited an owner). This walks the URLconf itself, so a route added later is swept too:
every method (GET, HEAD, OPTIONS, POST, PUT, PATCH, DELETE), a body that would be a valid
write almost anywhere, and the workspace owner's key holding only ``<group>:read`` for each
group. Whatever the answer, nothing in the database changes, nothing is a 500, and every
answer but the docs page is JSON. HEAD answers exactly what GET answers, without a body.
"""

import functools
import hashlib
import re

import pytest
from django.apps import apps
from django.db import connection

from accounts.models import AuditEntry
from projects.models import ProjectMember
from ratelimits.models import RateLimitCounter
from tests.conftest import client_for
from tests.urlconf import named_routes

METHODS = ("GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE")
READ_KEYS = ("projects:read", "issues:read", "users:read")
# A body that names a field of almost every write, with values each would accept.
WRITE_BODY = {
    "name": "Swept",
    "title": "Swept",
    "description": "written by a read-only key",
    "email": "swept@example.test",
    "password": "a long enough password 123",
    "role": "owner",
    "user_id": "{admin}",
    "projects": ["{project}"],
    "status": "closed",
    "visibility": "public",
    "labels": ["swept"],
    "url": "http://127.0.0.1:9/swept",
    "events": ["*"],
    "secret": "swept-secret",
    "active": False,
    "clone_url": "https://git.example.test/swept.git",
    "head": "feature",
    "base": "main",
    "state": "approved",
    "body": "swept",
    "method": "merge",
    "scopes": ["projects:admin"],
    "expiresIn": "1d",
    "color": "#ff0000",
    "token": "swept",
    "refresh_token": "swept",
}
# Rows a refused request may legitimately write: the rate limiter's counters (without Redis
# they live in the database, and every request counts, refused or not), and the audit log's
# entry of a credential's first use from an address (accounts.audit).
COUNTERS = {RateLimitCounter, AuditEntry}
# Columns a read may write: when a key was last used (written at most once a minute), and the
# addresses a credential was used from.
USE_STAMPS = {
    "accounts.ApiKey": {"last_used_at", "addresses"},
    "accounts.AppAuthorization": {"addresses"},
}
# The routes that are reads by nature answer bodies of their own kind.
NON_JSON_OK = {("docs", "GET"): "text/html"}


def _routes():
    return sorted({pattern.name: regex for pattern, regex in named_routes()}.items())


ROUTES = _routes()
# The event stream never ends, and gives its connection back as it opens: its GET and HEAD
# are swept through a real server (test_live_http.py); its other methods are swept here.
ENDLESS = {"event-stream": {"GET", "HEAD"}}
# Routes that answer 400 without a query parameter: swept with one.
REQUIRED_QUERY = {"search-list": "?q=swept"}


def test_the_sweep_covers_the_api():
    names = {name for name, _ in ROUTES}
    assert len(ROUTES) >= 50
    assert {"workspace-invitations", "project-members", "issue-detail", "repo-push-list"} <= names


def _path(name: str, regex: str, ids: dict) -> str:
    """A concrete path for a route: each identifier is the swept world's own record."""
    resource = {
        "service-account": "service-account",
        "oauth-app": "oauth-app",
        "authorization": "authorization",
        "api-key": "api-key",
        "user": "user",
        "workspace": "workspace",
        "project": "project",
        "issue": "issue",
        "label": "label",
        "webhook": "webhook",
        "repository": "repository",
        "pull": "pull",
        "comment": "comment",
    }
    owner_of_pk = next((ids[v] for k, v in resource.items() if name.startswith(k + "-")), None)
    values = {
        "pk": owner_of_pk,
        "project_id": ids["project"],
        "workspace_id": ids["workspace"],
        "repository_id": ids["repository"],
        "pull_id": ids["pull"],
        "issue_id": ids["issue"],
        "delivery_id": ids["delivery"],
        "invitation_id": ids["invitation"],
        "user_id": ids["user"],
        "export_id": ids["export"],
        "key_id": ids["service-account-key"],
    }
    path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: str(values[m.group(1)]), regex)
    return "/" + path.replace("^", "").replace("$", "") + REQUIRED_QUERY.get(name, "")


def _body(ids: dict) -> dict:
    resolved = {}
    for field, value in WRITE_BODY.items():
        if value == "{admin}":
            value = ids["admin"]
        elif value == ["{project}"]:
            value = [ids["project"]]
        resolved[field] = value
    return resolved


def _fingerprinted() -> list[tuple[str, object]]:
    """Each table the fingerprint covers, as (label, the queryset of its rows in order)."""
    tables = []
    for model in apps.get_models():
        if model in COUNTERS or model._meta.proxy or not model._meta.managed:
            continue
        if model._meta.app_label in {"sessions", "admin", "contenttypes"}:
            continue
        skipped = USE_STAMPS.get(model._meta.label, set())
        columns = [f.attname for f in model._meta.concrete_fields if f.attname not in skipped]
        tables.append((model._meta.label, model.objects.order_by("pk").values_list(*columns)))
        for m2m in model._meta.local_many_to_many:
            through = m2m.remote_field.through
            tables.append((through._meta.label, through.objects.order_by("pk").values_list()))
    return tables


@functools.cache
def _fingerprint_statement() -> tuple[str, tuple]:
    """On PostgreSQL, the whole fingerprint in one statement: each table's rows, in the same
    order and columns as the querysets give them, digested by the server."""
    parts, params = [], []
    for label, rows in _fingerprinted():
        sql, row_params = rows.query.sql_with_params()
        parts.append(
            f"SELECT %s AS label, md5(coalesce(string_agg(row_text, '|' ORDER BY ordinal), ''))"
            f" FROM (SELECT row_to_json(r)::text AS row_text, row_number() OVER () AS ordinal"
            f" FROM ({sql}) r) t"
        )
        params += [label, *row_params]
    return " UNION ALL ".join(parts), tuple(params)


def _fingerprint() -> dict[str, str]:
    """A digest of every row of every table the project owns (the counters aside)."""
    if connection.vendor == "postgresql":
        sql, params = _fingerprint_statement()
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return dict(cursor.fetchall())
    return {
        label: hashlib.sha256(repr(list(rows)).encode()).hexdigest()
        for label, rows in _fingerprinted()
    }


def _changed(before: dict, after: dict) -> list[str]:
    return sorted(label for label in before if before[label] != after.get(label))


def _request(client, method: str, path: str, body: dict):
    import json

    return client.generic(method, path, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize(("name", "regex"), ROUTES, ids=[name for name, _ in ROUTES])
def test_read_keys_write_nothing_whatever_the_method(swept, name, regex):
    world, ids = swept
    path = _path(name, regex, ids)
    body = _body(ids)
    clients = {scope: client_for(world.owner, scopes=[scope]) for scope in READ_KEYS}
    before = _fingerprint()
    for scope, client in clients.items():
        gets = {}
        for method in METHODS:
            if method in ENDLESS.get(name, ()):
                continue
            response = _request(client, method, path, body)
            where = f"{method} {path} with a {scope} key"
            assert response.status_code != 500, where
            assert response.status_code < 500 or path == "/readyz", where
            if method in {"POST", "PUT", "PATCH", "DELETE"}:
                assert not 200 <= response.status_code < 300 or _writes_nothing(name), (
                    where,
                    response.status_code,
                )
            content_type = response.get("Content-Type", "")
            expected = NON_JSON_OK.get((name, method if method != "HEAD" else "GET"))
            if method == "GET" and response.status_code == 200 and expected is None:
                expected = _own_media_type(name)
            if method != "HEAD" and not response.streaming:
                assert content_type.startswith(expected or "application/json"), (
                    where,
                    content_type,
                )
            if response.streaming:
                b"".join(response.streaming_content)  # a report: finite, read to its end
            if method == "GET":
                gets[scope] = response
            if method == "HEAD" and scope in gets:
                get = gets[scope]
                assert response.status_code == get.status_code, where
                assert response.content == b"", where
            after = _fingerprint()
            assert _changed(before, after) == [], where


def _writes_nothing(name: str) -> bool:
    """Routes whose 2xx to a POST is no write: none today."""
    return False


def _own_media_type(name: str) -> str | None:
    return {
        "schema": "application/vnd.oai.openapi+json",
        "event-stream": "text/event-stream",
        "healthz": "application/json",
        "metrics": "text/plain",
    }.get(name)


def test_head_is_get_without_its_body(swept):
    world, ids = swept
    client = client_for(world.owner, scopes=["issues:read"])
    get = client.get(f"/v1/issues/{ids['issue']}")
    head = client.head(f"/v1/issues/{ids['issue']}")
    assert head.status_code == 200 and head.content == b""
    assert head["Content-Length"] == str(len(get.content))
    assert head["Content-Type"] == get["Content-Type"]


def test_a_body_on_a_read_or_a_delete_is_ignored(swept):
    world, ids = swept
    client = client_for(world.owner)
    response = client.generic(
        "GET", f"/v1/issues/{ids['issue']}", "not json at all", content_type="text/plain"
    )
    assert response.status_code == 200 and response.json()["data"]["id"] == ids["issue"]
    response = client.generic(
        "DELETE", f"/v1/labels/{ids['label']}", "{broken", content_type="application/json"
    )
    assert response.status_code == 200
    assert not world.project.labels.filter(pk=ids["label"]).exists()


def test_the_invitation_hole_is_closed(swept):
    """The probe itself: HEAD with an owner invitation's body from a read-only key."""
    world, ids = swept
    client = client_for(world.owner, scopes=["users:read", "projects:read"])
    before = world.acme.invitations.count()
    response = _request(
        client,
        "HEAD",
        f"/v1/workspaces/{world.acme.pk}/invitations",
        {"email": "attacker@example.test", "role": "owner"},
    )
    assert response.status_code == 200 and "Location" not in response
    assert world.acme.invitations.count() == before
    assert not world.acme.invitations.filter(email="attacker@example.test").exists()
    # The member probe: an issues:read key adding a member with HEAD.
    client = client_for(world.owner, scopes=["issues:read"])
    response = _request(
        client, "HEAD", f"/v1/projects/{world.project.pk}/members", {"user_id": world.admin.pk}
    )
    assert response.status_code == 403
    assert not ProjectMember.objects.filter(project=world.project, user=world.admin).exists()
