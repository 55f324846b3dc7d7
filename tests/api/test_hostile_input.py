"""Hostile values in every query parameter of every route and in every header the service reads.

NUL characters, non-ASCII text, over-long strings, numbers past 64 bits: each answers a 4xx
in the envelope (or is ignored where the parameter is free text), never a 500. The query
parameters come from the OpenAPI schema, so a parameter added later is swept too.
"""

import json
import re

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.conftest import client_for
from tests.openapi import inlined
from tests.urlconf import needs_jwt, path_needs_jwt

HOSTILE_VALUES = (
    "\x00",
    "open\x00closed",
    "é✓😀",
    "x" * 5000,
    "9" * 40,
    "-1",
    "",
    "%00",
    "'; DROP TABLE issues; --",
    "..%2F..%2Fetc%2Fpasswd",
)
# Parameters every route may be sent, documented or not.
EXTRA_PARAMETERS = ("page", "per_page", "format", "cursor", "sort", "last_event_id")
# Headers the service reads somewhere, and a route that reads each.
HEADER_ROUTES = {
    "HTTP_AUTHORIZATION": ("GET", "/v1/users/me"),
    "HTTP_X_REQUEST_ID": ("GET", "/v1/issues/{issue}"),
    "HTTP_IDEMPOTENCY_KEY": ("POST", "/v1/projects/{project}/issues"),
    "HTTP_X_HUB_SIGNATURE_256": ("POST", "/v1/repositories/{repository}/push"),
    "HTTP_X_FORWARDED_FOR": ("GET", "/v1/rate_limit"),
    "HTTP_X_FORWARDED_PROTO": ("GET", "/v1/projects"),
    "HTTP_ACCEPT": ("GET", "/v1/projects/{project}/reports/issues"),
    "HTTP_IF_NONE_MATCH": ("GET", "/v1/issues/{issue}"),
    "HTTP_IF_MATCH": ("PATCH", "/v1/issues/{issue}"),
    "HTTP_ORIGIN": ("GET", "/v1/projects"),
    "CONTENT_TYPE": ("POST", "/v1/projects/{project}/issues"),
    "CONTENT_LENGTH": ("POST", "/v1/projects/{project}/issues"),
    "HTTP_TRANSFER_ENCODING": ("POST", "/v1/projects/{project}/issues"),
}
# WSGI hands header bytes over as latin-1 text: what a non-ASCII header looks like here.
HOSTILE_HEADERS = (
    "\x00",
    "Bearer \x00",
    "é".encode().decode("latin-1"),
    "Bearer clb_" + "ü".encode().decode("latin-1") * 20,
    "x" * 8000,
    "9" * 40,
    "-1",
)


def _operations():
    schema = inlined(SchemaGenerator().get_schema(request=None, public=True))
    found = []
    for path, item in schema["paths"].items():
        operation = item.get("get")
        if operation is None:
            continue
        names = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
        found.append((path, sorted(set(names) | set(EXTRA_PARAMETERS))))
    return found


# The stream never ends: its parameters are swept through a real server (test_live_http.py).
STREAM = "/v1/events/stream"
OPERATIONS = [(path, names) for path, names in _operations() if path != STREAM]


@pytest.fixture
def swept(swept_of_module):
    """The swept records, made once for the module (tests/api/conftest.py): a hostile request
    writes, if at all, only in its test's own transaction."""
    return swept_of_module


def test_the_sweep_reads_the_schema():
    paths = dict(OPERATIONS)
    assert len(paths) >= 25
    assert {"status", "q", "labels", "assignee"} <= set(paths["/v1/issues"])
    assert "branch" in paths["/v1/repositories/{id}/commits"]


