"""Middleware that guards the API before any view runs: request ids, body size and type,
and JSON answers for what never reaches a DRF view (unknown routes, crashes)."""

import logging
import threading
import uuid

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpResponse

from .exceptions import error_body
from .renderers import dumps

logger = logging.getLogger("collab.api")
_local = threading.local()

API_PREFIX = "/v1/"
# Endpoints that accept bodies in other media types (a git server's push hook, for example).
NON_JSON_PATHS: tuple[str, ...] = ()


def json_error(status: int, code: str, message: str, details: dict | None = None, **headers):
    response = HttpResponse(
        dumps(error_body(code, message, details)), status=status, content_type="application/json"
    )
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


class RequestIdLogFilter(logging.Filter):
    def filter(self, record):
        record.request_id = getattr(_local, "request_id", "-")
        return True


class RequestIdMiddleware:
    """Gives each request an id (or keeps a sane incoming ``X-Request-Id``) for logs and errors."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get("X-Request-Id", "")
        valid = 0 < len(incoming) <= 64 and incoming.replace("-", "").isalnum()
        request.request_id = incoming if valid else uuid.uuid4().hex
        _local.request_id = request.request_id
        try:
            request.get_host()
        except DisallowedHost:
            # Django would answer with an HTML page; the contract wants JSON everywhere.
            response = json_error(400, "BAD_REQUEST", "The Host header is not allowed here.")
        else:
            try:
                response = self.get_response(request)
            finally:
                _local.request_id = "-"
        response["X-Request-Id"] = request.request_id
        return response

    def process_exception(self, request, exception):
        if not request.path.startswith(API_PREFIX):
            return None
        logger.exception("Unhandled error outside the API views")
        return json_error(
            500,
            "INTERNAL_ERROR",
            "The service failed to handle this request.",
            {"request_id": getattr(request, "request_id", "")},
        )


def _has_body(request) -> bool:
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    return length > 0 or "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()


class ApiBodyGuardMiddleware:
    """413 for oversize bodies and 415 for non-JSON ones, on every API route.

    It runs before routing, so an endpoint that never reads its body cannot let a
    non-JSON or huge one slip through unnoticed.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(API_PREFIX) and _has_body(request):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                return json_error(400, "BAD_REQUEST", "Malformed Content-Length header.")
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            if limit is not None and length > limit:
                return json_error(
                    413,
                    "PAYLOAD_TOO_LARGE",
                    f"The request body is larger than {limit} bytes.",
                    {"max_bytes": limit},
                )
            media_type = request.content_type or ""
            if media_type != "application/json" and not request.path.startswith(NON_JSON_PATHS):
                return json_error(
                    415,
                    "UNSUPPORTED_MEDIA_TYPE",
                    "Request bodies must be application/json.",
                    {"content_type": [media_type or "(none)"]},
                )
        return self.get_response(request)
