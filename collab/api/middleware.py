"""Middleware that guards the API before any view runs: request ids, body size and type,
and JSON answers for what never reaches a DRF view (unknown routes, crashes)."""

import io
import logging
import uuid
from typing import cast

from django.conf import settings
from django.core.exceptions import BadRequest, DisallowedHost, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpResponse
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.settings import api_settings
from structlog.contextvars import bind_contextvars, reset_contextvars

from collab.db.querycost import is_cancelled
from collab.logs import ContextLogFilter

from .acting import acting_close, acting_open
from .exceptions import error_body
from .renderers import dumps
from .routes import route_fact

logger = logging.getLogger("collab.api")

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


def credential_user(request):
    """The user the request's valid credentials name, or None (none sent, or not valid).

    DRF's configured authenticators (REST_FRAMEWORK's DEFAULT_AUTHENTICATION_CLASSES) run
    here, before any view: the rate limiter counts by the account, and checks of a request's
    form give way to the 401 a request without valid credentials gets first. The one in use
    keeps its outcome on the request, so the view does not authenticate again.
    """
    if not request.META.get("HTTP_AUTHORIZATION"):
        return None
    authenticators = cast(
        list[type[BaseAuthentication]], api_settings.DEFAULT_AUTHENTICATION_CLASSES
    )
    for authenticator in authenticators:
        try:
            authenticated = authenticator().authenticate(request)
        except exceptions.AuthenticationFailed:
            return None
        if authenticated is not None:
            return authenticated[0]
    return None


class RouteHostMiddleware:
    """First of all: a request whose ``Host`` ALLOWED_HOSTS does not list is still served when
    its route's view declares ``any_host``, a check of the request, and the check passes.

    Prometheus scrapes a pod by its IP, which is its ``Host`` and which no ALLOWED_HOSTS can
    list; the metrics view declares ``any_host`` with its own readers' check (token, allowed
    networks, loopback). For such a request the ``Host`` it sent is taken as it is, for that
    request alone. Any other request, and one the check refuses, meets Django's validation as
    ever (RequestIdMiddleware answers it 400). First, because whatever asks for the host first
    (the trace's middleware does: collab/tracing.py places it right after this one) must get
    the same answer as the view.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            request.get_host()
        except DisallowedHost:
            check, _arguments = route_fact(request.path_info, "any_host")
            if check is not None and check(request):
                host = request._get_raw_host()
                request.get_host = lambda: host  # for this request only
        return self.get_response(request)


# The request id of every line logged while a request runs (collab.logs binds it on records).
RequestIdLogFilter = ContextLogFilter


class RequestIdMiddleware:
    """Gives each request an id (or keeps a sane incoming ``X-Request-Id``) for logs and errors."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get("X-Request-Id", "")
        head = request.method == "HEAD"  # before HeadAsGetMiddleware makes it a GET
        valid = 0 < len(incoming) <= 64 and incoming.replace("-", "").isalnum()
        request.request_id = incoming if valid else uuid.uuid4().hex
        bound = bind_contextvars(request_id=request.request_id)
        acting = acting_open()
        try:
            request.get_host()
        except DisallowedHost:
            # Django would answer with an HTML page; the contract wants JSON everywhere.
            response = json_error(400, "BAD_REQUEST", "The Host header is not allowed here.")
            reset_contextvars(**bound)
            acting_close(acting)
        else:
            try:
                response = self.get_response(request)
            finally:
                reset_contextvars(**bound)
                acting_close(acting)
        if response.status_code >= 400 and _is_html(response):
            response = _html_error_as_json(request, response)
            if head:  # a HEAD's answer has the headers of the GET's, and no body
                response["Content-Length"] = str(len(response.content))
                response.content = b""
        response["X-Request-Id"] = request.request_id
        return response

    def process_exception(self, request, exception):
        if isinstance(exception, EXPECTED_EXCEPTIONS):
            return None  # Django answers these with their 4xx, made JSON on the way out
        if is_cancelled(exception):
            # A statement cancelled at its deadline, or not sent because the client left: the
            # 503 of handler500 (collab.views.server_error), logged as the API's are.
            return None
        logger.exception("Unhandled error outside the API views")
        return json_error(
            500,
            "INTERNAL_ERROR",
            "The service failed to handle this request.",
            {"request_id": getattr(request, "request_id", "")},
        )


