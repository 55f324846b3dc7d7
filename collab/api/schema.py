"""drf-spectacular hooks so the schema shows what is really sent: the envelope on every
success, the error body on every error status an operation can answer, the headers that
come with them, and no security requirement where no credential is read.

Views declare an error status the defaults below cannot know about (a failed login's 401,
an accepted invitation's 409) with ``@extend_schema(responses={409: OpenApiResponse(
description=...)})``; the error body is filled in here.
"""

from django.conf import settings
from django_filters.rest_framework import CharFilter
from drf_spectacular.contrib.django_filters import DjangoFilterExtension
from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerFieldExtension,
)
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import build_parameter_type, force_instance, get_doc
from drf_spectacular.utils import OpenApiParameter

from .cursors import CURSOR_PATTERN
from .fields import SINGLE_LINE_PATTERN
from .routers import ID_PATTERN, MAX_ID

ERROR_REF = {"$ref": "#/components/schemas/Error"}
SUCCESS_REF = {"$ref": "#/components/schemas/Success"}
ERROR_DESCRIPTIONS = {
    "400": "The request cannot be parsed (malformed JSON, a body that is not an object, "
    "a query parameter of the wrong form).",
    "401": "No credentials, or an unknown, expired or revoked key or token.",
    "403": "The credential lacks the scope, or the caller the role, for this operation.",
    "404": "No such resource, or one the caller may not see.",
    "405": "The method is not allowed on this path.",
    "409": "The resource's state forbids this operation.",
    "412": "`If-Match` names a tag that is not the resource's current one (it changed since "
    "it was read); nothing was changed. `details.etag` and the `ETag` header give the current "
    "tag. A path without a GET holds only `If-Match: *`.",
    "413": "The body is larger than the configured limit.",
    "415": "The body is not application/json.",
    "422": "Fields failed validation; details maps each field to its messages.",
    "429": "Over the request limit: the account's hourly limit (by tier), or for requests "
    "without valid credentials the client address's, which is weighed before credentials are "
    "required (past it, such a request answers 429, not 401). Not counted; `Retry-After` says "
    "when to come back.",
}
# The name of each answer operations share, under components/responses (schema_shared.py).
RESPONSE_NAMES = {
    "304": "NotModified",
    "400": "BadRequest",
    "401": "Unauthorized",
    "403": "Forbidden",
    "404": "NotFound",
    "405": "MethodNotAllowed",
    "409": "Conflict",
    "412": "PreconditionFailed",
    "413": "PayloadTooLarge",
    "415": "UnsupportedMediaType",
    "422": "ValidationError",
    "429": "RateLimited",
}
BODY_METHODS = {"POST", "PUT", "PATCH"}
WRITE_METHODS = BODY_METHODS | {"DELETE"}
CONDITIONAL_METHODS = {"PUT", "PATCH", "DELETE"}


def _header(description: str, schema: dict | None = None, *, required: bool = True) -> dict:
    return {
        "description": description,
        "required": required,
        "schema": schema or {"type": "string"},
    }


# Headers every response of a given status carries (docs/guide/envelope-and-errors.md).
ERROR_HEADERS = {
    "401": {"WWW-Authenticate": _header('Always `Bearer realm="api"`.')},
    "405": {"Allow": _header("The methods this path accepts.")},
    "429": {
        "Retry-After": _header(
            "Seconds to wait before trying again.", {"type": "integer", "minimum": 1}
        )
    },
}
# On every response under /v1/ while the limiter is on (docs/guide/rate-limits.md;
# collab/api/ratelimit.py), counted against the account of valid credentials, or else against
# the client address. Defined once under components/headers and referred to from each
# response; required exactly when this server sends them (RATE_LIMIT_ENABLED, the default).
_COUNT = {"type": "integer", "minimum": 0}
HEADER_COMPONENTS = {
    "X-RateLimit-Limit": _header("Requests allowed in the window.", _COUNT),
    "X-RateLimit-Remaining": _header("Requests left in the window.", _COUNT),
    "X-RateLimit-Used": _header("Requests counted in the window.", _COUNT),
    "X-RateLimit-Reset": _header(
        "When the window ends, in Unix seconds (a window starts with its first request).",
        _COUNT,
    ),
}
RATE_LIMIT_HEADERS = {name: {"$ref": f"#/components/headers/{name}"} for name in HEADER_COMPONENTS}
CREATED_HEADERS = {"Location": _header("Path of the created resource.")}
PAGE_HEADERS = {
    "Link": _header(
        "RFC 8288 links: by page number to the `first`, `prev`, `next` and `last` pages; by "
        "cursor to the `first` page and, unless this is the last, the `next` one (its cursor)."
    ),
}
IDEMPOTENCY_KEY = OpenApiParameter(
    name="Idempotency-Key",
    # As collab/api/idempotency.py reads it: 1 to 255 printable ASCII characters.
    type={"type": "string", "pattern": "^[!-~]{1,255}$"},
    location=OpenApiParameter.HEADER,
    required=False,
    description=(
        "Unique per request: a new key (a random UUID, say) for each distinct request, the "
        "same key only to retry that request. A repeat with the same key and body within 24 "
        "hours replays the first answer (with `Idempotent-Replayed: true`) and creates "
        "nothing; the same key with another body or path answers 422; while the first is "
        "still running, 409."
    ),
)
ETAG_HEADERS = {
    "ETag": _header(
        "A strong tag of this exact body: send it back in `If-None-Match` to be answered 304 "
        "while nothing changed, or in `If-Match` on PUT, PATCH and DELETE to write only over "
        "what was read."
    )
}
NOT_MODIFIED = {
    "description": "Not modified: the `If-None-Match` tag is current. No body; does not count "
    "against the rate limit (its `X-RateLimit-*` headers show the budget unchanged).",
    "headers": ETAG_HEADERS,
}
IF_NONE_MATCH = OpenApiParameter(
    name="If-None-Match",
    type={"type": "string"},
    location=OpenApiParameter.HEADER,
    required=False,
    description="ETags from earlier answers, comma-separated (or `*`): a current one answers "
    "304 without a body, free of the rate limit. A value naming no tag matches nothing.",
)
IF_MATCH = OpenApiParameter(
    name="If-Match",
    type={"type": "string"},
    location=OpenApiParameter.HEADER,
    required=False,
    description="The ETag of the resource as last read (or `*`: it must exist). A tag that is "
    "no longer current (or a value naming no tag) answers 412 and changes nothing, so two "
    "editors cannot silently overwrite each other.",
)

