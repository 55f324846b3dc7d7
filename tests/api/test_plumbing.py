"""The shared API plumbing (docs/guide/index.md, docs/guide/envelope-and-errors.md,
docs/guide/pagination.md): envelopes, errors, body guards, pagination and health probes,
exercised through the API client."""

import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import override_settings
from django.utils import timezone
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import AccessToken

from events.models import Event
from projects.models import Project
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import ProjectFactory, WebhookFactory

ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def assert_json(response):
    """Every answer is JSON and carries a request id, whatever its status."""
    assert response["Content-Type"].split(";")[0] == "application/json", response["Content-Type"]
    assert b"<html" not in response.content.lower()
    assert response.get("X-Request-Id")
    return response.json()


def assert_error_envelope(response, status: int, code: str) -> dict:
    """The whole error envelope: exactly ``success`` and ``error``, and nothing else."""
    body = assert_json(response)
    error = assert_error(response, status, code)
    assert set(body) == {"success", "error"}
    assert set(error) == {"code", "message", "details"}
    return error


def links(response) -> dict[str, dict[str, str]]:
    """The Link header as ``{rel: {query parameter: value}}``."""
    parsed = {}
    for url, rel in re.findall(r'<([^>]+)>;\s*rel="(\w+)"', response["Link"]):
        parsed[rel] = {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}
    return parsed


# Success envelope ---------------------------------------------------------------------


def test_single_record_envelope_has_success_and_data_only(api, world):
    body = assert_json(api.owner.get(f"/v1/projects/{world.project.pk}"))
    assert set(body) == {"success", "data"}
    assert body["success"] is True
    assert body["data"]["id"] == world.project.pk
    assert set(body["data"]) >= {
        "id",
        "workspace_id",
        "name",
        "description",
        "status",
        "visibility",
        "created_at",
        "updated_at",
        "team_count",
    }


def test_list_envelope_has_meta(api, world):
    response = api.owner.get("/v1/projects")
    body = assert_json(response)
    assert set(body) == {"success", "data", "meta"}
    assert body["success"] is True
    assert isinstance(body["data"], list)
    assert body["meta"] == {
        "total": 1,
        "page": 1,
        "per_page": 20,
        "current_page": 1,
        "total_pages": 1,
        "total_count": 1,
        "next_cursor": None,
    }


def test_create_answers_201_with_location(api, world):
    response = api.owner.post("/v1/projects", {"name": "Envelope"}, format="json")
    body = assert_json(response)
    assert response.status_code == 201
    assert set(body) == {"success", "data"}
    assert response["Location"] == f"/v1/projects/{body['data']['id']}"


def test_delete_answers_success_and_null_data(api, world):
    response = api.owner.delete(f"/v1/projects/{world.project.pk}")
    assert response.status_code == 200
    assert assert_json(response) == {"success": True, "data": None}
    assert not Project.objects.filter(pk=world.project.pk).exists()


def test_timestamps_are_utc_ending_in_z(api, world):
    data = assert_ok(api.owner.get(f"/v1/projects/{world.project.pk}"))["data"]
    assert ISO_Z.match(data["created_at"]), data["created_at"]
    assert ISO_Z.match(data["updated_at"]), data["updated_at"]
    listed = assert_ok(api.owner.get("/v1/users"))["data"]
    assert all(ISO_Z.match(user["created_at"]) for user in listed)


def _walk(value, key=""):
    if isinstance(value, dict):
        for name, item in value.items():
            yield from _walk(item, name)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item, key)
    else:
        yield key, value