# Exceptions Django itself turns into a 400, 403 or 404 (the admin raises them): not crashes.
EXPECTED_EXCEPTIONS = (Http404, PermissionDenied, BadRequest, SuspiciousOperation)

# What an error answered as a page (Django's own 400, 403 and 404 pages, its debug pages
# under DEBUG, the admin's, a CSRF refusal) becomes: the same status in the envelope.
HTML_ERROR_CODES = {
    400: ("BAD_REQUEST", "The request cannot be processed."),
    403: ("FORBIDDEN", "You do not have permission to perform this action."),
    404: ("NOT_FOUND", "Not found."),
    405: ("METHOD_NOT_ALLOWED", "This method is not allowed here."),
}


def _is_html(response) -> bool:
    return response.get("Content-Type", "").startswith(("text/html", "application/xhtml"))


def _html_error_as_json(request, response):
    """No path answers an HTML error page, DEBUG or not (docs/guide/envelope-and-errors.md): the
    page is dropped, its status and headers kept, and the body is the envelope."""
    status = response.status_code
    if status >= 500:
        code, message = "INTERNAL_ERROR", "The service failed to handle this request."
        details = {"request_id": getattr(request, "request_id", "")}
    else:
        code, message = HTML_ERROR_CODES.get(status, ("BAD_REQUEST", "The request failed."))
        if status == 404:
            message = f"No route matches {request.method} {request.path}."
        details = {}
    answer = json_error(status, code, message, details)
    for name in ("Allow", "Retry-After", "WWW-Authenticate", "Vary"):
        if response.has_header(name):
            answer[name] = response[name]
    if hasattr(response, "cookies"):
        answer.cookies = response.cookies
    return answer


# Methods whose body the API ignores (docs/guide/index.md): nothing a client sends with them can
# change what they do, so the body is dropped before any view, parser or guard sees it.
BODYLESS_METHODS = frozenset({"GET", "HEAD", "DELETE", "OPTIONS"})


class HeadAsGetMiddleware:
    """HEAD is GET without a body, on every route, whatever the view does with methods.

    Views that share one handler for several methods (an ``@action`` for GET and POST) branch
    on ``request.method``; DRF and Django route HEAD to the GET handler, where a test of
    ``method == "GET"`` failed and HEAD ran the write. Turning HEAD into GET before anything
    runs means every scope check, view and branch sees a read; the body is dropped at the
    end, ``Content-Length`` kept as GET's.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method != "HEAD":
            return self.get_response(request)
        request.method = "GET"
        request.META["REQUEST_METHOD"] = "GET"
        response = self.get_response(request)
        if response.streaming:
            # An event stream or a streamed report: never started, so it holds nothing yet
            # and is dropped (its close() would end the request a second time).
            headless = HttpResponse(status=response.status_code)
            for name, value in response.items():
                headless[name] = value
            return headless
        response.content = b""
        return response


def _content_length(request) -> int | None:
    """The declared length; None when absent, -1 when malformed."""
    raw = request.META.get("CONTENT_LENGTH")
    if raw in (None, ""):
        return None
    try:
        length = int(raw)
    except ValueError:
        return -1
    return length if length >= 0 else -1


def _is_chunked(request) -> bool:
    return "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()


def _too_large(limit: int):
    return json_error(
        413,
        "PAYLOAD_TOO_LARGE",
        f"The request body is larger than {limit} bytes.",
        {"max_bytes": limit},
    )


class ApiBodyGuardMiddleware:
    """Every request body on an API route is read whole, within the limit, and is JSON.

    - GET, HEAD, DELETE and OPTIONS bodies are ignored (dropped here);
    - a chunked body (no ``Content-Length``) is read from the server's input up to
      ``MAX_BODY_BYTES`` and handed on as if its length had been declared; Django alone would
      read zero bytes of it, so the view saw an empty body and answered 200 for a write that
      never happened. A server whose input does not end with the body (no
      ``wsgi.input_terminated``) cannot be read safely: 411;
    - over the limit: 413; not ``application/json``: 415.

    It runs before routing, so an endpoint that never reads its body cannot let a non-JSON
    or huge one slip through unnoticed.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path.startswith(API_PREFIX):
            return self.get_response(request)
        length = _content_length(request)
        chunked = _is_chunked(request)
        if request.method in BODYLESS_METHODS:
            if length or chunked:
                _drop_body(request)
            return self.get_response(request)
        if length == -1:
            return json_error(400, "BAD_REQUEST", "Malformed Content-Length header.")
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if chunked and length is None:
            refused = _read_chunked(request, limit)
            if refused is not None:
                return refused
            length = len(request._body)
        if not length:
            return self.get_response(request)
        if limit is not None and length > limit:
            return _too_large(limit)
        media_type = request.content_type or ""
        if media_type != "application/json" and not request.path.startswith(NON_JSON_PATHS):
            return json_error(
                415,
                "UNSUPPORTED_MEDIA_TYPE",
                "Request bodies must be application/json.",
                {"content_type": [media_type or "(none)"]},
            )
        return self.get_response(request)


