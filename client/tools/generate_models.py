"""Writes ``collab_client/models.py`` from the service's OpenAPI schema.

    python tools/generate_models.py schema.json > collab_client/models.py

(``manage.py spectacular --format openapi-json`` or ``GET /v1/schema`` gives the schema.)
Every record the API answers with becomes a dataclass, every enum a ``Literal``; request
bodies, pages and the envelope are left out (the client builds and unwraps those itself).
The service's test suite checks that the committed module is this script's output for the
current schema, so the models cannot drift from the server.
"""

import json
import keyword
import sys

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


def main() -> None:
    with open(sys.argv[1]) as source:
        schema = json.load(source)
    sys.stdout.write(Generator(schema).module())


if __name__ == "__main__":
    main()
