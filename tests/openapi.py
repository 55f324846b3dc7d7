"""The schema document as a client reads it once its shared answers, parameters and headers
(``components/responses``, ``parameters``, ``headers``) are written out where they are
referred to; schemas stay referred to by name."""

import copy

SHARED = ("#/components/responses/", "#/components/parameters/", "#/components/headers/")


def inlined(document: dict) -> dict:
    components = document.get("components", {})

    def resolve(node):
        if isinstance(node, list):
            return [resolve(item) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref", "")
        if ref.startswith(SHARED):
            kind, name = ref.removeprefix("#/components/").split("/")
            return resolve(copy.deepcopy(components[kind][name]))
        return {key: resolve(value) for key, value in node.items()}

    return {**document, "paths": resolve(document["paths"])}
