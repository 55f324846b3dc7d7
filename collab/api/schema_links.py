"""OpenAPI links (3.0 Link Objects) from the answers that name a resource to the operations
on it, derived from the schema's own shape, so that a new route gets its links unasked.

A resource's *item path* ends in a path parameter (``/v1/issues/{id}``); what it answers is
the component its reads and writes share (``Issue``). Two components are one resource when
one has every property of the other: a create may answer with more than its item shows (an
API key's secret, a repository's push URL, once), a list with less (a delivery's summary).

- A POST answering a resource (a create, and an action that answers what it made or
  touched: a ping's delivery, a sync's repository) links to every operation of its item
  path (the one right under its own collection where there is one, else every item path of
  its resource), and to every operation under it that needs no other parameter: the issues
  and members of a project, the comments of an issue, the merge of a pull request.
- A list (a GET answering ``data: [...]``) links to the get of its items.

The new resource's identifier is taken from the answer (``$response.body#/data/id``, the
first item's for a list); a parameter before it in the target's path (the webhook of a
delivery) from the request's path, when both paths agree up to it. A target whose
parameters cannot all be filled so is not linked.
"""

from dataclasses import dataclass, field

IDENTIFIER = "id"
PRODUCER_METHODS = {"post"}


@dataclass
class Operation:
    path: str
    method: str
    definition: dict
    segments: list[str] = field(init=False)
    shape: list[str] = field(init=False)

    def __post_init__(self):
        self.segments = self.path.split("/")
        self.shape = ["{}" if _is_parameter(part) else part for part in self.segments]

    @property
    def operation_id(self) -> str:
        return self.definition["operationId"]

    @property
    def parameter_positions(self) -> list[int]:
        return [index for index, part in enumerate(self.segments) if _is_parameter(part)]


def _is_parameter(segment: str) -> bool:
    return segment.startswith("{") and segment.endswith("}")


def _name(segment: str) -> str:
    return segment[1:-1]


def _component_name(schema: dict) -> str | None:
    ref = schema.get("$ref", "")
    return ref.rsplit("/", 1)[1] if ref.startswith("#/components/schemas/") else None


class Components:
    def __init__(self, schemas: dict):
        self.schemas = schemas

    def is_resource(self, name: str | None) -> bool:
        properties = self.schemas.get(name or "", {}).get("properties", {})
        return properties.get(IDENTIFIER, {}).get("type") == "integer"

    def same_resource(self, one: str, other: str) -> bool:
        if one == other:
            return True
        mine = set(self.schemas[one].get("properties", {}))
        theirs = set(self.schemas[other].get("properties", {}))
        return mine <= theirs or theirs <= mine

    def answer(self, response: dict) -> tuple[str, str] | None:
        """("one" or "many", component) of a success answer's ``data``, for a resource. An
        answer that may come in another form too (a report as CSV) has no expression to
        evaluate on."""
        if set(response.get("content", {})) != {"application/json"}:
            return None
        body = response["content"]["application/json"].get("schema", {})
        if page := _component_name(body):  # a page: {success, data: [...], meta}
            body = self.schemas.get(page, {})
        data = body.get("properties", {}).get("data", {})
        kind, name = "one", _component_name(data)
        if data.get("type") == "array":
            kind, name = "many", _component_name(data.get("items", {}))
        return (kind, name) if name and self.is_resource(name) else None


def _operations(document: dict) -> list[Operation]:
    return [
        Operation(path, method, definition)
        for path, item in document["paths"].items()
        for method, definition in item.items()
        if isinstance(definition, dict) and "operationId" in definition
    ]


def _answers(components: Components, operation: Operation):
    for status, response in operation.definition.get("responses", {}).items():
        if status.startswith("2") and (answer := components.answer(response)):
            yield status, response, answer


class Paths:
    """The item paths of the schema and the operations at and under them."""

    def __init__(self, operations: list[Operation], components: Components):
        self.components = components
        self.operations = operations
        self.items: dict[str, list[str]] = {}  # item path -> the components it answers
        for operation in operations:
            if not _is_parameter(operation.segments[-1]):
                continue
            names = self.items.setdefault(operation.path, [])
            for _status, _response, (kind, name) in _answers(components, operation):
                if kind == "one" and name not in names:
                    names.append(name)

    def items_of(self, source: Operation, component: str) -> list[str]:
        """The item path right under ``source``'s collection where there is one (the member
        a project's POST members adds, the key a service account's POST keys makes: that
        item, not every other of its kind); else the item paths of ``component``'s
        resource."""
        under, alike = [], []
        for path, names in self.items.items():
            item = Operation(path, "", {})
            if item.shape[:-1] == source.shape:
                under.append(path)
            elif any(self.components.same_resource(component, n) for n in names):
                alike.append(path)
        return under or alike

    def at_or_under(self, item_path: str) -> list[Operation]:
        """The operations at the item path and under it that need no other parameter."""
        item = Operation(item_path, "", {})
        width = len(item.parameter_positions)
        return [
            operation
            for operation in self.operations
            if operation.shape[: len(item.shape)] == item.shape
            and len(operation.parameter_positions) == width
        ]


def _parameters(source: Operation, target: Operation, identifier: str) -> dict[str, str] | None:
    """The link's parameters: the target's last path parameter is ``identifier``; each one
    before it is the source's own, where both paths agree up to it. None if one cannot be
    filled."""
    positions = target.parameter_positions
    parameters = {_name(target.segments[positions[-1]]): identifier}
    for position in positions[:-1]:
        if source.shape[: position + 1] != target.shape[: position + 1]:
            return None
        parameters[_name(target.segments[position])] = (
            f"$request.path.{_name(source.segments[position])}"
        )
    return parameters


def _links(source: Operation, targets: list[Operation], identifier: str) -> dict[str, dict]:
    links = {}
    for target in targets:
        parameters = _parameters(source, target, identifier)
        if parameters is not None:
            links[target.operation_id] = {
                "operationId": target.operation_id,
                "parameters": dict(sorted(parameters.items())),
            }
    return links


def postprocess_links(result, generator, request, public):
    """Add ``links`` to the success answers that name a resource (see the module's doc)."""
    components = Components(result.get("components", {}).get("schemas", {}))
    operations = _operations(result)
    paths = Paths(operations, components)
    for source in operations:
        for _status, response, (kind, component) in _answers(components, source):
            if kind == "one" and source.method in PRODUCER_METHODS:
                targets = [
                    target
                    for item_path in paths.items_of(source, component)
                    for target in paths.at_or_under(item_path)
                ]
                identifier = f"$response.body#/data/{IDENTIFIER}"
            elif kind == "many" and source.method == "get":
                targets = [
                    target
                    for item_path in paths.items_of(source, component)
                    for target in paths.at_or_under(item_path)
                    if target.method == "get" and target.path == item_path
                ]
                identifier = f"$response.body#/data/0/{IDENTIFIER}"
            else:
                continue
            if links := _links(source, targets, identifier):
                response["links"] = dict(sorted(links.items()))
    return result