def test_every_timestamp_and_identifier_has_the_contract_form(api, world):
    """Across the lists: ``*_at`` is ISO 8601 UTC ending in Z, ``id``/``*_id`` an integer."""
    jwt = APIClient()
    jwt.credentials(HTTP_AUTHORIZATION=f"Bearer {AccessToken.for_user(world.owner)}")
    created = jwt.post(
        "/v1/api-keys",
        {"name": "ts", "scopes": ["projects:read"], "expiresIn": "1d"},
        format="json",
    )
    key = assert_ok(created, 201)["data"]["key"]
    used = APIClient()
    used.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert_ok(used.get("/v1/projects"))
    invited = api.owner.post(
        f"/v1/workspaces/{world.acme.pk}/invitations",
        {"email": "new@acme.test", "projects": [world.project.pk]},
        format="json",
    )
    assert_ok(invited, 201)

    bodies = [
        api.owner.get("/v1/projects").json(),
        api.owner.get(f"/v1/projects/{world.project.pk}").json(),
        api.owner.get(f"/v1/projects/{world.project.pk}/members").json(),
        api.owner.get("/v1/users").json(),
        api.owner.get("/v1/users/me").json(),
        api.owner.get("/v1/workspaces").json(),
        api.owner.get(f"/v1/workspaces/{world.acme.pk}/invitations").json(),
        jwt.get("/v1/api-keys").json(),
    ]
    stamps = ids = 0
    for body in bodies:
        assert body["success"] is True, body
        for key, value in _walk(body["data"]):
            if key.endswith("_at") and value is not None:
                assert isinstance(value, str) and ISO_Z.match(value), (key, value)
                stamps += 1
            if (key == "id" or key.endswith("_id")) and value is not None:
                assert isinstance(value, int) and not isinstance(value, bool), (key, value)
                ids += 1
    # expires_at and last_used_at of the key, expires_at of the invitation among them.
    assert stamps > 20 and ids > 20


def test_identifiers_are_integers(api, world):
    data = assert_ok(api.owner.get(f"/v1/projects/{world.project.pk}"))["data"]
    assert isinstance(data["id"], int)
    assert isinstance(data["workspace_id"], int)
    assert isinstance(data["team_count"], int)


# Unknown routes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/nonexistent",
        "/v1/nonexistent",
        "/v1/projects/",  # no trailing slashes, ever
        "/v1/projects/abc",
        "/v1/",
        "/v1",
        "/",
        "/static/missing.css",
    ],
)
def test_unknown_routes_answer_json_404(api, path):
    error = assert_error_envelope(api.owner.get(path), 404, "NOT_FOUND")
    assert error["details"] == {}


def test_unknown_route_404_also_for_anonymous_and_writes(api):
    assert_error_envelope(api.anonymous.get("/nonexistent"), 404, "NOT_FOUND")
    response = api.owner.post("/v1/projects/", {"name": "Slash"}, format="json")
    assert_error_envelope(response, 404, "NOT_FOUND")
    assert not Project.objects.filter(name="Slash").exists()


def test_id_beyond_any_integer_column_is_404_not_500(api, world):
    assert_error_envelope(api.owner.get("/v1/projects/99999999999999999999999"), 404, "NOT_FOUND")


def test_unknown_id_is_404(api, world):
    assert_error_envelope(api.owner.get("/v1/projects/987654"), 404, "NOT_FOUND")


# 405 ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("put", "/v1/projects", {"GET", "POST"}),
        ("delete", "/v1/projects", {"GET", "POST"}),
        ("post", "/v1/projects/{project}", {"GET", "PUT", "PATCH", "DELETE"}),
        ("put", "/v1/workspaces/{workspace}", {"GET"}),
        ("delete", "/v1/users/me", {"GET"}),
    ],
)
def test_wrong_method_is_405_with_allow_header(api, world, method, path, allowed):
    path = path.format(project=world.project.pk, workspace=world.acme.pk)
    response = getattr(api.owner, method)(path, {}, format="json")
    assert_error_envelope(response, 405, "METHOD_NOT_ALLOWED")
    allow = {m.strip() for m in response["Allow"].split(",")}
    assert allowed <= allow
    assert method.upper() not in allow


# 400: bodies that cannot be parsed ------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        b'{"name": "unterminated',
        b"{name: 'single quotes'}",
        b'{"name": "x",}',
        b"\xff\xfe not utf-8",
    ],
)
def test_malformed_json_is_400(api, world, raw):
    response = api.owner.generic("POST", "/v1/projects", raw, content_type="application/json")
    assert_error_envelope(response, 400, "BAD_REQUEST")
    assert Project.objects.count() == 2


@pytest.mark.parametrize("raw", [b"[]", b'[{"name": "x"}]', b'"a string"', b"42", b"null"])
def test_json_that_is_not_an_object_is_400(api, world, raw):
    response = api.owner.generic("POST", "/v1/projects", raw, content_type="application/json")
    assert_error_envelope(response, 400, "BAD_REQUEST")
    assert Project.objects.count() == 2


