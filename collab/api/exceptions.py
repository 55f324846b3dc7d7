"""Typed API errors with stable codes, and the one handler that renders every error.

Every error leaves the service as
``{"success": false, "error": {"code", "message", "details"}}`` with the status of
docs/guide/envelope-and-errors.md. Views raise the classes below (or DRF's own exceptions, which are
mapped here); nothing else builds an error body.
"""

import logging

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.db import IntegrityError
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework import status
from rest_framework.response import Response

from collab.db.querycost import client_left, is_cancelled

logger = logging.getLogger("collab.api")


class ApiError(drf.APIException):
    """Base of the service's own errors: a status, a stable code and a details object."""

    status_code: int = status.HTTP_400_BAD_REQUEST
    code = "BAD_REQUEST"
    default_detail = "The request cannot be processed."

    def __init__(self, message: str | None = None, *, details: dict | None = None):
        self.message = message or str(self.default_detail)
        self.details = details or {}
        super().__init__(self.message)


class BadRequest(ApiError):
    status_code = status.HTTP_400_BAD_REQUEST
    code = "BAD_REQUEST"
    default_detail = "The request cannot be parsed."


class Unauthorized(ApiError):
    status_code = status.HTTP_401_UNAUTHORIZED
    code = "UNAUTHORIZED"
    default_detail = "Authentication credentials were not provided or are not valid."


class Forbidden(ApiError):
    status_code = status.HTTP_403_FORBIDDEN
    code = "FORBIDDEN"
    default_detail = "You do not have permission to perform this action."


class NotFound(ApiError):
    status_code = status.HTTP_404_NOT_FOUND
    code = "NOT_FOUND"
    default_detail = "Not found."


class Conflict(ApiError):
    status_code = status.HTTP_409_CONFLICT
    code = "CONFLICT"
    default_detail = "The resource's state forbids this operation."


class PayloadTooLarge(ApiError):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    code = "PAYLOAD_TOO_LARGE"
    default_detail = "The request body is larger than the service accepts."


class UnsupportedMediaType(ApiError):
    status_code = status.HTTP_415_UNSUPPORTED_MEDIA_TYPE
    code = "UNSUPPORTED_MEDIA_TYPE"
    default_detail = "Request bodies must be application/json."


class ValidationFailed(ApiError):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    code = "VALIDATION_ERROR"
    default_detail = "The request has invalid fields."

    @classmethod
    def field(cls, name: str, message: str) -> "ValidationFailed":
        return cls(details={name: [message]})


class RateLimited(ApiError):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    code = "RATE_LIMITED"
    default_detail = "Request limit exceeded."
    # Seconds until a retry may succeed, when the raiser knows (the answer's Retry-After).
    retry_after: int | None = None


