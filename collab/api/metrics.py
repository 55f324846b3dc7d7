"""The HTTP server's metrics (docs/operations/metrics.md), recorded by one middleware.

``http_server_request_duration_seconds`` is labelled by the route's template
(``/v1/projects/{project_id}/issues``), never the raw path; a path no route serves is
``unmatched``, as the view that answers it declares (``http_route = UNMATCHED``, a route fact
read like ``rate_limit``). The database statements of a request are counted with Django's
``execute_wrapper`` on each connection, not from ``connection.queries`` (kept only under DEBUG).

Everything here costs a request a few microseconds: the template of a route is worked out
once per route and kept; the duration is two clock reads and one histogram observation.
"""

import re
import time
from contextlib import ExitStack
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from django.db import connections
from django.urls import Resolver404, resolve
from prometheus_client import Counter, Gauge, Histogram

from .routes import view_fact

UNMATCHED = "unmatched"

# OpenTelemetry's advice for http.server.request.duration, in seconds.
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10)
QUERY_BUCKETS = (0, 1, 2, 3, 5, 8, 12, 20, 30, 50, 100)

REQUEST_DURATION = Histogram(
    "http_server_request_duration_seconds",
    "Time to answer a request, by method, route template and status.",
    ["http_request_method", "http_route", "http_response_status_code"],
    buckets=DURATION_BUCKETS,
)
ACTIVE_REQUESTS = Gauge(
    "http_server_active_requests",
    "Requests in flight.",
    ["http_request_method"],
    multiprocess_mode="livesum",
)
REQUEST_DB_QUERIES = Histogram(
    "collab_http_request_db_queries",
    "Database statements per request, by route template.",
    ["http_route"],
    buckets=QUERY_BUCKETS,
)
RATE_LIMIT_REFUSALS = Counter(
    "collab_rate_limit_refusals_total",
    "Requests refused 429 by the rate limiter, by tier (anonymous: no account).",
    ["tier"],
)

# The methods a label may name; any other is "_OTHER", as OpenTelemetry says, so a client
# cannot grow the label's values.
KNOWN_METHODS = frozenset(
    {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}
)

_NAMED_GROUP = re.compile(r"\(\?P<(\w+)>")
_CONVERTER = re.compile(r"<(?:\w+:)?(\w+)>")


@lru_cache(maxsize=1024)
def route_template(route: str) -> str:
    """``v1/projects/(?P<project_id>[0-9]{1,19})/issues$`` (a regex of DRF's router) or
    ``v1/projects/<int:project_id>`` (Django's ``path``) as ``/v1/projects/{project_id}...``."""
    route = route.removeprefix("^")
    for end in (r"\Z", "$"):
        route = route.removesuffix(end)
    parts, position = [], 0
    for match in _NAMED_GROUP.finditer(route):
        if match.start() < position:
            continue  # a group nested in one already replaced
        parts.append(route[position : match.start()])
        parts.append("{" + match.group(1) + "}")
        position = _group_end(route, match.end())
    parts.append(route[position:])
    return "/" + _CONVERTER.sub(r"{\1}", "".join(parts))


def _group_end(pattern: str, start: int) -> int:
    """Where the group opened just before ``start`` closes (after its ``)``)."""
    depth, index = 1, start
    while index < len(pattern) and depth:
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        index += 1
    return index


def request_route(request) -> str:
    match = getattr(request, "resolver_match", None)
    if match is None:
        # Answered before routing (a 429, a 413, a static file): its route is looked up here.
        try:
            match = resolve(request.path_info, getattr(request, "urlconf", None))
        except Resolver404:
            return UNMATCHED
    declared = view_fact(match.func, "http_route")
    if declared is not None:
        return declared
    return route_template(match.route) if match.route else UNMATCHED


class _QueryCounter:
    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        return execute(sql, params, many, context)


class HttpMetricsMiddleware:
    """Times every request and counts its statements; first in ``MIDDLEWARE``, so it sees
    every answer, the other middleware's refusals included. Off with ``METRICS_ENABLED=0``."""

    def __init__(self, get_response):
        if not settings.METRICS_ENABLED:
            raise MiddlewareNotUsed
        self.get_response = get_response

    def __call__(self, request):
        method = request.method if request.method in KNOWN_METHODS else "_OTHER"
        active = ACTIVE_REQUESTS.labels(method)
        active.inc()
        counter = _QueryCounter()
        started = time.perf_counter()
        try:
            with ExitStack() as stack:
                for alias in connections:
                    stack.enter_context(connections[alias].execute_wrapper(counter))
                response = self.get_response(request)
        finally:
            active.dec()
        elapsed = time.perf_counter() - started
        route = request_route(request)
        REQUEST_DURATION.labels(method, route, str(response.status_code)).observe(elapsed)
        REQUEST_DB_QUERIES.labels(route).observe(counter.count)
        return response