def test_json_with_charset_is_accepted(api, world):
    response = api.owner.generic(
        "POST",
        "/v1/projects",
        b'{"name": "Charset"}',
        content_type="application/json; charset=utf-8",
    )
    assert_ok(response, 201)


# 415 ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "content_type"),
    [
        (b'{"name": "Plain"}', "text/plain"),
        (b"name=Plain", "application/x-www-form-urlencoded"),
        (b'<project name="Plain"/>', "application/xml"),
        (b'{"name": "Plain"}', ""),
    ],
)
def test_non_json_body_is_415(api, world, raw, content_type):
    response = api.owner.generic("POST", "/v1/projects", raw, content_type=content_type)
    assert_error_envelope(response, 415, "UNSUPPORTED_MEDIA_TYPE")
    assert not Project.objects.filter(name="Plain").exists()


def test_multipart_form_is_415(api, world):
    response = api.owner.post("/v1/projects", {"name": "Plain"}, format="multipart")
    assert_error_envelope(response, 415, "UNSUPPORTED_MEDIA_TYPE")
    assert not Project.objects.filter(name="Plain").exists()


def test_non_json_body_is_415_even_where_the_body_is_never_read(api, world):
    webhook = WebhookFactory(project=world.project)
    response = api.owner.generic(
        "POST", f"/v1/webhooks/{webhook.pk}/ping", b"please", content_type="text/plain"
    )
    assert_error_envelope(response, 415, "UNSUPPORTED_MEDIA_TYPE")
    assert not Event.objects.filter(type="webhook.ping").exists()


def test_a_body_on_get_head_or_delete_is_ignored(api, world):
    """docs/guide/index.md: whatever such a body holds, it changes nothing and refuses nothing."""
    response = api.owner.generic("GET", "/v1/projects", b"q=x", content_type="text/plain")
    assert response.status_code == 200
    response = api.owner.generic("HEAD", "/v1/projects", b"{", content_type="application/json")
    assert response.status_code == 200
    response = api.owner.generic(
        "DELETE", f"/v1/projects/{world.project.pk}", b"please", content_type="text/plain"
    )
    assert response.status_code == 200
    assert not Project.objects.filter(pk=world.project.pk).exists()
    assert Event.objects.filter(type="project.deleted").count() == 1


# 413 ------------------------------------------------------------------------------------


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=64)
def test_body_over_the_limit_is_413(api, world):
    raw = b'{"name": "Big", "description": "' + b"x" * 200 + b'"}'
    response = api.owner.generic("POST", "/v1/projects", raw, content_type="application/json")
    error = assert_error_envelope(response, 413, "PAYLOAD_TOO_LARGE")
    assert error["details"] == {"max_bytes": 64}
    assert not Project.objects.filter(name="Big").exists()


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=64)
def test_body_under_the_limit_passes(api, world):
    response = api.owner.post("/v1/projects", {"name": "Small"}, format="json")
    assert_ok(response, 201)


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=64)
def test_oversize_body_is_413_even_where_the_body_is_never_read(api, world):
    webhook = WebhookFactory(project=world.project)
    response = api.owner.generic(
        "POST", f"/v1/webhooks/{webhook.pk}/ping", b"{}" + b" " * 100, "application/json"
    )
    assert_error_envelope(response, 413, "PAYLOAD_TOO_LARGE")
    assert not Event.objects.filter(type="webhook.ping").exists()


def test_default_limit_is_one_mebibyte(api, world):
    raw = b'{"name": "Huge", "description": "' + b"x" * (1024 * 1024) + b'"}'
    response = api.owner.generic("POST", "/v1/projects", raw, content_type="application/json")
    assert_error_envelope(response, 413, "PAYLOAD_TOO_LARGE")


# 422 ------------------------------------------------------------------------------------


def test_validation_error_maps_fields_to_message_lists(api, world):
    response = api.owner.post(
        "/v1/projects", {"visibility": "secret", "description": "fine"}, format="json"
    )
    error = assert_error_envelope(response, 422, "VALIDATION_ERROR")
    details = error["details"]
    assert set(details) == {"name", "visibility"}
    for messages in details.values():
        assert isinstance(messages, list) and messages
        assert all(isinstance(message, str) and message for message in messages)
    assert details["name"] == ["This field is required."]
    assert Project.objects.count() == 2


