"""Writes ``collab_client/models.py`` and ``collab_client/resources.py`` from the service's
OpenAPI schema.

    python tools/generate_models.py schema.json > collab_client/models.py
    python tools/generate_models.py schema.json resources > collab_client/resources.py

(``manage.py spectacular --format openapi-json`` or ``GET /v1/schema`` gives the schema.)
Every record the API answers with becomes a dataclass, every enum a ``Literal``; request
bodies, pages and the envelope are left out (the client builds and unwraps those itself).

Every operation becomes a method of a resource class, blocking and asynchronous, named as
``collab_client/_operations.py`` says: its path parameters, query parameters, body fields,
``If-Match`` and ``Idempotency-Key`` come from the operation in the schema, once. The few
methods that are more than one call (one method for two paths, a signed push, the event
stream) are written in ``CUSTOM``, once for both clients.

The service's test suite checks that the committed modules are this script's output for the
current schema, so neither can drift from the server.
"""

import ast
import json
import keyword
import re
import subprocess
import sys
import textwrap
from pathlib import Path

HEADER = '''"""Typed records of the Collab API, generated from its OpenAPI schema by
``tools/generate_models.py``: do not edit by hand.

Every field may be ``None`` (a record read from an older or newer server may lack it); fields
a newer server adds are kept in ``extra``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ._model import Model

__all__ = [
{names}
]
'''
SKIPPED_PREFIXES = ("Paginated",)
SKIPPED = {"Error", "Success", "NullEnum"}


REQUEST_BODIES: set[str] = set()  # filled from the schema: components only ever sent


def request_bodies(schema: dict) -> set[str]:
    """Components that are the body of a request (the client builds those from arguments)."""
    names = set()
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            for media in operation.get("requestBody", {}).get("content", {}).values():
                ref = media.get("schema", {}).get("$ref")
                if ref:
                    names.add(ref.rsplit("/", 1)[1])
    return names


def is_record(name: str, schema: dict) -> bool:
    return (
        schema.get("type") == "object"
        and name not in SKIPPED
        and name not in REQUEST_BODIES
        and not name.startswith(SKIPPED_PREFIXES)
    )


def is_enum(name: str, schema: dict) -> bool:
    return "enum" in schema and name not in SKIPPED and schema.get("type") == "string"


def wrapped(opening: str, items: list[str], closing: str) -> str:
    """``opening`` items ``closing`` on one line, or one item per line past 100 characters
    (as ruff formats it)."""
    line = opening + ", ".join(items) + closing
    if len(line) <= 100:
        return line
    indent = " " * (len(opening) - len(opening.lstrip()))
    body = "".join(f"{indent}    {item},\n" for item in items)
    return f"{opening}\n{body}{indent}{closing}"


def alias_name(name: str) -> str:
    return name.removesuffix("Enum")