NEXT_CURSOR = {
    "type": "string",
    "nullable": True,
    "pattern": CURSOR_PATTERN,
    "description": "Send it as `cursor` (with the same filters and sort) for the next page; "
    "null on the last page.",
}
COMPONENTS = {
    "Success": {"type": "boolean", "enum": [True], "description": "Always true on success."},
    "Error": {
        "type": "object",
        "required": ["success", "error"],
        "properties": {
            "success": {"type": "boolean", "enum": [False]},
            "error": {
                "type": "object",
                "required": ["code", "message", "details"],
                "properties": {
                    "code": {
                        "type": "string",
                        "enum": [
                            "BAD_REQUEST",
                            "UNAUTHORIZED",
                            "FORBIDDEN",
                            "NOT_FOUND",
                            "METHOD_NOT_ALLOWED",
                            "NOT_ACCEPTABLE",
                            "CONFLICT",
                            "LENGTH_REQUIRED",
                            "PRECONDITION_FAILED",
                            "PAYLOAD_TOO_LARGE",
                            "UNSUPPORTED_MEDIA_TYPE",
                            "VALIDATION_ERROR",
                            "RATE_LIMITED",
                            "INTERNAL_ERROR",
                        ],
                    },
                    "message": {"type": "string"},
                    "details": {
                        "type": "object",
                        "additionalProperties": True,
                        "description": "Always an object. For VALIDATION_ERROR it maps each "
                        "field name to a list of messages; 403s caused by a missing scope "
                        "name it in `required_scope`.",
                    },
                },
            },
        },
        "example": {
            "success": False,
            "error": {
                "code": "VALIDATION_ERROR",
                "message": "The request has invalid fields.",
                "details": {"name": ["This field is required."]},
            },
        },
    },
    "PageMeta": {
        "type": "object",
        "description": "A page asked for by number (`page`, or neither `page` nor `cursor`).",
        "required": [
            "total",
            "page",
            "per_page",
            "current_page",
            "total_pages",
            "total_count",
            "next_cursor",
        ],
        "properties": {
            "total": {"type": "integer"},
            "page": {"type": "integer"},
            "per_page": {"type": "integer"},
            "current_page": {"type": "integer"},
            "total_pages": {"type": "integer"},
            "total_count": {"type": "integer"},
            "next_cursor": NEXT_CURSOR,
        },
    },
    "CursorMeta": {
        "type": "object",
        "description": "A page asked for by `cursor`. `total` counts the whole list, not what "
        "is left of it.",
        "required": ["total", "per_page", "total_count", "next_cursor"],
        "properties": {
            "total": {"type": "integer"},
            "per_page": {"type": "integer"},
            "total_count": {"type": "integer"},
            "next_cursor": NEXT_CURSOR,
        },
    },
}

# OpenAPI 3.0 has no "null" type: this is its spelling of "always null".
NULL_SCHEMA = {"type": "object", "nullable": True, "enum": [None], "description": "Always null."}


