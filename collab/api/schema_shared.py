"""Each answer, parameter and header many operations repeat word for word, defined once under
``components`` and referred to by ``$ref``: the error answers (``components/responses``, by
status, when the view gives no description of its own) and the not-modified answer; every
parameter that means one thing wherever it appears (``components/parameters``: an identifier in
a path, the paging parameters, ``If-Match``, ``Idempotency-Key``, the filters two lists share);
every such header (``components/headers``: ``ETag``, ``Location``, ``Link``). The document
says the same thing in well under half the bytes.
"""

import json
from collections import defaultdict

from .schema import RESPONSE_NAMES, shared_response


def _operations(document: dict):
    for item in document["paths"].values():
        for operation in item.values():
            if isinstance(operation, dict) and "responses" in operation:
                yield operation


def _key(value: dict) -> str:
    return json.dumps(value, sort_keys=True)


def _share_responses(document: dict) -> dict[str, dict]:
    shared = {code: _key(shared_response(code)) for code in RESPONSE_NAMES}
    used = {}
    for operation in _operations(document):
        for code, response in operation["responses"].items():
            if code in shared and _key(response) == shared[code]:
                name = RESPONSE_NAMES[code]
                used[name] = response
                operation["responses"][code] = {"$ref": f"#/components/responses/{name}"}
    return dict(sorted(used.items()))


def _share_parameters(document: dict) -> dict[str, dict]:
    """Parameters used by two operations or more, each (place, name) with one definition."""
    definitions: dict[tuple[str, str], set[str]] = defaultdict(set)
    uses: dict[tuple[str, str], int] = defaultdict(int)
    for operation in _operations(document):
        for parameter in operation.get("parameters", []):
            place = (parameter["in"], parameter["name"])
            definitions[place].add(_key(parameter))
            uses[place] += 1
    shared = sorted(p for p, keys in definitions.items() if len(keys) == 1 and uses[p] > 1)
    names = [name for _where, name in shared]
    # Named as in the request; a name used in two places (a path and a query) says which.
    component = {
        (where, name): name if names.count(name) == 1 else f"{name}.{where}"
        for where, name in shared
    }
    used = {}
    for operation in _operations(document):
        for index, parameter in enumerate(operation.get("parameters", [])):
            place = (parameter["in"], parameter["name"])
            if place in component:
                used[component[place]] = parameter
                ref = f"#/components/parameters/{component[place]}"
                operation["parameters"][index] = {"$ref": ref}
    return dict(sorted(used.items()))


def _share_headers(responses: list[dict], known: dict[str, dict]) -> dict[str, dict]:
    """Headers given alike in two answers or more, by name, beside the ``known`` ones."""
    definitions: dict[str, set[str]] = defaultdict(set)
    uses: dict[str, int] = defaultdict(int)
    for response in responses:
        for name, header in response.get("headers", {}).items():
            if "$ref" not in header:
                definitions[name].add(_key(header))
                uses[name] += 1
    shared = {
        name
        for name, keys in definitions.items()
        if len(keys) == 1 and uses[name] > 1 and name not in known
    }
    used = dict(known)
    for response in responses:
        for name, header in response.get("headers", {}).items():
            if name in shared:
                used[name] = header
                response["headers"][name] = {"$ref": f"#/components/headers/{name}"}
    return dict(sorted(used.items()))


def postprocess_shared(result, generator, request, public):
    """Move the repeated answers, parameters and headers into ``components`` (see the
    module's doc)."""
    components = result.setdefault("components", {})
    if responses := _share_responses(result):
        components["responses"] = responses
    if parameters := _share_parameters(result):
        components["parameters"] = parameters
    answers = [
        response
        for operation in _operations(result)
        for response in operation["responses"].values()
        if "$ref" not in response
    ]
    answers += list(components.get("responses", {}).values())
    components["headers"] = _share_headers(answers, components.get("headers", {}))
    return result
