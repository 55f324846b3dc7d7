"""Property-based tests of the whole API against its own OpenAPI document.

Schemathesis reads ``GET /v1/schema`` from the WSGI application, generates requests for
every operation (valid ones and, in its negative mode, invalid ones) and checks each answer:
no 5xx, a documented status, a documented content type and headers, and a body that matches
the documented schema. The requests run in-process, inside the test's database transaction.

Path and body identifiers are steered onto the rows of the fixture world (and one id that
exists nowhere), so most requests reach real resources instead of stopping at a 404.
"""

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import schemathesis
from django.core.management import call_command
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import override_settings
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.config._checks import (
    NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES,
    NegativeDataRejectionConfig,
)
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import (
    allow_header_conformance,
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from accounts import services as account_services
from accounts.models import ApiKey, Role
from collab.api.scopes import ALL_SCOPES
from collab.wsgi import application
from gitintegration import services as git_services
from projects.models import Project
from tests.conftest import exports_settings
from tests.factories import (
    PASSWORD,
    ExportFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    completed_export,
    make_api_key,
)
from tests.openapi import inlined

pytestmark = [pytest.mark.fuzz]

schema = schemathesis.openapi.from_wsgi("/v1/schema", application)
# The event stream never ends, so it cannot be fetched whole; tests/notifications/test_stream.py
# checks its answers (errors in the envelope, frames) with a real SSE client.
STREAM = "/v1/events/stream"
DOWNLOAD = "/v1/workspaces/{workspace_id}/exports/{export_id}/download"
fuzzed = schema.exclude(path=STREAM)
# A stale If-Match is answered 412 before the body is read (RFC 9110, section 13.2.1): for a
# request that is also invalid in its body, 412 is as much a refusal as 422.
schema.config.checks.negative_data_rejection = NegativeDataRejectionConfig(
    expected_statuses=[*NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES, "412"]
)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    unsupported_method,
    allow_header_conformance,
]
# Bounded and deterministic, so the file takes about a minute and CI never flakes. To hunt
# for new bugs: COLLAB_FUZZ_EXAMPLES=200 COLLAB_FUZZ_RANDOM=1 pytest tests/api/test_schemathesis.py
BOUNDED = settings(
    max_examples=int(os.environ.get("COLLAB_FUZZ_EXAMPLES", "25")),
    deadline=None,
    derandomize=not os.environ.get("COLLAB_FUZZ_RANDOM"),
    # The world fixture is shared by the examples of one operation on purpose.
    suppress_health_check=list(HealthCheck),
)
NOWHERE = 987_654_321  # an identifier no row has: the "does not exist" answer


