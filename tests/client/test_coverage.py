"""The client keeps up with the server: every operation of the live schema has a method,
and the committed models and resources are what the generator makes of the current schema."""

import json
import subprocess
import sys
from pathlib import Path

import collab_client
import pytest
from collab_client._operations import OPERATIONS
from django.conf import settings
from drf_spectacular.generators import SchemaGenerator

CLIENT = Path(settings.BASE_DIR) / "client"


@pytest.fixture(scope="module")
def schema() -> dict:
    # As GET /v1/schema serves it (rendered to JSON: enums and the like as plain values).
    return json.loads(json.dumps(SchemaGenerator().get_schema(request=None, public=True)))


def _operation_ids(schema: dict) -> set[str]:
    return {
        operation["operationId"]
        for operations in schema["paths"].values()
        for method, operation in operations.items()
        if method in {"get", "post", "put", "patch", "delete"}
    }


def test_every_operation_of_the_schema_has_a_client_method(schema):
    missing = sorted(_operation_ids(schema) - set(OPERATIONS))
    assert missing == [], f"operations without a client method: {missing}"
    stale = sorted(set(OPERATIONS) - _operation_ids(schema))
    assert stale == [], f"client methods of operations the server no longer has: {stale}"
    client = collab_client.Collab("http://127.0.0.1:9", api_key="clb_unused")
    for operation_id, dotted in OPERATIONS.items():
        resource, method = dotted.split(".")
        assert callable(getattr(getattr(client, resource, None), method, None)), (
            operation_id,
            dotted,
        )


def test_the_resources_the_issue_names_exist():
    client = collab_client.Collab("http://127.0.0.1:9", api_key="clb_unused")
    names = ["projects", "members", "issues", "labels", "repositories", "pulls", "webhooks"]
    names += ["deliveries", "events", "metrics", "reports", "dashboard", "users"]
    names += ["invitations", "api_keys", "rate_limit"]
    for name in names:
        assert hasattr(client, name), name


@pytest.mark.parametrize(
    ("module", "arguments"), [("models.py", []), ("resources.py", ["resources"])]
)
def test_the_committed_modules_are_the_generators_output(schema, tmp_path, module, arguments):
    source = tmp_path / "schema.json"
    source.write_text(json.dumps(schema))
    generated = subprocess.run(  # noqa: S603 - our own script
        [sys.executable, str(CLIENT / "tools" / "generate_models.py"), str(source), *arguments],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    committed = (CLIENT / "collab_client" / module).read_text()
    target = f"client/collab_client/{module}"
    command = " ".join(["python client/tools/generate_models.py <schema.json>", *arguments])
    assert generated == committed, f"{target} is out of date: run {command} > {target}"
