"""Conditional requests (docs/guide/conditional-requests.md): ETags, ``If-None-Match`` and
``If-Match``.

- Every ``200`` to a GET under ``/v1/`` carries an ``ETag``: a digest of the exact body, so
  it changes whenever anything the caller would read changes (a label renamed on an issue,
  a team grown on a project), with no version column to keep. A GET whose ``If-None-Match``
  holds the current tag answers ``304`` without a body; the rate limiter gives back what the
  request counted (``collab.api.ratelimit``).
- A PUT, PATCH or DELETE with ``If-Match`` is carried out only when the tag is the one a GET of
  the same path would answer now: the GET is run first, inside the write's transaction and
  under a lock on the path (a PostgreSQL advisory lock), so two editors holding the same tag
  cannot both pass. A stale tag answers ``412 PRECONDITION_FAILED`` with the current tag, and
  nothing is written. ``If-Match: *`` asks only that the resource exist. A path without a GET
  (a workspace member's, say) has no tag to match: a write there that would succeed answers
  412 and is rolled back; one that would fail answers its own error (RFC 9110, 13.2.1:
  preconditions are weighed only where the answer would otherwise be a success).
- A header that holds no entity tags names none that could match (RFC 9110, 13.1.1-2): an
  ``If-None-Match`` of that kind holds (the GET answers as without it), an ``If-Match`` fails
  (412, nothing written). Each is read only by the methods it is for (If-None-Match by GET,
  If-Match by PUT, PATCH and DELETE), and only on routes that answer the method (a PUT where
  there is none is still a 405).
"""

import hashlib
import threading

from django.db import connection, transaction
from django.http import HttpRequest, HttpResponseNotModified, QueryDict
from django.urls import Resolver404, resolve
from django.utils.http import parse_etags

from .middleware import API_PREFIX, json_error

CONDITIONAL_WRITES = frozenset({"PUT", "PATCH", "DELETE"})
# Headers a 304 repeats from the 200 it stands for (RFC 9110, section 15.4.5).
NOT_MODIFIED_HEADERS = ("ETag", "Cache-Control", "Content-Location", "Vary", "Expires")
# What the GET run for an If-Match check must not inherit from the write.
_WRITE_ONLY_META = ("CONTENT_LENGTH", "CONTENT_TYPE", "HTTP_IF_MATCH", "HTTP_IF_NONE_MATCH")


_sqlite_lock = threading.Lock()


def body_etag(content: bytes) -> str:
    return f'"{hashlib.blake2b(content, digest_size=16).hexdigest()}"'


def _opaque(tag: str) -> str:
    return tag.removeprefix("W/")


def none_match(header: str, etag: str) -> bool:
    """Whether ``If-None-Match`` names ``etag`` (weak comparison, as RFC 9110 asks)."""
    tags = parse_etags(header)
    return "*" in tags or _opaque(etag) in {_opaque(tag) for tag in tags}


def if_match(header: str, etag: str | None) -> bool:
    """Whether ``If-Match`` holds for a resource whose current tag is ``etag`` (strong)."""
    tags = parse_etags(header)
    return "*" in tags or (etag is not None and etag in tags)


class ConditionalRequestMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path.startswith(API_PREFIX):
            return self.get_response(request)
        if request.method in CONDITIONAL_WRITES and "HTTP_IF_MATCH" in request.META:
            return self._conditional_write(request)
        response = self.get_response(request)
        if request.method == "GET" and response.status_code == 200 and not response.streaming:
            if not response.has_header("ETag"):
                response["ETag"] = body_etag(response.content)
            header = request.META.get("HTTP_IF_NONE_MATCH")
            if header and none_match(header, response["ETag"]):
                return _not_modified(response)
        return response

    def _conditional_write(self, request):
        header = request.META["HTTP_IF_MATCH"].strip()
        match = _route(request)
        if match is None or not _handles(match.func, request.method):
            return self.get_response(request)  # the 404 of an unknown path, or its 405
        with transaction.atomic(), PathLock(request.path):
            found, current = _current_etag(request, match)
            if header == "*" or found is None:
                # ``*`` asks for no more; a GET refused (unseen, unauthenticated) leaves the
                # write to answer with the refusal it would answer anyway.
                return self.get_response(request)
            if found:
                if not if_match(header, current):
                    return _precondition_failed(current)
                return self.get_response(request)
            # No GET, so no tag can match: a write that would succeed answers 412 instead
            # and is undone; one that would fail answers its own error.
            response = self.get_response(request)
            if 200 <= response.status_code < 300:
                transaction.set_rollback(True)
                return _precondition_failed(None)
            return response


def _route(request):
    try:
        return resolve(request.path_info)
    except Resolver404:
        return None


def _not_modified(response):
    not_modified = HttpResponseNotModified()
    for name in NOT_MODIFIED_HEADERS:
        if response.has_header(name):
            not_modified[name] = response[name]
    for cookie in response.cookies.values():
        not_modified.cookies[cookie.key] = cookie
    return not_modified


def _precondition_failed(current: str | None):
    if current is None:
        return json_error(
            412,
            "PRECONDITION_FAILED",
            "This resource has no representation to compare If-Match with; send no If-Match.",
            {"if_match": ["Only * can hold here."]},
        )
    return json_error(
        412,
        "PRECONDITION_FAILED",
        "The resource changed since the ETag given in If-Match was read; nothing was changed. "
        "Read it again and reapply the change.",
        {"etag": current},
        ETag=current,
    )


class PathLock:
    """Serialises conditional writes to one path until the transaction ends."""

    def __init__(self, path: str):
        self.key = int.from_bytes(
            hashlib.blake2b(path.encode(), digest_size=8).digest(), "big", signed=True
        )
        self.held = False

    def __enter__(self):
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [self.key])
        else:
            # SQLite writes one transaction at a time, but the check is a read: keep the
            # check and the write of one process together.
            _sqlite_lock.acquire()
            self.held = True
        return self

    def __exit__(self, *exc):
        if self.held:
            _sqlite_lock.release()
        return False


def _handles(view, method: str) -> bool:
    """Whether the view behind a route answers ``method`` (a viewset's route maps methods
    to actions; a plain view class has a handler per method)."""
    actions = getattr(view, "actions", None)
    if actions is not None:
        return method.lower() in actions
    view_class = getattr(view, "cls", None) or getattr(view, "view_class", None)
    return view_class is None or hasattr(view_class, method.lower())


def _current_etag(request, match) -> tuple[bool | None, str | None]:
    """What a GET of the write's path answers now, by the same view, as the same caller:
    ``(True, tag)`` when it answers 200; ``(False, None)`` when the path has no GET;
    ``(None, None)`` when it answers anything else (the write will say why)."""
    if not _handles(match.func, "GET"):
        return False, None
    get = HttpRequest()
    get.method = "GET"
    get.path, get.path_info = request.path, request.path_info
    get.META = {key: value for key, value in request.META.items() if key not in _WRITE_ONLY_META}
    get.META["REQUEST_METHOD"] = "GET"
    get.GET = QueryDict()
    for attribute in ("request_id", "rate_limit", "_bearer_outcome"):
        if hasattr(request, attribute):
            setattr(get, attribute, getattr(request, attribute))
    response = match.func(get, *match.args, **match.kwargs)
    if hasattr(response, "render"):
        response.render()
    if response.status_code != 200 or response.streaming:
        return None, None
    return True, response.get("ETag") or body_etag(response.content)