@pytest.fixture(autouse=True)
def keep_the_test_transaction():
    """Requests go through the real WSGI handler, which closes the database connection at
    the end of each one (and with it the test's transaction). Django's own test client
    turns that off the same way."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def git_world(world, origin):
    """A real repository (a copy of the run's origin: ``main`` and ``feature``, among others)
    registered in the world's project and synced, with one open pull request, so git
    operations meet real branches."""
    repository = git_services.repository_create(
        project=world.project, actor=world.owner, name="origin", clone_url=origin.url
    )
    git_services.repository_sync(repository_id=repository.pk)
    pull = git_services.pull_request_create(
        repository=repository,
        actor=world.owner,
        title="Feature",
        head="feature",
        base="main",
    )
    return repository, pull


@dataclass
class Folders:
    """What the module's world keeps outside the database: the origin its repository was
    cloned from, the repository's mirror, and the exports' storage."""

    root: Path

    @property
    def live(self) -> list[Path]:
        return [self.root / name for name in ("origin.git", "work", "mirrors", "exports")]

    def settings(self) -> dict:
        return {"GIT_STORAGE_DIR": self.root / "mirrors", **exports_settings(self.root / "exports")}

    def keep(self) -> None:
        for folder in self.live:
            if folder.exists():
                shutil.copytree(folder, self.root / "kept" / folder.name, symlinks=True)

    def restore(self) -> None:
        """Each folder as the world left it: a merge pushed to the origin, a deleted export's
        archive, a mirror fetched anew are rolled back with the test's rows."""
        for folder in self.live:
            kept = self.root / "kept" / folder.name
            if kept.exists():
                shutil.rmtree(folder, ignore_errors=True)
                shutil.copytree(kept, folder, symlinks=True)


@pytest.fixture(scope="module")
def world_and_ids(module_db, world_once, built_origin, tmp_path_factory):
    """The rows requests are steered onto, by kind of identifier, built once for the module
    (``module_db``: each test's writes roll back) with the folders they need (``Folders``,
    restored for each test).

    Beyond the conftest world: an archived project (writes under it answer 409), a public
    project of another workspace (visible, not writable), a pending invitation, a
    second, revoked key of the owner, a real git repository with a pull request, and an
    export completed (its archive stored) beside one still pending.
    """
    world = world_once
    folders = Folders(tmp_path_factory.mktemp("schemathesis-world"))
    origin = built_origin.copy_to(folders.root)
    with module_db.unblock(), override_settings(**folders.settings()):
        archived = ProjectFactory(
            workspace=world.acme, name="Old", created_by=world.owner, status=Project.Status.ARCHIVED
        )
        public = ProjectFactory(
            workspace=world.globex, name="Open", visibility=Project.Visibility.PUBLIC
        )
        invitee = UserFactory(email="invitee@example.test")
        MembershipFactory(workspace=world.globex, user=invitee, role=Role.VIEWER)
        invitation, _token = account_services.invitation_create(
            workspace=world.acme,
            inviter=world.owner,
            email="newcomer@example.test",
            role=Role.DEVELOPER,
            projects=[world.project],
        )
        make_api_key(world.owner, ["projects:read"], revoked=True, name="old key")
        users = [world.owner, world.admin, world.developer, world.viewer, world.outsider, invitee]
        repository, pull = git_world(world, origin)
        exports = [
            completed_export(world.acme, world.owner).pk,
            ExportFactory(workspace=world.acme, created_by=world.owner).pk,
        ]
        keys = list(ApiKey.objects.filter(user=world.owner).values_list("pk", flat=True))
    folders.keep()
    ids = {
        "export": exports,
        "repository": [repository.pk],
        "pull": [pull.pk],
        "project": [world.project.pk, archived.pk, public.pk, world.other_project.pk],
        "workspace": [world.acme.pk, world.globex.pk],
        "user": [user.pk for user in users],
        "invitation": [invitation.pk],
        "api_key": keys,
    }
    return ids, folders


@pytest.fixture
def world(world_of_module, world_and_ids):
    """The module's world, built once (``world_once``), each test with a copy of its
    instances."""
    return world_of_module


@pytest.fixture
def ids(world_and_ids, world, settings) -> dict[str, list[int]]:
    """The module's identifiers, its folders as the world left them and the settings that
    name them."""
    known, folders = world_and_ids
    for name, value in folders.settings().items():
        setattr(settings, name, value)
    folders.restore()
    return known


def _kind(path: str, name: str) -> str | None:
    if name == "id":
        if path.count("/") < 2:  # an "id" in a body, where it is read-only and ignored
            return None
        return {
            "projects": "project",
            "workspaces": "workspace",
            "users": "user",
            "api-keys": "api_key",
            "repositories": "repository",
            "pulls": "pull",
        }.get(path.split("/")[2])
    return {
        "user_id": "user",
        "invitation_id": "invitation",
        "workspace_id": "workspace",
        "projects": "project",
        "repository_id": "repository",
        "pull_id": "pull",
        "export_id": "export",
    }.get(name)


def _steer(value, known: list[int]):
    """Map a generated integer onto a known id, or onto NOWHERE; leave anything else alone."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return str(_steer(int(value), known))
    if isinstance(value, bool) or not isinstance(value, int):
        return value
    # 1 (the boundary schemathesis tries most) is the first row; 0 is NOWHERE.
    choices = [*known, NOWHERE]
    return choices[(value - 1) % len(choices)]


def _is_positive(case, location: ParameterLocation) -> bool:
    component = case.meta.components.get(location) if case.meta else None
    return component is None or component.mode == GenerationMode.POSITIVE


def steer_onto_world(case, ids: dict[str, list[int]]) -> None:
    """Point valid identifiers at the world's rows; invalid ones stay as generated."""
    path = case.operation.path
    if case.path_parameters and _is_positive(case, ParameterLocation.PATH):
        for name, value in case.path_parameters.items():
            if kind := _kind(path, name):
                case.path_parameters[name] = _steer(value, ids[kind])
    if case.query and "workspace_id" in case.query and _is_positive(case, ParameterLocation.QUERY):
        case.query["workspace_id"] = _steer(case.query["workspace_id"], ids["workspace"])
    if isinstance(case.body, dict) and _is_positive(case, ParameterLocation.BODY):
        for name, value in case.body.items():
            kind = _kind("", name)
            if kind and isinstance(value, list):
                case.body[name] = [_steer(item, ids[kind]) for item in value]
            elif kind:
                case.body[name] = _steer(value, ids[kind])


def call_and_check(case, ids, credential: str):
    steer_onto_world(case, ids)
    # A case testing what happens without credentials must go without them.
    negated = case.operation.schema.is_security_param_negated(case)
    headers = {} if negated else {"Authorization": f"Bearer {credential}"}
    case.call_and_validate(headers=headers, checks=CHECKS)


@pytest.fixture
def owner_key(world) -> str:
    return make_api_key(world.owner, ALL_SCOPES, name="schemathesis")


@pytest.fixture
def owner_jwt(world) -> str:
    return account_services.auth_login(email=world.owner.email, password=PASSWORD)["access_token"]


@fuzzed.parametrize()
@BOUNDED
def test_every_operation_as_owner_with_full_key(case, ids, owner_key):
    call_and_check(case, ids, owner_key)


# Key management refuses API keys (403, checked above); with a JWT it really runs.
@schema.include(path_regex=r"^/v1/api-keys").parametrize()
@BOUNDED
def test_api_keys_as_owner_with_jwt(case, ids, owner_jwt):
    call_and_check(case, ids, owner_jwt)


def test_schema_generates_without_warnings(tmp_path):
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yml")
    )