def envelope(data_schema: dict | None) -> dict:
    """The success envelope around ``data_schema`` (``None``: a body whose data is null)."""
    return {
        "type": "object",
        "required": ["success", "data"],
        "properties": {
            "success": SUCCESS_REF,
            "data": data_schema if data_schema is not None else NULL_SCHEMA,
        },
    }


def paginated_envelope(items_schema: dict) -> dict:
    return {
        "type": "object",
        "required": ["success", "data", "meta"],
        "properties": {
            "success": SUCCESS_REF,
            "data": items_schema,
            "meta": {
                "anyOf": [
                    {"$ref": "#/components/schemas/PageMeta"},
                    {"$ref": "#/components/schemas/CursorMeta"},
                ]
            },
        },
    }


def _error_response(code: str, description: str | None = None) -> dict:
    response = {
        "description": description or ERROR_DESCRIPTIONS[code],
        "content": {"application/json": {"schema": ERROR_REF}},
    }
    if code in ERROR_HEADERS:
        response["headers"] = dict(ERROR_HEADERS[code])
    return response


def shared_response(code: str) -> dict:
    """The answer with status ``code`` of every operation whose view gives it no description
    of its own (with the headers every answer carries)."""
    if code == "304":
        return {**NOT_MODIFIED, "headers": {**RATE_LIMIT_HEADERS, **ETAG_HEADERS}}
    response = _error_response(code)
    response["headers"] = {**RATE_LIMIT_HEADERS, **response.get("headers", {})}
    return response


class BearerScheme(OpenApiAuthenticationExtension):
    # The authentication class is the accounts app's; the plumbing knows it by the setting.
    # (settings are untyped: mypy cannot know REST_FRAMEWORK holds a dict of lists)
    target_class: str = settings.REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"][0]  # type: ignore[index]
    name = "bearer"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key (`clb_...`) or a JWT access token from /v1/auth/login.",
        }


class SingleLineExtension(OpenApiSerializerFieldExtension):
    """A one-line text sent (``collab.api.fields.single_line``) says in its pattern that
    control characters are refused (422), unless a pattern of its own says more. Answers are
    left as they are: what is stored is shown, whatever wrote it."""

    target_class = "collab.api.fields.SingleLineCharField"

    def map_serializer_field(self, auto_schema, direction):
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        if direction == "request":
            schema.setdefault("pattern", SINGLE_LINE_PATTERN)
        return schema


class FilterSetExtension(DjangoFilterExtension):
    """Query parameters from the view's ``filterset_class``, on every list it filters.

    drf-spectacular's own extension builds the filterset from the view's queryset model;
    actions such as ``/workspaces/{id}/members`` list another model than their viewset's,
    so the filterset's own model is used instead.
    """

    target_class = "collab.api.filters.FilterBackend"
    match_subclasses = True
    priority = 1

    def get_schema_operation_parameters(self, auto_schema, *args, **kwargs):
        filterset_class = getattr(auto_schema.view, "filterset_class", None)
        if filterset_class is None or filterset_class._meta.model is None:
            return []
        model = filterset_class._meta.model
        result = []
        for field_name, filter_field in filterset_class.base_filters.items():
            parameters = self.resolve_filter_field(
                auto_schema, model, filterset_class, field_name, filter_field
            )
            if not isinstance(filter_field, CharFilter):
                for parameter in parameters:
                    _refuse_empty(parameter["schema"])
            result += parameters
        return result


def _refuse_empty(schema: dict) -> None:
    """Say what the filter backend does: an empty value is refused (400) for every filter but
    free text (``collab.api.filters.FilterBackend``)."""
    if schema.get("type") == "array":
        schema["minItems"] = 1
    elif schema.get("type") == "string" and not {"enum", "pattern", "format"} & set(schema):
        schema["minLength"] = 1