class Generator:
    def __init__(self, schema: dict):
        self.components = schema["components"]["schemas"]
        REQUEST_BODIES.clear()
        REQUEST_BODIES.update(request_bodies(schema))

    def ref_type(self, ref: str) -> tuple[str, str | None]:
        """The Python type of a ``$ref``, and the model it names if it is a record."""
        name = ref.rsplit("/", 1)[1]
        target = self.components[name]
        if name == "NullEnum":
            return "None", None
        if is_enum(name, target):
            return alias_name(name), None
        if is_record(name, target):
            return name, name
        return "Any", None

    def python_type(self, schema: dict) -> tuple[str, str | None, bool]:
        """(type, nested model name, nested is a list) of a property's schema."""
        if "$ref" in schema:
            python, model = self.ref_type(schema["$ref"])
            return python, model, False
        for combinator in ("allOf", "oneOf", "anyOf"):
            if combinator in schema:
                parts = [self.python_type(part) for part in schema[combinator]]
                names = [part[0] for part in parts if part[0] != "None"]
                model = next((part[1] for part in parts if part[1]), None)
                python = " | ".join(dict.fromkeys(names)) or "Any"
                return python, model, False
        kind = schema.get("type")
        if kind == "array":
            item, model, _ = self.python_type(schema.get("items", {}))
            return f"list[{item}]", model, model is not None
        if "enum" in schema and kind == "string":
            values = ", ".join(json.dumps(value) for value in schema["enum"] if value is not None)
            return (f"Literal[{values}]" if values else "str"), None, False
        return (
            {
                "integer": "int",
                "number": "float",
                "boolean": "bool",
                "string": "str",
                "object": "dict[str, Any]",
            }.get(kind or "", "Any"),
            None,
            False,
        )

    def record(self, name: str, schema: dict) -> str:
        lines = ["@dataclass(kw_only=True)", f"class {name}(Model):"]
        description = (schema.get("description") or "").strip().splitlines()
        if description:
            lines.append(f'    """{description[0].rstrip(".")}."""')
            lines.append("")
        nested: dict[str, tuple[str, bool]] = {}
        wire: dict[str, str] = {}
        for field_name, field_schema in schema.get("properties", {}).items():
            python, model, many = self.python_type(field_schema)
            attribute = field_name + "_" if keyword.iskeyword(field_name) else field_name
            if attribute != field_name:
                wire[attribute] = field_name
            if model is not None:
                nested[attribute] = (model, many)
            annotation = python if python in ("Any", "None") else f"{python} | None"
            lines.append(f"    {attribute}: {annotation} = None")
        if nested:
            entries = [f'"{k}": ("{m}", {many})' for k, (m, many) in nested.items()]
            lines.append(
                wrapped("    __nested__: ClassVar[dict[str, tuple[str, bool]]] = {", entries, "}")
            )
        if wire:
            entries = [f'"{k}": "{v}"' for k, v in wire.items()]
            lines.append(wrapped("    __wire__: ClassVar[dict[str, str]] = {", entries, "}"))
        if len(lines) == 2 or lines[-1] == "":
            lines.append("    pass")
        return "\n".join(lines)

    def module(self) -> str:
        enums = sorted(n for n, s in self.components.items() if is_enum(n, s))
        records = sorted(n for n, s in self.components.items() if is_record(n, s))
        names = sorted([alias_name(n) for n in enums] + records)
        out = [HEADER.format(names="\n".join(f'    "{n}",' for n in names))]
        for name in enums:
            values = [json.dumps(value) for value in self.components[name]["enum"]]
            out.append(wrapped(f"{alias_name(name)} = Literal[", values, "]"))
        out.append("")
        for name in records:
            out.append("")
            out.append(self.record(name, self.components[name]))
            out.append("")
        return "\n".join(out).rstrip() + "\n"


# Resources ----------------------------------------------------------------------------------

OPERATIONS_FILE = Path(__file__).resolve().parent.parent / "collab_client" / "_operations.py"
VERBS = ("get", "post", "put", "patch", "delete")
PAGING = {"cursor", "page"}
# ``{id}`` is named for the collection before it, in the singular; these otherwise.
ID_NAMES = {
    "api-keys": "key_id",
    "service-accounts": "account_id",
    "oauth-apps": "app_id",
    "authorizations": "authorization_id",
}

RESOURCES_HEADER = '''"""Every operation of the API, by resource: ``client.issues.create(...)``.

Generated from the OpenAPI schema by ``tools/generate_models.py``: do not edit by hand.

A method of a ``Collab`` resource answers the result; the same method of an ``AsyncCollab``
resource answers an awaitable of it (lists: a ``Pager`` or an ``AsyncPager``). Write methods
take the API's field names as keyword arguments; one left out is not sent (PATCH changes only
what is given). ``if_match=`` (a record's ``.etag``) makes an update or delete answer
``PreconditionFailed`` instead of overwriting a change made since it was read.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, BinaryIO

from ._resource import AsyncResource, Resource
from ._types import UNSET
from .errors import ResyncRequired
from .models import (
{models}
)
from .pagination import AsyncPager, Pager

__all__ = [
{names}
]
'''

