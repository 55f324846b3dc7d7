"""drf-spectacular hooks so the schema shows what is really sent: the envelope on every
success, the error body on every error status an operation can answer."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema

ERROR_REF = {"$ref": "#/components/schemas/Error"}
ERROR_DESCRIPTIONS = {
    "400": "The request cannot be parsed (malformed JSON, a body that is not an object, "
    "a query parameter of the wrong form).",
    "401": "No credentials, or an unknown, expired or revoked key or token.",
    "403": "The credential lacks the scope, or the caller the role, for this operation.",
    "404": "No such resource, or one the caller may not see.",
    "405": "The method is not allowed on this path.",
    "409": "The resource's state forbids this operation.",
    "413": "The body is larger than the configured limit.",
    "415": "The body is not application/json.",
    "422": "Fields failed validation; details maps each field to its messages.",
    "429": "Over the hourly request limit.",
}
BODY_METHODS = {"POST", "PUT", "PATCH"}

COMPONENTS = {
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
                            "PAYLOAD_TOO_LARGE",
                            "UNSUPPORTED_MEDIA_TYPE",
                            "VALIDATION_ERROR",
                            "RATE_LIMITED",
                            "INTERNAL_ERROR",
                        ],
                    },
                    "message": {"type": "string"},
                    "details": {"type": "object", "additionalProperties": True},
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
        "required": ["total", "page", "per_page", "current_page", "total_pages", "total_count"],
        "properties": {
            "total": {"type": "integer"},
            "page": {"type": "integer"},
            "per_page": {"type": "integer"},
            "current_page": {"type": "integer"},
            "total_pages": {"type": "integer"},
            "total_count": {"type": "integer"},
        },
    },
}


def envelope(data_schema: dict | None) -> dict:
    return {
        "type": "object",
        "required": ["success", "data"],
        "properties": {
            "success": {"type": "boolean", "enum": [True]},
            "data": data_schema if data_schema is not None else {"type": "null"},
        },
    }


class BearerScheme(OpenApiAuthenticationExtension):
    target_class = "collab.api.authentication.BearerAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key (`clb_...`) or a JWT access token from /v1/auth/login.",
        }


class EnvelopeAutoSchema(AutoSchema):
    """Wraps success bodies in ``{success, data}`` and lists the error statuses sent."""

    def _get_response_for_code(
        self, serializer, status_code, media_types=None, direction="response"
    ):
        response = super()._get_response_for_code(serializer, status_code, media_types, direction)
        if not ("200" <= str(status_code) < "300"):
            return response
        content = response.get("content")
        if not content:
            response["content"] = {"application/json": {"schema": envelope(None)}}
            return response
        paginated = self._is_list_view(serializer) and self._get_paginator() is not None
        if not paginated:
            for media in content.values():
                media["schema"] = envelope(media.get("schema"))
        return response

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if "204" in responses:
            responses.pop("204")
            responses["200"] = {
                "description": "Deleted.",
                "content": {"application/json": {"schema": envelope(None)}},
            }
        for code in self.error_statuses():
            responses.setdefault(
                code,
                {
                    "description": ERROR_DESCRIPTIONS[code],
                    "content": {"application/json": {"schema": ERROR_REF}},
                },
            )
        return responses

    def error_statuses(self) -> list[str]:
        codes = ["400", "401", "403", "404", "405", "429"]
        if self.method in BODY_METHODS or self.method == "DELETE":
            codes += ["409", "413", "415", "422"]
        return codes


def postprocess_envelope(result, generator, request, public):
    """Add the shared components (error body, page meta) the operations refer to."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in COMPONENTS.items():
        schemas.setdefault(name, schema)
    return result
