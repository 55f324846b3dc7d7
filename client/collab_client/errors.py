"""One exception per error of the API's contract, all under ``CollabError``.

Each carries what the error envelope said (``code``, ``message``, ``details``), the HTTP
``status`` and the ``request_id`` the server logged it under (quote it in a support request).
"""

from typing import Any

import httpx


class CollabError(Exception):
    """Anything the client could not do: an answer in the error envelope, or no answer."""

    status: int | None = None
    code: str = "ERROR"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        details: dict[str, Any] | None = None,
        request_id: str | None = None,
        response: httpx.Response | None = None,
    ):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code
        self.details: dict[str, Any] = details or {}
        self.request_id = request_id
        self.response = response

    def __str__(self) -> str:
        where = f" (request {self.request_id})" if self.request_id else ""
        status = f"{self.status} " if self.status else ""
        return f"{status}{self.code}: {self.message}{where}"


class APIConnectionError(CollabError):
    """The server could not be reached, or the connection broke before an answer."""

    code = "CONNECTION_ERROR"


class BadRequest(CollabError):
    status, code = 400, "BAD_REQUEST"


class Unauthorized(CollabError):
    status, code = 401, "UNAUTHORIZED"


class PermissionDenied(CollabError):
    """403: the credential lacks the scope (``details["required_scope"]``) or the role."""

    status, code = 403, "FORBIDDEN"


class NotFound(CollabError):
    status, code = 404, "NOT_FOUND"


class MethodNotAllowed(CollabError):
    status, code = 405, "METHOD_NOT_ALLOWED"


class NotAcceptable(CollabError):
    status, code = 406, "NOT_ACCEPTABLE"


class Conflict(CollabError):
    status, code = 409, "CONFLICT"


class LengthRequired(CollabError):
    status, code = 411, "LENGTH_REQUIRED"


class PreconditionFailed(CollabError):
    """412: ``if_match`` named a version that is no longer current; ``current_etag`` is."""

    status, code = 412, "PRECONDITION_FAILED"

    @property
    def current_etag(self) -> str | None:
        return self.details.get("etag")


class PayloadTooLarge(CollabError):
    status, code = 413, "PAYLOAD_TOO_LARGE"


class UnsupportedMediaType(CollabError):
    status, code = 415, "UNSUPPORTED_MEDIA_TYPE"


class ValidationError(CollabError):
    """422: ``details`` maps each field to its messages."""

    status, code = 422, "VALIDATION_ERROR"


class RateLimited(CollabError):
    """429: ``retry_after`` is the number of seconds to wait."""

    status, code = 429, "RATE_LIMITED"

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any):
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ServerError(CollabError):
    """A 5xx: the server failed (``INTERNAL_ERROR``) or is unavailable."""

    status, code = 500, "INTERNAL_ERROR"


class ServiceUnavailable(ServerError):
    status, code = 503, "SERVICE_UNAVAILABLE"


class WebhookVerificationError(CollabError):
    """A webhook delivery whose signature or timestamp does not hold."""

    code = "WEBHOOK_VERIFICATION_FAILED"


class ResyncRequired(CollabError):
    """The stream cannot replay from ``last_event_id``: the log was purged past it. Read what
    you need afresh (``client.events.list``), then stream from ``resume_from``."""

    code = "RESYNC_REQUIRED"

    def __init__(self, *, last_event_id: int | None, purged_through_id: int, resume_from: int):
        super().__init__(
            f"Events after {last_event_id} were purged (through {purged_through_id}); "
            f"resynchronise, then resume from {resume_from}."
        )
        self.last_event_id = last_event_id
        self.purged_through_id = purged_through_id
        self.resume_from = resume_from


BY_CODE: dict[str, type[CollabError]] = {
    cls.code: cls
    for cls in (
        BadRequest,
        Unauthorized,
        PermissionDenied,
        NotFound,
        MethodNotAllowed,
        NotAcceptable,
        Conflict,
        LengthRequired,
        PreconditionFailed,
        PayloadTooLarge,
        UnsupportedMediaType,
        ValidationError,
        RateLimited,
        ServerError,
        ServiceUnavailable,
    )
}
BY_STATUS: dict[int, type[CollabError]] = {
    cls.status: cls for cls in BY_CODE.values() if cls.status is not None
}


def error_from_response(response: httpx.Response) -> CollabError:
    """The exception for an error answer, from its envelope (or OAuth's error, or its status
    alone)."""
    code, message = None, response.reason_phrase or "Error"
    details: dict[str, Any] = {}
    try:
        body = response.json()
        error = body.get("error") or {}
        if isinstance(error, str):  # OAuth's own form (RFC 6749): {"error", "error_description"}
            code, message = error, body.get("error_description") or error
        else:
            code = error.get("code")
            message = error.get("message") or message
            details = error.get("details") or {}
    except (ValueError, AttributeError):
        pass
    cls = BY_CODE.get(code or "") or BY_STATUS.get(response.status_code)
    if cls is None:
        cls = ServerError if response.status_code >= 500 else CollabError
    kwargs: dict[str, Any] = {
        "status": response.status_code,
        "code": code,
        "details": details,
        "request_id": response.headers.get("X-Request-Id"),
        "response": response,
    }
    if cls is RateLimited:
        kwargs["retry_after"] = retry_after_seconds(response)
    return cls(message, **kwargs)


def retry_after_seconds(response: httpx.Response, now: float | None = None) -> float | None:
    """How long the server asked to wait: ``Retry-After``, else ``X-RateLimit-Reset``."""
    import time

    value = response.headers.get("Retry-After")
    if value is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
    reset = response.headers.get("X-RateLimit-Reset")
    if reset is not None and response.status_code == 429:
        try:
            return max(0.0, float(reset) - (time.time() if now is None else now))
        except ValueError:
            pass
    return None