# The methods that are more than one operation's plain call, written once for both clients:
# ``R[T]`` is the result (``T``, or ``Awaitable[T]`` for ``AsyncCollab``); ``Pager`` and
# ``Iterator`` become ``AsyncPager`` and ``AsyncIterator``. Each names the models it uses.
CUSTOM: dict[str, tuple[tuple[str, ...], str]] = {
    "projects.archive": (
        ("Project",),
        '''
    def archive(self, project_id: int, *, if_match: str | None = None) -> R[Project]:
        """PATCH the status to ``archived``."""
        return self.update(project_id, status="archived", if_match=if_match)
''',
    ),
    "members.list": (
        ("ProjectMember", "User"),
        '''
    def list(
        self,
        *,
        project_id: int | None = None,
        workspace_id: int | None = None,
        role: str | None = None,
        status: str | None = None,
        q: str | None = None,
        per_page: int | None = None,
    ) -> Pager[ProjectMember] | Pager[User]:
        """A project's team (``project_id=``) or a workspace's members (``workspace_id=``)."""
        if (project_id is None) == (workspace_id is None):
            raise TypeError("members.list takes exactly one of project_id and workspace_id")
        if project_id is not None:
            return self._page(
                ProjectMember, f"/v1/projects/{project_id}/members", per_page=per_page
            )
        return self._page(
            User,
            f"/v1/workspaces/{workspace_id}/members",
            role=role,
            status=status,
            q=q,
            per_page=per_page,
        )
''',
    ),
    "members.remove": (
        (),
        '''
    def remove(
        self,
        *,
        user_id: int,
        project_id: int | None = None,
        workspace_id: int | None = None,
        if_match: str | None = None,
    ) -> R[None]:
        """Removes a member of a project (``project_id=``) or a workspace (``workspace_id=``)."""
        if (project_id is None) == (workspace_id is None):
            raise TypeError("members.remove takes exactly one of project_id and workspace_id")
        parent = (
            f"projects/{project_id}" if project_id is not None else f"workspaces/{workspace_id}"
        )
        return self._none("DELETE", f"/v1/{parent}/members/{user_id}", if_match=if_match)
''',
    ),
    "issues.list": (
        ("Issue",),
        '''
    def list(
        self,
        project_id: int | None = None,
        *,
        status: str | Sequence[str] | None = None,
        type: str | Sequence[str] | None = None,
        priority: str | Sequence[str] | None = None,
        assignee: int | str | None = None,
        labels: str | Sequence[str] | None = None,
        mentioned: int | str | None = None,
        q: str | None = None,
        highlight: bool | None = None,
        sort: str | None = None,
        created_after: str | None = None,
        created_before: str | None = None,
        updated_after: str | None = None,
        per_page: int | None = None,
        **filters: Any,
    ) -> Pager[Issue]:
        """Issues of one project, or (without ``project_id``) of every project you see.
        ``mentioned="me"`` (or a user id): those whose comments ``@mention`` that person.
        ``q``: full-text (``'login -flaky "two factor" auth*'``); with ``sort="relevance"``
        the best match first, with ``highlight=True`` each issue's ``highlights``."""
        path = f"/v1/projects/{project_id}/issues" if project_id is not None else "/v1/issues"
        return self._page(
            Issue,
            path,
            status=status,
            type=type,
            priority=priority,
            assignee=assignee,
            labels=labels,
            mentioned=mentioned,
            q=q,
            highlight=highlight,
            sort=sort,
            created_after=created_after,
            created_before=created_before,
            updated_after=updated_after,
            per_page=per_page,
            **filters,
        )
''',
    ),
    "issues.bulk_create": (
        ("IssueBulkResult",),
        '''
    def bulk_create(
        self,
        project_id: int,
        items: Sequence[Mapping[str, Any]],
        *,
        atomic: bool = False,
        idempotency_key: str | None = None,
    ) -> R[builtins.list[IssueBulkResult]]:
        """Up to 100 issues at once, each item the keyword arguments of ``create``. One result
        per item, in order: ``.status`` 201 and ``.data``, or the item's own ``.error``; with
        ``atomic=True`` a failing item raises its error (``details["index"]``) and nothing
        is written."""
        return self._many(
            IssueBulkResult,
            "POST",
            f"/v1/projects/{project_id}/issues/bulk",
            json={"items": [dict(item) for item in items], "atomic": atomic},
            idempotency_key=idempotency_key,
        )
''',
    ),
    "issues.bulk_update": (
        ("IssueBulkResult",),
        '''
    def bulk_update(
        self, items: Sequence[Mapping[str, Any]], *, atomic: bool = False
    ) -> R[builtins.list[IssueBulkResult]]:
        """Up to 100 issues changed at once, each item ``{"id": ..., **fields of update}``.
        One result per item, in order (``.status`` 200 and ``.data``, or ``.error``)."""
        return self._many(
            IssueBulkResult,
            "PATCH",
            "/v1/issues/bulk",
            json={"items": [dict(item) for item in items], "atomic": atomic},
        )
''',
    ),
    "comments.list": (
        ("Comment",),
        '''
    def list(
        self,
        *,
        issue_id: int | None = None,
        pull_id: int | None = None,
        since: str | None = None,
        per_page: int | None = None,
    ) -> Pager[Comment]:
        """The thread of an issue (``issue_id=``) or a pull request (``pull_id=``), oldest
        first; ``since`` (ISO 8601): only comments written or edited at or after it."""
        return self._page(
            Comment, _thread(issue_id, pull_id, "list"), since=since, per_page=per_page
        )
''',
    ),
    "comments.create": (
        ("Comment",),
        '''
    def create(
        self,
        *,
        body: str,
        issue_id: int | None = None,
        pull_id: int | None = None,
        idempotency_key: str | None = None,
    ) -> R[Comment]:
        """A Markdown comment on an issue (``issue_id=``) or a pull request (``pull_id=``);
        ``@handle`` mentions a member who can see it."""
        return self._one(
            Comment,
            "POST",
            _thread(issue_id, pull_id, "create"),
            json={"body": body},
            idempotency_key=idempotency_key,
        )
''',
    ),
    "reports.issues": (
        ("Issue",),
        '''
    def issues(
        self, project_id: int, *, format: str = "csv", **filters: Any
    ) -> R[str] | R[builtins.list[Issue]]:
        """Every issue matching the issue list's filters: CSV text, or (``format="json"``)
        a list of records."""
        path = f"/v1/projects/{project_id}/reports/issues"
        params = {"format": format, **filters}
        if format == "csv":
            return self._one(str, "GET", path, params=params)
        return self._many(Issue, "GET", path, params=params)
''',
    ),
    "repositories.push": (
        ("PushAccepted",),
        '''
    def push(
        self, repository_id: int, *, secret: str, payload: dict[str, Any] | None = None
    ) -> R[PushAccepted]:
        """What a git server sends on a push: the body signed with the repository's secret."""
        body = json.dumps(payload or {}).encode()
        signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return self._one(
            PushAccepted,
            "POST",
            f"/v1/repositories/{repository_id}/push",
            content=body,
            headers={"X-Hub-Signature-256": signature, "Content-Type": "application/json"},
        )
''',
    ),
    "exports.download": (
        (),
        '''
    def download(
        self, workspace_id: int, export_id: int, *, to: str | os.PathLike[str] | BinaryIO
    ) -> R[int]:
        """Write the completed export's archive into ``to`` (a path, or a file open for bytes)
        as it streams in; answers the bytes written. ``Conflict`` until it is completed."""
        return self._download(f"/v1/workspaces/{workspace_id}/exports/{export_id}/download", to)
''',
    ),
    "events.stream": (
        ("Event",),
        '''
    def stream(
        self,
        *,
        project_id: int | None = None,
        types: Sequence[str] | str | None = None,
        last_event_id: int | None = None,
        on_resync: Callable[[ResyncRequired], Any] | None = None,
        max_reconnects: int = 20,
    ) -> Iterator[Event]:
        """Events as they happen (``for event in ...``; ``async for`` on ``AsyncCollab``)."""
        return self._stream(
            {"project_id": project_id, "types": types},
            last_event_id=last_event_id,
            on_resync=on_resync,
            max_reconnects=max_reconnects,
        )
''',
    ),
}