def _operations():
    for path, item in inlined(schema.raw_schema)["paths"].items():
        for method, operation in item.items():
            yield method.upper(), path, operation


def test_schema_covers_the_api():
    operations = {(method, path) for method, path, _ in _operations()}
    assert {
        ("GET", "/v1/projects"),
        ("POST", "/v1/projects"),
        ("DELETE", "/v1/projects/{id}"),
        ("POST", "/v1/auth/login"),
        ("POST", "/v1/invitations/accept"),
        ("GET", "/v1/api-keys"),
    } <= operations
    assert len(operations) >= 29


def test_only_sign_in_operations_go_without_credentials():
    for method, path, operation in _operations():
        public = path.startswith("/v1/auth/") or path == "/v1/invitations/accept"
        if path == "/v1/repositories/{repository_id}/push":
            # Authenticated by the body's signature (X-Hub-Signature-256), not by a Bearer.
            assert operation["security"] == [], (method, path)
            assert "401" in operation["responses"] and "403" not in operation["responses"]
            names = {parameter["name"] for parameter in operation["parameters"]}
            assert "X-Hub-Signature-256" in names
        elif public:
            assert operation["security"] == [], (method, path)
            assert "403" not in operation["responses"], (method, path)
        else:
            assert operation["security"] == [{"bearer": []}], (method, path)
            assert "401" in operation["responses"] and "403" in operation["responses"]


def test_every_response_is_documented_as_the_envelope():
    schemas = schema.raw_schema["components"]["schemas"]
    for method, path, operation in _operations():
        for status, response in operation["responses"].items():
            if path == STREAM and status == "200":
                assert list(response["content"]) == ["text/event-stream"]
                continue
            if path == DOWNLOAD and status == "200":  # an export's archive, as stored
                assert list(response["content"]) == ["application/gzip"]
                continue
            if status == "304":  # a conditional GET's "not modified": no body at all
                assert method == "GET" and "content" not in response, (method, path)
                assert "ETag" in response["headers"], (method, path)
                continue
            body = response["content"]["application/json"]["schema"]
            if status >= "400":
                assert body == {"$ref": "#/components/schemas/Error"}, (method, path, status)
                continue
            if "$ref" in body:  # a page: {success, data: [...], meta}
                body = schemas[body["$ref"].rsplit("/", 1)[1]]
                assert body["required"] == ["success", "data", "meta"], (method, path)
                assert "Link" in response["headers"], (method, path)
            assert body["properties"]["success"] == {"$ref": "#/components/schemas/Success"}
            assert "data" in body["required"], (method, path, status)
            if status == "201":
                assert response["headers"]["Location"]["required"] is True, (method, path)


def test_identifiers_and_filters_are_typed():
    operations = {(method, path): operation for method, path, operation in _operations()}
    for (method, path), operation in operations.items():
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "path":
                assert parameter["schema"]["type"] == "integer", (method, path, parameter)
    names = {p["name"] for p in operations[("GET", "/v1/projects")]["parameters"]}
    assert {"page", "per_page", "status", "visibility", "workspace_id", "q"} <= names
    names = {p["name"] for p in operations[("GET", "/v1/workspaces/{id}/members")]["parameters"]}
    assert {"role", "status", "q"} <= names
