"""One access line per request, logged by the application (logger ``collab.access``), with
what a server's access log cannot know: the route template, the caller's user and API key.

The servers' own access logs stay off (collab.logs silences uvicorn's), so a request is one
line, not two. The line names the route as a template (``/v1/projects/{pk}/issues``), never
the path or the query string, which may carry an identifier or a token.
"""

import logging
import time

from collab.api.metrics import route_template as template_of
from collab.db.querycost import DISCONNECT_KEY

logger = logging.getLogger("collab.access")


def route_template(request) -> str | None:
    """The matched route as a template: ``/v1/issues/{pk}``; None when no route matched."""
    match = getattr(request, "resolver_match", None)
    if match is None or not match.route:
        return None
    return template_of(match.route)


def _caller(request) -> tuple[int | None, int | None]:
    user = getattr(request, "user", None)
    user_id = getattr(user, "pk", None) if getattr(user, "is_authenticated", False) else None
    api_key = getattr(getattr(request, "auth", None), "api_key", None)
    return user_id, getattr(api_key, "pk", None)


class AccessLogMiddleware:
    """The outermost middleware: times the whole request, answers included that a middleware
    gives before any view (a 413, a 429). A streamed answer is logged when its head is ready."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        method = request.method  # before HeadAsGetMiddleware makes a HEAD a GET
        response = self.get_response(request)
        user_id, api_key_id = _caller(request)
        status = response.status_code
        # A request whose client left ends as one past its deadline (503): nobody's fault here.
        disconnect = request.META.get(DISCONNECT_KEY)
        client_gone = disconnect is not None and disconnect.cancelled
        level = logging.ERROR if status >= 500 and not client_gone else logging.INFO
        route = route_template(request)
        logger.log(
            level,
            "%s %s %s",
            method,
            route or "(no route)",
            status,
            extra={
                "request_id": getattr(request, "request_id", "-"),
                "method": method,
                "route": route,
                "status": status,
                "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                "user_id": user_id,
                "api_key_id": api_key_id,
            },
        )
        return response