THREAD = """

def _thread(issue_id: int | None, pull_id: int | None, method: str) -> str:
    # A comment belongs to exactly one parent: guessing one of two ids would post to the
    # wrong thread, so naming neither or both is the caller's mistake.
    if (issue_id is None) == (pull_id is None):
        raise TypeError(f"comments.{method} takes exactly one of issue_id and pull_id")
    if issue_id is not None:
        return f"/v1/issues/{issue_id}/comments"
    return f"/v1/pulls/{pull_id}/comments"
"""


def operations_table() -> dict[str, str]:
    """``_operations.OPERATIONS`` (operationId: "resource.method"), read without importing
    the package."""
    tree = ast.parse(OPERATIONS_FILE.read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "OPERATIONS":
            return ast.literal_eval(node.value)
    raise SystemExit(f"no OPERATIONS in {OPERATIONS_FILE}")


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def singular(word: str) -> str:
    word = word.replace("-", "_")
    return word[:-3] + "y" if word.endswith("ies") else word.removesuffix("s")


def first_paragraph(text: str | None) -> str:
    paragraph = (text or "").strip().split("\n\n")[0]
    return " ".join(paragraph.split()).replace("\\", "\\\\").replace('"""', "'''")


def call(opening: str, items: list[str], closing: str) -> str:
    """A call or signature as ruff formats it: on one line, or one item a line (with the
    magic trailing comma) when that line would pass 100 characters."""
    line = opening + ", ".join(items) + closing
    if len(line) <= 100:
        return line
    indent = " " * (len(opening) - len(opening.lstrip()))
    inner = opening + "\n" + indent + "    " + ", ".join(items) + "\n" + indent + closing
    if max(len(part) for part in inner.splitlines()) <= 100:
        return inner
    body = "".join(f"{indent}    {item},\n" for item in items)
    return f"{opening}\n{body}{indent}{closing}"


class Method:
    """One generated method: a single operation of the schema."""

    def __init__(self, generator: "ResourceGenerator", path: str, verb: str, operation: dict):
        self.generator = generator
        self.path, self.verb, self.operation = path, verb.upper(), operation
        self.name = generator.operations[operation["operationId"]].split(".")[1]

    def python_path(self) -> tuple[str, list[str]]:
        """The path as Python (an f-string if it has parameters), and their names in order;
        ``{id}`` is named for the collection before it (``/v1/projects/{id}``: project_id)."""
        names: list[str] = []
        segments = self.path.split("/")
        for index, segment in enumerate(segments):
            if segment.startswith("{"):
                wire = segment[1:-1]
                collection = segments[index - 1]
                name = wire
                if wire == "id":
                    name = ID_NAMES.get(collection, f"{singular(collection)}_id")
                segments[index] = "{" + name + "}"
                names.append(name)
        text = "/".join(segments)
        return (f'f"{text}"' if names else f'"{text}"'), names

    def parameters(self, place: str) -> list[dict]:
        return [p for p in self.operation.get("parameters", []) if p["in"] == place]

    @staticmethod
    def query_type(schema: dict) -> str:
        kind = schema.get("type")
        if kind == "array":
            return "str | Sequence[str]"
        if kind == "string" and sorted(schema.get("enum") or []) == ["false", "true"]:
            return "bool"
        return {"integer": "int", "boolean": "bool", "number": "float"}.get(kind or "", "str")

    @classmethod
    def body_type(cls, schema: dict) -> str:
        kind = schema.get("type")
        if kind == "array":
            items = schema.get("items", {})
            item = "Mapping[str, Any]" if items.get("type") == "object" else cls.body_type(items)
            python = f"Sequence[{item}]"
        else:
            # References in a request body are enums of strings.
            python = {
                "integer": "int",
                "boolean": "bool",
                "number": "float",
                "object": "dict[str, Any]",
            }.get(kind or "", "str")
        return f"{python} | None" if schema.get("nullable") else python

    def body(self) -> tuple[list[str], list[str]]:
        """(keyword parameters, dict entries) of the request body's fields, the required
        parameters first."""
        content = self.operation.get("requestBody", {}).get("content", {})
        ref = content.get("application/json", {}).get("schema", {}).get("$ref")
        if not ref:
            return [], []
        component = self.generator.components[ref.rsplit("/", 1)[1]]
        required = set(component.get("required", []))
        fields = list(component.get("properties", {}).items())
        fields.sort(key=lambda item: item[0] not in required)
        arguments = []
        entries = []
        for wire, schema in fields:
            name = snake(wire)
            default = "" if wire in required else " = UNSET"
            arguments.append(f"{name}: {self.body_type(schema)}{default}")
            entries.append(f'"{wire}": {name}')
        return arguments, entries

    def result(self) -> tuple[str, str, str | None]:
        """(helper, annotation, model) of the operation's success answer."""
        for status, response in sorted(self.operation.get("responses", {}).items()):
            if not status.startswith("2"):
                continue
            schema = response.get("content", {}).get("application/json", {}).get("schema", {})
            if "$ref" in schema:  # a page: {"data": [...], "meta": ...}
                page = self.generator.components[schema["$ref"].rsplit("/", 1)[1]]
                item = page["properties"]["data"]["items"]["$ref"].rsplit("/", 1)[1]
                return "_page", f"Pager[{item}]", item
            data = schema.get("properties", {}).get("data", {})
            if "$ref" in data:
                model = data["$ref"].rsplit("/", 1)[1]
                return "_one", f"R[{model}]", model
            if data.get("type") == "array" and "$ref" in data.get("items", {}):
                model = data["items"]["$ref"].rsplit("/", 1)[1]
                return "_many", f"R[builtins.list[{model}]]", model
            break
        return "_none", "R[None]", None

    def source(self) -> tuple[str, set[str]]:
        path, path_names = self.python_path()
        query = [p for p in self.parameters("query") if p["name"] not in PAGING]
        required_query = [p for p in query if p.get("required")]
        optional_query = [p for p in query if not p.get("required")]
        body_arguments, body_entries = self.body()
        writes = self.verb in ("PUT", "PATCH", "DELETE")
        keyed = any(p["name"] == "Idempotency-Key" for p in self.parameters("header"))
        helper, annotation, model = self.result()

        arguments = ["self", *(f"{name}: int" for name in path_names)]
        arguments += [f"{p['name']}: {self.query_type(p['schema'])}" for p in required_query]
        keywords = [
            f"{p['name']}: {self.query_type(p['schema'])} | None = None" for p in optional_query
        ]
        keywords += body_arguments
        keywords += ["if_match: str | None = None"] if writes else []
        keywords += ["idempotency_key: str | None = None"] if keyed else []
        if keywords:
            arguments += ["*", *keywords]
        lines = [call(f"    def {self.name}(", arguments, f") -> {annotation}:")]
        doc = first_paragraph(self.operation.get("description") or self.operation.get("summary"))
        if doc and self.generator.descriptions.count(doc) == 1:  # not a whole view's text
            wrapped_doc = textwrap.wrap(doc, width=88, break_on_hyphens=False)
            wrapped_doc[0] = '"""' + wrapped_doc[0]
            wrapped_doc[-1] += '"""'
            lines += [f"        {line}" for line in wrapped_doc]

        names = [p["name"] for p in required_query + optional_query]
        items = [model] if model else []
        if helper == "_page":
            items += [path, *(f"{name}={name}" for name in names)]
        else:
            items += [f'"{self.verb}"', path]
            if names:
                items.append("params={" + ", ".join(f'"{n}": {n}' for n in names) + "}")
            if body_entries:
                items.append("json={" + ", ".join(body_entries) + "}")
            items += ["if_match=if_match"] if writes else []
            items += ["idempotency_key=idempotency_key"] if keyed else []
        lines.append(call(f"        return self.{helper}(", items, ")"))
        return "\n".join(lines), {model} if model else set()


class ResourceGenerator:
    def __init__(self, schema: dict):
        self.components = schema["components"]["schemas"]
        self.operations = operations_table()
        self.methods: dict[str, dict[str, Method | None]] = {}
        self.descriptions = [
            first_paragraph(operation.get("description") or operation.get("summary"))
            for operations in schema["paths"].values()
            for verb, operation in operations.items()
            if verb in VERBS
        ]
        for path in sorted(schema["paths"]):
            for verb in VERBS:
                operation = schema["paths"][path].get(verb)
                if operation is None or operation.get("operationId") not in self.operations:
                    continue
                method = Method(self, path, verb, operation)
                resource = self.operations[operation["operationId"]].split(".")[0]
                self.methods.setdefault(resource, {})[method.name] = method
        for dotted in CUSTOM:
            resource, name = dotted.split(".")
            self.methods.setdefault(resource, {})[name] = None

    def class_name(self, resource: str) -> str:
        """``api_keys``: ``ApiKeys``; a name a model has already: ``MetricsResource``."""
        name = "".join(part.capitalize() for part in resource.split("_"))
        return name + "Resource" if name in self.components else name

    def class_body(self, resource: str) -> tuple[str, set[str]]:
        models: set[str] = set()
        methods = []
        for name, method in sorted(self.methods[resource].items()):
            if method is None:
                used, text = CUSTOM[f"{resource}.{name}"]
                text = text.strip("\n")
            else:
                text, used = method.source()
            models.update(used)
            methods.append(text)
        return "\n\n".join(methods), models

    def module(self) -> str:
        classes = []
        models: set[str] = set()
        names = []
        for resource in sorted(self.methods):
            body, used = self.class_body(resource)
            models.update(used)
            name = self.class_name(resource)
            names += [name, f"Async{name}"]
            classes.append(f"class {name}(Resource):\n{spell(body, asynchronous=False)}")
            classes.append(f"class Async{name}(AsyncResource):\n{spell(body, asynchronous=True)}")
        header = RESOURCES_HEADER.format(
            models="\n".join(f"    {m}," for m in sorted(models)),
            names="\n".join(f'    "{n}",' for n in sorted(names)),
        )
        return header + "\n\n" + "\n\n\n".join(classes) + "\n" + THREAD


def spell(body: str, *, asynchronous: bool) -> str:
    """A class body with ``R[T]`` spelled for one client: ``T`` or ``Awaitable[T]``."""
    if asynchronous:
        body = re.sub(r"\bPager\[", "AsyncPager[", body)
        body = re.sub(r"\bIterator\[", "AsyncIterator[", body)
        return re.sub(r"\bR\[", "Awaitable[", body)
    out = []
    index = 0
    for match in re.finditer(r"\bR\[", body):
        if match.start() < index:
            continue
        depth, end = 1, match.end()
        while depth:
            depth += {"[": 1, "]": -1}.get(body[end], 0)
            end += 1
        out.append(body[index : match.start()] + body[match.end() : end - 1])
        index = end
    return "".join(out) + body[index:]


def formatted(source: str, filename: str) -> str:
    """``source`` as ``ruff format`` (the project's pinned version and settings) leaves it."""
    return subprocess.run(  # noqa: S603 - the project's own formatter
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", filename, "-"],
        input=source,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


SHARED = ("#/components/responses/", "#/components/parameters/", "#/components/headers/")


def inlined(node, components: dict):
    """``node`` with the answers, parameters and headers the schema shares under
    ``components`` written out where they are referred to (schemas stay referred to)."""
    if isinstance(node, list):
        return [inlined(item, components) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref", "")
    if ref.startswith(SHARED):
        kind, name = ref.removeprefix("#/components/").split("/")
        return inlined(components[kind][name], components)
    return {key: inlined(value, components) for key, value in node.items()}


def main() -> None:
    with open(sys.argv[1]) as source:
        schema = json.load(source)
    schema["paths"] = inlined(schema["paths"], schema.get("components", {}))
    if sys.argv[2:] == ["resources"]:
        target = OPERATIONS_FILE.with_name("resources.py")
        sys.stdout.write(formatted(ResourceGenerator(schema).module(), str(target)))
    else:
        sys.stdout.write(Generator(schema).module())


if __name__ == "__main__":
    main()