class QueryTimeout(ApiError):
    """A statement of the request ran past its deadline and the database cancelled it
    (collab.db.querycost): the service is busy, not the request wrong."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    code = "QUERY_TIMEOUT"
    default_detail = "The request took too long to answer. Try again later."
    retry_after: int | None = None


# DRF's exceptions and the codes they map to, for errors raised inside DRF itself.
_DRF_CODES: list[tuple[type[Exception], int, str]] = [
    (drf.ParseError, 400, "BAD_REQUEST"),
    (drf.AuthenticationFailed, 401, "UNAUTHORIZED"),
    (drf.NotAuthenticated, 401, "UNAUTHORIZED"),
    (drf.PermissionDenied, 403, "FORBIDDEN"),
    (drf.NotFound, 404, "NOT_FOUND"),
    (drf.MethodNotAllowed, 405, "METHOD_NOT_ALLOWED"),
    (drf.NotAcceptable, 406, "NOT_ACCEPTABLE"),
    (drf.UnsupportedMediaType, 415, "UNSUPPORTED_MEDIA_TYPE"),
    (drf.Throttled, 429, "RATE_LIMITED"),
]


def error_body(code: str, message: str, details: dict | None = None) -> dict:
    return {
        "success": False,
        "error": {"code": code, "message": message, "details": details or {}},
    }


def flatten_validation_errors(detail, prefix: str = "") -> dict[str, list[str]]:
    """Turn DRF's nested error structure into ``{"field": ["message", ...]}``.

    Nested fields are joined with dots (``labels.0``) so every value stays a list of strings.
    """
    errors: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if key == "non_field_errors" and prefix:
                name = prefix
            for field, messages in flatten_validation_errors(value, name).items():
                errors.setdefault(field, []).extend(messages)
    elif isinstance(detail, list):
        if all(not isinstance(item, (dict, list)) for item in detail):
            errors[prefix or "non_field_errors"] = [str(item) for item in detail]
        else:
            for index, item in enumerate(detail):
                name = f"{prefix}.{index}" if prefix else str(index)
                for field, messages in flatten_validation_errors(item, name).items():
                    errors.setdefault(field, []).extend(messages)
    else:
        errors[prefix or "non_field_errors"] = [str(detail)]
    return errors


def _drf_message(exc: drf.APIException) -> str:
    detail = exc.detail
    if isinstance(detail, (list, dict)):
        return str(exc.default_detail)
    return str(detail)


def foreign_key_violation(exc: BaseException) -> str | None:
    """What a foreign-key failure says, when ``exc`` is one: ``"parent"`` when a write
    referred to a row deleted meanwhile (its transaction waited on the deletion and found the
    row gone at its commit), ``"children"`` when a deletion found rows added under it; None
    for any other error.

    Races, not bugs (docs/guide/envelope-and-errors.md): the API answers the writer 404 and the
    deleter 409, and a worker drops its write. SQLite names no side; a deletion there never
    races (one writer at a time, collab.db.cascades), so it is the writer's.
    """
    if not isinstance(exc, IntegrityError):
        return None
    cause = exc.__cause__
    if getattr(cause, "sqlstate", None) == "23503":  # psycopg's foreign_key_violation
        return "children" if str(cause).startswith("update or delete on table") else "parent"
    if "FOREIGN KEY constraint failed" in str(exc):  # SQLite
        return "parent"
    return None


def _known(exc: Exception) -> Exception:
    raced = foreign_key_violation(exc)
    if raced is not None:
        logger.warning("A write raced a deletion (%s): %s", raced, exc)
        if raced == "children":
            return Conflict("Something was added to it while it was being deleted; try again.")
        return NotFound("Not found: it, or what it belongs to, was deleted meanwhile.")
    if isinstance(exc, Http404):
        return NotFound()
    if isinstance(exc, DjangoPermissionDenied):
        return Forbidden()
    if isinstance(exc, RequestDataTooBig):
        return PayloadTooLarge()
    if is_cancelled(exc):
        if client_left():  # nobody reads the answer: not the service's fault
            logger.info("client disconnected: its statement was cancelled")
        else:
            logger.warning("A statement ran past its deadline and was cancelled: %s", exc)
        retry_after = settings.DATABASE_TIMEOUT_RETRY_AFTER
        timeout = QueryTimeout(details={"retry_after": retry_after})
        timeout.retry_after = retry_after
        return timeout
    return exc


def error_of(exc: Exception) -> tuple[int, dict] | None:
    """The status and the body of an expected error (``None`` for a bug): what the handler
    answers, and what a bulk request reports for one of its items."""
    exc = _known(exc)
    if isinstance(exc, ApiError):
        return exc.status_code, error_body(exc.code, exc.message, exc.details)
    if isinstance(exc, drf.ValidationError):
        return 422, error_body(
            "VALIDATION_ERROR",
            "The request has invalid fields.",
            flatten_validation_errors(exc.detail),
        )
    if isinstance(exc, drf.APIException):
        status_code, code = exc.status_code, "BAD_REQUEST"
        for cls, mapped_status, mapped_code in _DRF_CODES:
            if isinstance(exc, cls):
                status_code, code = mapped_status, mapped_code
                break
        return status_code, error_body(code, _drf_message(exc))
    return None


EXPECTED_ERRORS = (ApiError, drf.APIException, Http404, DjangoPermissionDenied)


def exception_handler(exc, context):
    """DRF's EXCEPTION_HANDLER: every exception raised in an API view becomes an envelope."""
    headers: dict[str, str] = {}
    exc = _known(exc)
    known = error_of(exc)
    if known is not None:
        status_code, body = known
        if isinstance(exc, drf.Throttled) and exc.wait is not None:
            headers["Retry-After"] = str(int(exc.wait) + 1)
    else:
        request = context.get("request")
        request_id = getattr(request, "request_id", "") if request is not None else ""
        logger.exception("Unhandled error in %s", context.get("view").__class__.__name__)
        status_code = 500
        body = error_body(
            "INTERNAL_ERROR",
            "The service failed to handle this request.",
            {"request_id": request_id} if request_id else {},
        )

    if status_code == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="api"'
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "retry_after", None):
        headers["Retry-After"] = str(exc.retry_after)
    response = Response(body, status=status_code, headers=headers)
    if isinstance(exc, QueryTimeout) and client_left():
        response._has_been_logged = True  # logged above, at INFO: Django's would be an ERROR
    return response