def _drop_body(request) -> None:
    request.META["CONTENT_LENGTH"] = "0"
    request.META.pop("HTTP_TRANSFER_ENCODING", None)
    request._body = b""
    request._stream = io.BytesIO()


def _read_chunked(request, limit: int | None):
    """Read a chunked body into the request (the server has decoded the chunks), or refuse."""
    environ = getattr(request, "environ", {})
    stream = environ.get("wsgi.input")
    if stream is None or not environ.get("wsgi.input_terminated"):
        return json_error(
            411,
            "LENGTH_REQUIRED",
            "This server cannot read a chunked body; send a Content-Length header.",
        )
    cap = limit + 1 if limit is not None else -1
    body = bytearray()
    while cap < 0 or len(body) < cap:
        block = stream.read(65536 if cap < 0 else min(65536, cap - len(body)))
        if not block:
            break
        body.extend(block)
    if limit is not None and len(body) > limit:
        return _too_large(limit)
    request._body = bytes(body)
    request._stream = io.BytesIO(request._body)
    request.META["CONTENT_LENGTH"] = str(len(body))
    request.META.pop("HTTP_TRANSFER_ENCODING", None)
    return None


# A query value longer than this is no filter anyone means; a URL that long is an attack or
# a bug, and a bounded value keeps git arguments and SQL parameters bounded too.
MAX_QUERY_VALUE_LENGTH = 2048


class ApiQueryGuardMiddleware:
    """400 for query parameters no route can take: a NUL character (PostgreSQL text cannot
    hold one, so a filter would fail in the database as a 500) or a value over
    ``MAX_QUERY_VALUE_LENGTH`` characters. Checked once here for every route, present and
    future, instead of in each filter."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(API_PREFIX) and request.GET:
            for name, values in request.GET.lists():
                problem = _query_problem(name, values)
                if problem:
                    return json_error(400, "BAD_REQUEST", problem, {name[:64]: [problem]})
        return self.get_response(request)


def _query_problem(name: str, values: list[str]) -> str | None:
    if "\x00" in name or any("\x00" in value for value in values):
        return "Query parameters cannot contain NUL characters."
    if len(name) > MAX_QUERY_VALUE_LENGTH or any(
        len(value) > MAX_QUERY_VALUE_LENGTH for value in values
    ):
        return f"Query parameters are limited to {MAX_QUERY_VALUE_LENGTH} characters."
    return None