def test_wrong_type_is_422(api, world):
    response = api.owner.post("/v1/projects", {"name": ["a", "list"]}, format="json")
    error = assert_error_envelope(response, 422, "VALIDATION_ERROR")
    assert list(error["details"]) == ["name"]


def test_empty_json_body_is_a_validation_error_not_a_parse_error(api, world):
    response = api.owner.generic("POST", "/v1/projects", b"{}", content_type="application/json")
    error = assert_error_envelope(response, 422, "VALIDATION_ERROR")
    assert error["details"] == {"name": ["This field is required."]}


# 401 ------------------------------------------------------------------------------------


def _bearer(value: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=value)
    return client


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer",
        "Bearer ",
        "Basic b3duZXJAYWNtZS50ZXN0OnB3",
        "Bearer clb_not_a_real_key",
        "Bearer clb_" + "a" * 36,
        "Bearer not.a.jwt",
        "Bearer two words",
    ],
)
def test_unauthenticated_is_401_with_www_authenticate(world, authorization):
    client = APIClient() if authorization is None else _bearer(authorization)
    response = client.get("/v1/projects")
    assert_error_envelope(response, 401, "UNAUTHORIZED")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_expired_and_revoked_keys_are_401(world):
    expired = client_for(world.owner, expires_at=timezone.now() - timedelta(seconds=1))
    revoked = client_for(world.owner, revoked=True)
    for client in (expired, revoked):
        response = client.get(f"/v1/projects/{world.project.pk}")
        assert_error_envelope(response, 401, "UNAUTHORIZED")
        assert response["WWW-Authenticate"].startswith("Bearer")


def test_anonymous_write_is_401_and_changes_nothing(api, world):
    response = api.anonymous.post("/v1/projects", {"name": "Anon"}, format="json")
    assert_error_envelope(response, 401, "UNAUTHORIZED")
    assert not Project.objects.filter(name="Anon").exists()


# 403 ------------------------------------------------------------------------------------


def test_missing_scope_is_403_naming_the_scope(world):
    client = client_for(world.owner, ["issues:read"])
    error = assert_error_envelope(client.get("/v1/projects"), 403, "FORBIDDEN")
    assert error["details"]["required_scope"] == "projects:read"


# 500 ------------------------------------------------------------------------------------


def test_unexpected_error_is_json_500_with_the_request_id(api, world, monkeypatch, caplog):
    def boom(**kwargs):
        raise RuntimeError("database on fire")

    monkeypatch.setattr("projects.selectors.project_list", boom)
    response = api.owner.get("/v1/projects")
    error = assert_error_envelope(response, 500, "INTERNAL_ERROR")
    assert error["details"] == {"request_id": response["X-Request-Id"]}
    assert "database on fire" not in response.content.decode()
    assert any(record.exc_info for record in caplog.records)


# Never HTML, always a request id --------------------------------------------------------


@override_settings(ALLOWED_HOSTS=["api.example.com"])
def test_disallowed_host_is_json_400(api):
    response = api.anonymous.get("/healthz", HTTP_HOST="evil.example.com")
    assert_error_envelope(response, 400, "BAD_REQUEST")


def test_browser_accept_header_still_gets_json(api, world):
    response = api.owner.get(
        "/v1/projects", HTTP_ACCEPT="text/html,application/xhtml+xml,*/*;q=0.8"
    )
    assert response.status_code == 200
    assert_json(response)
    response = api.anonymous.get("/nonexistent", HTTP_ACCEPT="text/html")
    assert response.status_code == 404
    assert_json(response)


def test_request_id_is_kept_when_sane_and_replaced_when_not(api, world):
    response = api.owner.get("/v1/projects", HTTP_X_REQUEST_ID="abc-123")
    assert response["X-Request-Id"] == "abc-123"
    response = api.owner.get("/v1/projects", HTTP_X_REQUEST_ID="bad id\nwith newline")
    assert response["X-Request-Id"] != "bad id\nwith newline"
    assert re.fullmatch(r"[0-9a-f]{32}", response["X-Request-Id"])


