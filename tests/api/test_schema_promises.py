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
from tests.conftest import assert_error, assert_ok, jwt_client
from tests.factories import WebhookFactory, make_issue

MAX_ID = 2**63 - 1


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


# Links ------------------------------------------------------------------------------------------

LINK_EXPRESSION = re.compile(r"\$response\.body#/data(/0)?/id|\$request\.path\.(\w+)")


def _by_id(document) -> dict[str, tuple[str, str, dict]]:
    return {
        operation["operationId"]: (method, path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }


def _path_parameters(path: str) -> set[str]:
    return set(re.findall(r"\{(\w+)\}", path))


def test_links_name_real_operations_and_fill_their_paths(document):
    operations = _by_id(document)
    count = 0
    for source_id, (_method, source_path, source) in operations.items():
        for status, response in source["responses"].items():
            for name, link in response.get("links", {}).items():
                count += 1
                where = (source_id, status, name)
                assert status.startswith("2"), where
                _target_method, target_path, _target = operations[link["operationId"]]
                assert set(link["parameters"]) == _path_parameters(target_path), where
                for expression in link["parameters"].values():
                    match = LINK_EXPRESSION.fullmatch(expression)
                    assert match, (where, expression)
                    assert match[2] is None or match[2] in _path_parameters(source_path), where
    assert count >= 90


def _bodies(world, origin, receiver) -> dict[str, dict]:
    """What each operation answering a resource is sent in the walk below, in the order the
    walk makes them (a merge last: it closes its pull request)."""
    return {
        "projects_create": {"name": "Linked", "workspace_id": world.acme.pk},
        "workspaces_create": {"name": "Linked"},
        "api_keys_create": {"name": "linked", "scopes": ["projects:read"]},
        "projects_issues_create": {"title": "Linked issue"},
        "projects_labels_create": {"name": "linked"},
        "projects_members_create": {"user_id": world.admin.pk},
        "projects_webhooks_create": {"url": receiver.url, "events": ["*"]},
        "workspaces_webhooks_create": {"url": receiver.url, "events": ["export.*"]},
        "projects_repositories_create": {"name": "origin", "clone_url": origin.url},
        "repositories_sync_create": {},
        "repositories_pulls_create": {"title": "Feature", "head": "feature", "base": "main"},
        "pulls_comments_create": {"body": "A linked comment"},
        "pulls_reviews_create": {"state": "commented", "body": "Looks fine"},
        "issues_comments_create": {"body": "A linked comment"},
        "webhooks_ping_create": {},
        "webhooks_deliveries_redeliver_create": {},
        "workspaces_invitations_create": {"email": "linked@example.test"},
        "workspaces_service_accounts_create": {"name": "Linked bot"},
        "service_accounts_keys_create": {"name": "linked", "scopes": ["issues:read"]},
        "workspaces_oauth_apps_create": {
            "name": "Linked app",
            "redirect_uris": ["https://app.example.test/callback"],
            "scopes": ["issues:read"],
        },
        # Answers 202; built at once here (the walk runs what a commit queues), so the
        # workspace's list of exports has an item to follow.
        "workspaces_exports_create": {},
        "pulls_merge_create": {},
    }


def _evaluate(expression: str, body: dict, request_path: dict[str, int]):
    if expression.startswith("$request.path."):
        return request_path[expression.removeprefix("$request.path.")]
    value = body
    for part in expression.removeprefix("$response.body#/").split("/"):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def _route(document, location: str) -> tuple[str | None, dict[str, int]]:
    for path in document["paths"]:
        pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[0-9]+)", re.escape(path))
        if match := re.fullmatch(pattern, location):
            return path, {name: int(value) for name, value in match.groupdict().items()}
    return None, {}


def test_links_lead_from_real_answers_to_what_they_name(
    world, origin, receiver, settings, tmp_path, django_capture_on_commit_callbacks, exports_storage
):
    """A walk over the links from the creates that need no path parameter: each answer's
    link expressions are evaluated on its body, and the target is called. A create answering
    201 with the ``Location`` of an item links to every operation at that path, with its
    identifiers; reads answer 200, writes find what they name (no 404), deletes (last,
    newest first) answer 200. The lists reached are read again once the walk made their
    items, and followed from their first item. Every create of the schema is reached."""
    settings.GIT_STORAGE_DIR = tmp_path / "mirrors"
    client = jwt_client(world.owner)  # key management takes no API key
    document = client.get("/v1/schema?format=json").json()
    operations = _by_id(document)
    bodies = _bodies(world, origin, receiver)
    creates = {
        operation_id
        for operation_id, (method, _path, operation) in operations.items()
        if method == "post" and "201" in operation["responses"]
    }
    assert creates <= set(bodies), creates - set(bodies)

    def call(operation_id, parameters, body=None):
        method, path, _operation = operations[operation_id]
        with django_capture_on_commit_callbacks(execute=True):
            return getattr(client, method)(path.format(**parameters), body, format="json")

    def targets(operation_id, status, answer, parameters):
        links = operations[operation_id][2]["responses"][status].get("links", {})
        for link in links.values():
            values = {
                name: _evaluate(expression, answer.json(), parameters)
                for name, expression in link["parameters"].items()
            }
            assert all(isinstance(value, int) for value in values.values()), (link, values)
            yield link["operationId"], values

    roots = [i for i in bodies if i in operations and not _path_parameters(operations[i][1])]
    pending = [(operation_id, {}) for operation_id in roots]
    made, seen, lists, writes, deletes = set(), set(), [], [], []
    while pending:
        pending.sort(key=lambda entry: list(bodies).index(entry[0]))
        operation_id, parameters = pending.pop(0)
        if operation_id in made:
            continue
        made.add(operation_id)
        answer = call(operation_id, parameters, bodies[operation_id])
        status = str(answer.status_code)
        assert status.startswith("2"), (operation_id, answer.content)
        followed = dict(targets(operation_id, status, answer, parameters))
        item_path, identifiers = _route(document, answer.get("Location", ""))
        if status == "201" and item_path and item_path.endswith("}"):  # an item, not a list
            at_item = {i for i, (_m, path, _o) in operations.items() if path == item_path}
            assert {i: followed.get(i) for i in at_item} == dict.fromkeys(at_item, identifiers)
        for target, values in followed.items():
            method, _path, target_operation = operations[target]
            if (target, *values.items()) in seen:  # a sync links to its repository again
                continue
            seen.add((target, *values.items()))
            if target in bodies:
                pending.append((target, values))
            elif method == "get":
                read = call(target, values)
                assert read.status_code == 200, (operation_id, target, read.content)
                if "links" in target_operation["responses"]["200"]:
                    lists.append((target, values))
            elif method == "delete":
                deletes.insert(0, (target, values))
            else:
                writes.append((target, values))
    assert made == set(bodies)
    assert lists and writes and deletes
    for operation_id, parameters in lists:  # the lists hold what the walk made by now
        answer = call(operation_id, parameters)
        for target, values in targets(operation_id, "200", answer, parameters):
            method = operations[target][0]
            if method == "get":
                assert call(target, values).status_code == 200, (operation_id, target)
            elif method != "delete":  # the first item's delete is its create's, walked last
                writes.append((target, values))
    for operation_id, parameters in writes:
        answer = call(operation_id, parameters, {})
        assert answer.status_code != 404 and answer.status_code < 500, (operation_id, answer)
    for operation_id, parameters in deletes:
        answer = call(operation_id, parameters)
        assert answer.status_code == 200, (operation_id, answer.content)
