"""What the schema promises (docs/guide/index.md, docs/reference.md), checked against what the
server does:
the bounds and patterns it states are exactly the ones enforced, empty values are refused
except in free text, and what schemathesis found once stays fixed."""

import re

import pytest
from rest_framework.test import APIClient

from analytics.periods import PERIOD_PATTERN
from events.catalogue import TYPES_PATTERN
from issues.filters import ASSIGNEE_PATTERN
from projects.models import Project
from tests.conftest import assert_error, assert_ok
from tests.factories import WebhookFactory, make_issue

MAX_ID = 2**63 - 1


@pytest.fixture
def document(api):
    response = api.owner.get("/v1/schema?format=json")
    assert response.status_code == 200
    return response.json()


def _parameters(document):
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for parameter in operation.get("parameters", []):
                yield method.upper(), path, parameter


FREE_TEXT = {"q", "labels"}


def test_every_query_parameter_states_what_it_refuses(document):
    for method, path, parameter in _parameters(document):
        if parameter["in"] != "query":
            continue
        schema, name = parameter["schema"], parameter["name"]
        where = (method, path, name)
        if schema.get("type") == "integer":
            assert schema.get("minimum") in (0, 1), where
            assert schema.get("maximum") == MAX_ID, where
        elif schema.get("type") == "array":
            assert schema.get("minItems") == 1 and "enum" in schema["items"], where
        elif name in FREE_TEXT and not parameter.get("required"):
            # An optional filter: empty means none. A required text (search's q) says so.
            assert "minLength" not in schema and "pattern" not in schema, where
        else:
            assert {"enum", "pattern", "minLength", "format"} & set(schema), where


def test_path_identifiers_have_the_servers_bounds(document):
    for method, path, parameter in _parameters(document):
        if parameter["in"] == "path":
            assert parameter["schema"] == {"type": "integer", "minimum": 1, "maximum": MAX_ID}, (
                method,
                path,
            )


@pytest.mark.parametrize("enabled", [True, False])
def test_rate_limit_headers_are_required_exactly_when_sent(api, settings, enabled):
    settings.RATE_LIMIT_ENABLED = enabled
    headers = api.owner.get("/v1/schema?format=json").json()["components"]["headers"]
    assert {headers[name]["required"] for name in headers if name.startswith("X-RateLimit")} == {
        enabled
    }
    answer = api.owner.get("/v1/users/me")
    assert ("X-RateLimit-Limit" in answer) is enabled


def test_a_path_with_line_breaks_is_a_json_404(api):
    answer = api.owner.get("/v1/repositories/a%0Ab%0Dc%C2%85d/pulls")
    assert answer["Content-Type"] == "application/json"
    assert_error(answer, 404, "NOT_FOUND")


def test_an_archived_project_is_read_only_but_readable(api, world):
    WebhookFactory(project=world.project)
    world.project.status = Project.Status.ARCHIVED
    world.project.save()
    path = f"/v1/projects/{world.project.pk}/webhooks"
    assert len(assert_ok(api.owner.get(path))["data"]) == 1
    body = {"url": "https://hooks.example.com/x", "events": ["*"]}
    assert_error(api.owner.post(path, body, format="json"), 409, "CONFLICT")


@pytest.mark.parametrize(
    ("period", "status"),
    [
        ("100y", 200),
        ("101y", 400),
        ("36600d", 200),
        ("36601d", 400),
        ("878400h", 200),
        ("878401h", 400),
        ("5300w", 200),
        ("5301w", 400),
        ("1200m", 200),
        ("1201m", 400),
        ("01d", 400),
        ("all", 200),
        ("", 400),
    ],
)
def test_period_bounds_are_the_schemas(api, world, period, status):
    assert bool(re.fullmatch(PERIOD_PATTERN, period)) is (status == 200)
    answer = api.owner.get(f"/v1/projects/{world.project.pk}/metrics", {"period": period})
    assert answer.status_code == status, answer.content


@pytest.mark.parametrize(
    ("value", "status"),
    [
        ("issue.*", 200),
        (" , issue.created , pull_request.*,", 200),
        ("*", 200),
        ("issue.created issue.updated", 400),
        ("nope", 400),
        ("", 400),
        (" ", 400),
    ],
)
def test_event_types_are_the_schemas_pattern(api, value, status):
    assert bool(re.fullmatch(TYPES_PATTERN, value)) is (status == 200)
    assert api.owner.get("/v1/events", {"types": value}).status_code == status


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ("me", True),
        ("none", False),
        ("owner@acme.test", True),
        ("nobody@x", False),
        (str(MAX_ID + 1), False),
        ("1" * 19, False),
    ],
)
def test_assignee_takes_what_the_pattern_says(api, world, value, found):
    make_issue(world.project, world.owner, assignee_id=world.owner.pk)
    assert re.fullmatch(ASSIGNEE_PATTERN, value)
    body = assert_ok(api.owner.get(f"/v1/projects/{world.project.pk}/issues", {"assignee": value}))
    assert bool(body["data"]) is found


@pytest.mark.parametrize("value", ["", "0x1", "-1", "abc", "me@", "@x"])
def test_assignee_refuses_what_the_pattern_refuses(api, world, value):
    assert not re.fullmatch(ASSIGNEE_PATTERN, value)
    answer = api.owner.get(f"/v1/projects/{world.project.pk}/issues", {"assignee": value})
    assert_error(answer, 400, "BAD_REQUEST")


def test_free_text_filters_take_an_empty_value_as_none(api, world):
    make_issue(world.project, world.owner)
    path = f"/v1/projects/{world.project.pk}/issues"
    for name in FREE_TEXT:
        assert len(assert_ok(api.owner.get(path, {name: ""}))["data"]) == 1
    for name in ("status", "type", "priority", "assignee", "created_after", "sort"):
        assert_error(api.owner.get(path, {name: ""}), 400, "BAD_REQUEST")


@pytest.mark.parametrize(
    "query", [{"last_event_id": str(MAX_ID + 1)}, {"last_event_id": ""}, {"project_id": "0"}]
)
def test_stream_parameters_out_of_bounds_are_400(api, query):
    assert_error(api.owner.get("/v1/events/stream", query), 400, "BAD_REQUEST")


def test_an_empty_last_event_id_header_is_400(api):
    answer = api.owner.get("/v1/events/stream", HTTP_LAST_EVENT_ID="")
    assert_error(answer, 400, "BAD_REQUEST")


def test_without_credentials_401_comes_before_the_form(world):
    issue = make_issue(world.project, world.owner)
    anonymous = APIClient()
    answer = anonymous.patch(
        f"/v1/issues/{issue.pk}", {"title": "x"}, format="json", HTTP_IF_MATCH="0"
    )
    assert_error(answer, 401, "UNAUTHORIZED")
    answer = anonymous.post(
        f"/v1/projects/{world.project.pk}/issues",
        {"title": "x"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="\u00e9",
    )
    assert_error(answer, 401, "UNAUTHORIZED")