def test_every_answer_has_a_distinct_request_id(api, world):
    ids = {
        api.owner.get("/v1/projects")["X-Request-Id"],
        api.owner.get("/v1/projects")["X-Request-Id"],
        api.anonymous.get("/v1/projects")["X-Request-Id"],
        api.anonymous.get("/nowhere")["X-Request-Id"],
        api.anonymous.get("/healthz")["X-Request-Id"],
    }
    assert len(ids) == 5


# No mass assignment ---------------------------------------------------------------------


def test_read_only_fields_in_a_create_are_ignored(api, world):
    response = api.owner.post(
        "/v1/projects",
        {
            "name": "Honest",
            "id": 999999,
            "created_at": "2001-01-01T00:00:00Z",
            "updated_at": "2001-01-01T00:00:00Z",
            "team_count": 42,
            "created_by": world.outsider.pk,
        },
        format="json",
    )
    data = assert_ok(response, 201)["data"]
    project = Project.objects.get(name="Honest")
    assert data["id"] == project.pk != 999999
    assert project.created_at.year == timezone.now().year
    assert data["team_count"] == 1
    assert project.created_by == world.owner
    assert project.workspace == world.acme


@pytest.mark.parametrize("method", ["patch", "put"])
def test_read_only_fields_in_an_update_are_ignored(api, world, method):
    before = Project.objects.get(pk=world.project.pk)
    response = getattr(api.owner, method)(
        f"/v1/projects/{world.project.pk}",
        {
            "name": "Renamed",
            "id": 999999,
            "created_at": "2001-01-01T00:00:00Z",
            "workspace_id": world.globex.pk,
            "team_count": 42,
        },
        format="json",
    )
    data = assert_ok(response)["data"]
    after = Project.objects.get(pk=world.project.pk)
    assert after.name == data["name"] == "Renamed"
    assert after.created_at == before.created_at
    assert after.workspace_id == world.acme.pk == data["workspace_id"]
    assert data["id"] == world.project.pk
    assert data["team_count"] == 3
    assert not Project.objects.filter(pk=999999).exists()


def test_update_with_only_read_only_fields_changes_nothing(api, world):
    response = api.owner.patch(
        f"/v1/projects/{world.project.pk}",
        {"id": 5, "workspace_id": world.globex.pk, "created_at": "2001-01-01T00:00:00Z"},
        format="json",
    )
    assert_ok(response)
    project = Project.objects.get(pk=world.project.pk)
    assert project.workspace_id == world.acme.pk
    assert not Event.objects.filter(type="project.updated").exists()


# Pagination -----------------------------------------------------------------------------


@pytest.fixture
def many_projects(world):
    """46 projects the owner sees: Rocket and 45 more, ids increasing."""
    ProjectFactory.create_batch(45, workspace=world.acme)
    return list(Project.objects.filter(workspace=world.acme).order_by("id"))


def test_default_page_size_is_20(api, many_projects):
    response = api.owner.get("/v1/projects")
    body = assert_ok(response)
    assert [p["id"] for p in body["data"]] == [p.pk for p in many_projects[:20]]
    cursor = body["meta"]["next_cursor"]
    assert body["meta"] == {
        "total": 46,
        "page": 1,
        "per_page": 20,
        "current_page": 1,
        "total_pages": 3,
        "total_count": 46,
        "next_cursor": cursor,
    }
    # The next cursor is opaque: it is known by what it gives, the next 20 projects.
    after = assert_ok(api.owner.get("/v1/projects", {"cursor": cursor}))
    assert [p["id"] for p in after["data"]] == [p.pk for p in many_projects[20:40]]


def test_per_page_is_clamped_to_100(api, world, many_projects):
    ProjectFactory.create_batch(60, workspace=world.acme)
    body = assert_ok(api.owner.get("/v1/projects?per_page=1000"))
    assert len(body["data"]) == 100
    assert body["meta"]["per_page"] == 100
    assert body["meta"]["total"] == body["meta"]["total_count"] == 106
    assert body["meta"]["total_pages"] == 2


def test_pages_follow_each_other_without_gaps(api, many_projects):
    seen = []
    for page in (1, 2, 3):
        body = assert_ok(api.owner.get(f"/v1/projects?page={page}&per_page=20"))
        assert body["meta"]["page"] == body["meta"]["current_page"] == page
        seen += [p["id"] for p in body["data"]]
    assert seen == [p.pk for p in many_projects]