def _concrete(path: str, ids: dict) -> str:
    """The schema's path with the swept world's records in it."""
    resource = path.split("/")[2]
    own = {
        "projects": ids["project"],
        "issues": ids["issue"],
        "labels": ids["label"],
        "webhooks": ids["webhook"],
        "repositories": ids["repository"],
        "pulls": ids["pull"],
        "comments": ids["comment"],
        "workspaces": ids["workspace"],
        "users": ids["user"],
        "api-keys": ids["api-key"],
        "service-accounts": ids["service-account"],
        "oauth-apps": ids["oauth-app"],
    }
    if path.startswith("/v1/users/me/authorizations/"):
        own["users"] = ids["authorization"]
    values = {
        "id": own.get(resource),
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
    return re.sub(r"\{(\w+)\}", lambda m: str(values[m.group(1)]), path)


def _assert_envelope(response, where: str):
    assert response.status_code < 500, (where, response.status_code, response.content[:300])
    if response.streaming:
        b"".join(response.streaming_content)  # a report: finite, read to its end
        return
    if response.status_code >= 400:
        body = response.json()
        assert body["success"] is False and body["error"]["code"], where


@pytest.mark.parametrize(("path", "parameters"), OPERATIONS, ids=[p for p, _ in OPERATIONS])
def test_hostile_query_values_never_fail_the_server(swept, path, parameters):
    world, ids = swept
    client = client_for(world.owner)
    concrete = _concrete(path, ids)
    for name in parameters:
        for value in HOSTILE_VALUES:
            response = client.get(concrete, {name: value})
            _assert_envelope(response, f"GET {concrete}?{name}={value[:20]!r}")
        nul = client.get(concrete, {name: "a\x00b"})
        assert nul.status_code == 400, (name, nul.content)


@pytest.mark.parametrize("header", sorted(HEADER_ROUTES))
def test_hostile_header_values_never_fail_the_server(swept, header):
    world, ids = swept
    method, path = HEADER_ROUTES[header]
    path = path.format(**ids)
    client = client_for(world.owner)
    for value in HOSTILE_HEADERS:
        response = client.generic(
            method,
            path,
            '{"title": "hostile header"}' if method != "GET" else "",
            **{"content_type": "application/json", header: value},
        )
        _assert_envelope(response, f"{method} {path} {header}={value[:20]!r}")


def test_a_non_ascii_push_signature_is_a_plain_401_for_any_id(swept):
    world, ids = swept
    from rest_framework.test import APIClient

    client = APIClient()
    answers = set()
    for repository_id in (ids["repository"], 987654):
        response = client.post(
            f"/v1/repositories/{repository_id}/push",
            b"{}",
            content_type="application/json",
            HTTP_X_HUB_SIGNATURE_256="sha256=" + "é".encode().decode("latin-1") * 32,
        )
        assert response.status_code == 401
        body = response.json()
        answers.add((response.status_code, body["error"]["code"], body["error"]["message"]))
    assert len(answers) == 1, "an existing and a missing repository answer alike"


def test_a_nul_in_a_branch_filter_is_a_400(swept):
    world, ids = swept
    response = client_for(world.owner).get(
        f"/v1/repositories/{ids['repository']}/commits", {"branch": "a\x00"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"] == {
        "branch": ["Query parameters cannot contain NUL characters."]
    }


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE", "POST"])
def test_ids_past_64_bits_are_404s_on_every_route(swept, method):
    """Each identifier in each path, one at a time, set past the 64-bit range (and to 0)."""
    from tests.api.test_methods import ROUTES, _path

    world, ids = swept
    client = client_for(world.owner)
    for name, regex in ROUTES:
        for group in re.findall(r"\(\?P<(\w+)>", regex):
            for value in ("9223372036854775808", "9999999999999999999", "0"):
                one = re.sub(rf"\(\?P<{group}>[^)]*\)", value, regex)
                path = _path(name, one, ids)
                response = client.generic(method, path, "{}", content_type="application/json")
                where = f"{method} {path}"
                # Keys are managed with a JWT only: an API key is refused before any lookup.
                expected = {404, 405} | ({403} if needs_jwt(name, method) else set())
                assert response.status_code in expected, (where, response.content[:200])
                assert response.json()["success"] is False, where


# Bodies each write accepts, from which one field at a time is made hostile.
VALID_BODIES = {
    "ApiKeyCreateRequest": {"name": "k", "scopes": ["projects:read"], "expiresIn": "1d"},
    "LoginRequest": {"email": "owner@acme.test", "password": "not the password"},
    "RefreshRequest": {"refresh_token": "not a token"},
    "InvitationAcceptRequest": {"token": "nope", "name": "N", "password": "a long password 123"},
    "IssueInputRequest": {"title": "T"},
    "IssueBulkCreateRequest": {"items": [{"title": "T"}]},
    "IssueBulkUpdateRequest": {"items": [{"id": "{issue}", "title": "T"}]},
    "LabelInputRequest": {"name": "L"},
    "ProjectCreateRequest": {"name": "P"},
    "ProjectUpdateRequest": {"name": "P"},
    "ProjectMemberAddRequest": {"user_id": "{admin}"},
    # A local path that does not exist: its sync fails at once, on this machine.
    "RepositoryInputRequest": {"name": "r", "clone_url": "/nonexistent/hostile.git"},
    "WebhookInputRequest": {"url": "http://127.0.0.1:9/hostile", "events": ["*"]},
    "PullRequestInputRequest": {"title": "T", "head": "feature", "base": "main"},
    "MergeInputRequest": {"method": "merge"},
    "ReviewInputRequest": {"state": "approved"},
    "CommentInputRequest": {"body": "B"},
    "MeUpdateRequest": {"name": "N"},
    "PatchedMeUpdateRequest": {"name": "N"},
    "WorkspaceCreateRequest": {"name": "W"},
    "InvitationCreateRequest": {"email": "hostile@example.test", "role": "viewer"},
    "MembershipUpdateRequest": {"role": "viewer"},
    "WebhookUpdateRequest": {},
    "PullRequestUpdateRequest": {},
    "ExportCreateRequest": {"include_events": False},
    "ServiceAccountInputRequest": {"name": "Bot"},
    "OAuthAppInputRequest": {
        "name": "App",
        "redirect_uris": ["https://app.example.test/callback"],
        "scopes": ["issues:read"],
    },
    "OAuthAppUpdateRequest": {},
}
HOSTILE_FIELD_VALUES = (
    "\x00",
    "a\x00b",
    "é✓😀",
    "x" * 70000,
    "http://[::1",
    "-1",
    10**30,
    2**63,
    -1,
    1.5,
    True,
    None,
    [],
    {},
    ["\x00"],
    [10**30],
    [{"a": 1}],
)


def _writes():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    found = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method not in {"post", "put", "patch"} or "requestBody" not in operation:
                continue
            ref = operation["requestBody"]["content"]["application/json"]["schema"].get("$ref")
            if ref is None:
                continue  # the push hook: any object, checked by signature first
            name = ref.rsplit("/", 1)[1].removeprefix("Patched")
            fields = sorted(components[ref.rsplit("/", 1)[1]].get("properties", {}))
            found.append((method.upper(), path, name, fields))
    return found


WRITES = _writes()


def test_every_write_has_a_valid_body_to_start_from():
    assert len(WRITES) >= 20
    assert {name for _, _, name, _ in WRITES} <= set(VALID_BODIES)


@pytest.mark.parametrize(
    ("method", "path", "name", "fields"), WRITES, ids=[f"{m} {p}" for m, p, _, _ in WRITES]
)
def test_hostile_body_values_never_fail_the_server(swept, method, path, name, fields):
    """Each field of each write, one at a time, given each hostile value: a 4xx in the
    envelope or a success, never a 500."""
    from rest_framework_simplejwt.tokens import RefreshToken

    world, ids = swept
    client = client_for(world.owner)
    if path_needs_jwt(path):
        token = RefreshToken.for_user(world.owner).access_token
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    concrete = _concrete(path, ids)
    base = {
        key: ids["admin"] if value == "{admin}" else value
        for key, value in VALID_BODIES[name].items()
    }
    if name == "IssueBulkUpdateRequest":
        base["items"] = [{"id": ids["issue"], "title": "T"}]
    for field in fields:
        for value in HOSTILE_FIELD_VALUES:
            body = {**base, field: value}
            response = client.generic(
                method, concrete, json.dumps(body), content_type="application/json"
            )
            _assert_envelope(response, f"{method} {concrete} {field}={str(value)[:20]!r}")