class EnvelopeAutoSchema(AutoSchema):
    """Wraps success bodies in ``{success, data}`` and lists the error statuses sent."""

    @property
    def is_authenticated(self) -> bool:
        return bool(self.view.get_authenticators())

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is not None and not self.is_authenticated:
            # No credential is read: say so explicitly rather than "anonymous or bearer".
            operation["security"] = []
        if operation is not None and method == "GET" and path.startswith("/v1/"):
            ok = operation["responses"].get("200", {})
            # Bodies written as they are read (a report, the event stream) carry no tag.
            if set(ok.get("content", {})) == {"application/json"}:
                ok["headers"] = {**ok.get("headers", {}), **ETAG_HEADERS}
                operation["responses"]["304"] = shared_response("304")
                operation["responses"] = dict(sorted(operation["responses"].items()))
                operation.setdefault("parameters", []).append(
                    build_parameter_type(
                        name=IF_NONE_MATCH.name,
                        schema=IF_NONE_MATCH.type,
                        location=IF_NONE_MATCH.location,
                        required=False,
                        description=IF_NONE_MATCH.description,
                    )
                )
        return operation

    def get_description(self):
        # A viewset without a docstring of its own would show its base class's, which
        # describes the plumbing ("a viewset whose routes..."), not the API.
        action = getattr(self.view, getattr(self.view, "action", self.method.lower()), None)
        own_doc = self.view.__class__.__dict__.get("__doc__")
        return get_doc(action) or (get_doc(self.view.__class__) if own_doc else "")

    def get_override_parameters(self):
        parameters = list(super().get_override_parameters())
        if self.method == "POST" and self.is_authenticated:
            parameters.append(IDEMPOTENCY_KEY)
        if self.method in CONDITIONAL_METHODS and self.path.startswith("/v1/"):
            parameters.append(IF_MATCH)
        return parameters

    def _get_request_for_media_type(self, serializer, direction="request"):
        # A PATCH body is documented as partial, as DRF checks it; a serializer marked
        # ``whole_on_patch`` (a bulk request's envelope) is checked whole even on PATCH.
        whole = getattr(force_instance(serializer), "whole_on_patch", False)
        if self.method != "PATCH" or not whole:
            return super()._get_request_for_media_type(serializer, direction)
        self.method = "POST"
        try:
            return super()._get_request_for_media_type(serializer, direction)
        finally:
            self.method = "PATCH"

    def _resolve_path_parameters(self, variables):
        parameters = super()._resolve_path_parameters(variables)
        for parameter in parameters:
            # Identifiers in paths are matched as digits: they are integers, not strings.
            if parameter["schema"].get("pattern") == f"^{ID_PATTERN}$":
                parameter["schema"] = {"type": "integer", "minimum": 1, "maximum": MAX_ID}
        return parameters

    def _get_response_for_code(
        self, serializer, status_code, media_types=None, direction="response"
    ):
        response = super()._get_response_for_code(serializer, status_code, media_types, direction)
        if not ("200" <= str(status_code) < "300"):
            return response
        content = response.get("content")
        if not content:
            if response.get("description") in ("", "No response body"):
                response["description"] = "Done; `data` is null."
            response["content"] = {"application/json": {"schema": envelope(None)}}
            return response
        paginated = self._is_list_view(serializer) and self._get_paginator() is not None
        if paginated:
            response["headers"] = {**response.get("headers", {}), **PAGE_HEADERS}
        else:
            for media_type, media in content.items():
                # Other media (a CSV report) are sent as they are, without the envelope.
                if media_type == "application/json":
                    media["schema"] = envelope(media.get("schema"))
        return response

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if "204" in responses:
            # The contract answers deletes 200 with {"success": true, "data": null}.
            responses.pop("204")
            responses["200"] = {
                "description": "Deleted; `data` is null.",
                "content": {"application/json": {"schema": envelope(None)}},
            }
        if "201" in responses:
            responses["201"]["headers"] = {
                **responses["201"].get("headers", {}),
                **CREATED_HEADERS,
            }
        for code, response in responses.items():
            # An error status declared by the view, with its own description: add the body.
            if code >= "400" and "content" not in response:
                responses[code] = _error_response(code, response.get("description"))
        for code in self.error_statuses():
            responses.setdefault(code, _error_response(code))
        for response in responses.values():
            response["headers"] = {**RATE_LIMIT_HEADERS, **response.get("headers", {})}
        return dict(sorted(responses.items()))

    def error_statuses(self) -> list[str]:
        """The error statuses any operation of this kind can answer.

        400 (a malformed query, body or Host header) and 429 can come anywhere. A credential
        brings 401 (bad credential) and 403 (scope or role); a resource named in the path that
        the caller may not see is 404.
        Writes by a signed-in caller can meet a resource's state (409: an archived project,
        a running idempotent request) and bodies bring 413, 415 and 422.
        """
        codes = ["400", "429"]
        if self.is_authenticated:
            codes += ["401", "403"]
            if "{" in self.path:
                codes.append("404")
            if self.method in WRITE_METHODS:
                codes.append("409")
            if self.method in CONDITIONAL_METHODS and self.path.startswith("/v1/"):
                codes.append("412")
        if self.method in BODY_METHODS:
            codes += ["413", "415", "422"]
        return codes


def postprocess_envelope(result, generator, request, public):
    """Add the shared components (error body, success flag, page meta, rate-limit headers)
    operations refer to."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in COMPONENTS.items():
        schemas.setdefault(name, schema)
    result["components"]["schemas"] = dict(sorted(schemas.items()))
    headers = result["components"].setdefault("headers", {})
    for name, header in HEADER_COMPONENTS.items():
        headers[name] = {**header, "required": settings.RATE_LIMIT_ENABLED}
        if not settings.RATE_LIMIT_ENABLED:
            headers[name]["description"] += " Not sent: this server runs without the limiter."
    return result