def test_last_page_is_partial(api, many_projects):
    body = assert_ok(api.owner.get("/v1/projects?page=3"))
    assert [p["id"] for p in body["data"]] == [p.pk for p in many_projects[40:]]


def test_page_past_the_last_is_empty_200(api, many_projects):
    response = api.owner.get("/v1/projects?page=9&per_page=20")
    body = assert_ok(response)
    assert body["data"] == []
    assert body["meta"] == {
        "total": 46,
        "page": 9,
        "per_page": 20,
        "current_page": 9,
        "total_pages": 3,
        "total_count": 46,
        "next_cursor": None,
    }
    rels = links(response)
    assert "next" not in rels
    assert rels["first"]["page"] == "1"
    assert rels["last"]["page"] == "3"
    assert rels["prev"]["page"] == "3"


def test_empty_list_has_one_page(world):
    client = client_for(world.outsider)
    body = assert_ok(client.get("/v1/projects?visibility=public"))
    assert body["data"] == []
    assert body["meta"]["total"] == 0
    assert body["meta"]["total_pages"] == 1


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("page=abc", "page"),
        ("page=0", "page"),
        ("page=-1", "page"),
        ("page=1.5", "page"),
        ("per_page=0", "per_page"),
        ("per_page=-1", "per_page"),
        ("per_page=ten", "per_page"),
        ("page=2&per_page=0", "per_page"),
    ],
)
def test_malformed_page_parameters_are_400_naming_them(api, world, query, parameter):
    response = api.owner.get(f"/v1/projects?{query}")
    error = assert_error_envelope(response, 400, "BAD_REQUEST")
    assert parameter in error["details"]
    assert isinstance(error["details"][parameter], list)


@pytest.mark.parametrize("path", ["/v1/users", "/v1/workspaces", "/v1/projects/{project}/members"])
def test_every_list_checks_its_page_parameters(api, world, path):
    path = path.format(project=world.project.pk)
    error = assert_error_envelope(api.owner.get(f"{path}?per_page=0"), 400, "BAD_REQUEST")
    assert "per_page" in error["details"]
    meta = assert_ok(api.owner.get(f"{path}?per_page=1000"))["meta"]
    assert meta["per_page"] == 100


def test_link_header_on_a_middle_page(api, many_projects):
    response = api.owner.get("/v1/projects?page=2&per_page=20")
    rels = links(response)
    assert set(rels) == {"first", "prev", "next", "last"}
    assert {rel: query["page"] for rel, query in rels.items()} == {
        "first": "1",
        "prev": "1",
        "next": "3",
        "last": "3",
    }
    assert all(query["per_page"] == "20" for query in rels.values())


def test_link_header_on_the_first_and_last_pages(api, many_projects):
    first = links(api.owner.get("/v1/projects?per_page=10"))
    assert {rel: q["page"] for rel, q in first.items()} == {"first": "1", "next": "2", "last": "5"}
    last = links(api.owner.get("/v1/projects?per_page=10&page=5"))
    assert {rel: q["page"] for rel, q in last.items()} == {"first": "1", "prev": "4", "last": "5"}


def test_link_header_keeps_filters_and_clamped_page_size(api, world, many_projects):
    response = api.owner.get("/v1/projects?status=active&per_page=500&q=Project")
    rels = links(response)
    assert rels["first"]["status"] == "active"
    assert rels["first"]["q"] == "Project"
    assert rels["first"]["per_page"] == "100"
    assert response["Link"].startswith("<http")


# Health ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_health_probes_answer_without_credentials(db, path):
    response = APIClient().get(path)
    assert response.status_code == 200
    body = assert_json(response)
    assert body["success"] is True


def test_readyz_reports_its_checks(db, settings):
    body = APIClient().get("/readyz").json()
    assert body["data"]["status"] == "ready"
    assert body["data"]["checks"]["database"] == "ok"
    if settings.REDIS_URL:
        assert body["data"]["checks"]["redis"] == "ok"


def test_health_probes_ignore_bad_credentials(db):
    response = _bearer("Bearer clb_garbage").get("/healthz")
    assert response.status_code == 200
