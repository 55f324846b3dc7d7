"""Views outside the API proper: health probes, the schema and its docs page, and the JSON
answer for unknown routes."""

import functools
import logging
import sys

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.db import connection
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiYamlRenderer
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.response import Response

from collab import __version__
from collab.api.exceptions import error_of
from collab.api.metrics import UNMATCHED
from collab.api.middleware import json_error
from collab.api.ratelimit import EXEMPT
from collab.api.renderers import EnvelopeRenderer
from collab.db.querycost import client_left, is_cancelled

logger = logging.getLogger("collab.health")
READ_METHODS = ("GET", "HEAD", "OPTIONS")


def reads_only(view):
    """A plain Django view that answers GET (and so HEAD) and OPTIONS, and a JSON 405 else."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        allow = ", ".join(READ_METHODS)
        if request.method == "OPTIONS":
            response = JsonResponse({"success": True, "data": {"methods": list(READ_METHODS)}})
            response["Allow"] = allow
            return response
        if request.method != "GET":
            return json_error(
                405, "METHOD_NOT_ALLOWED", f'Method "{request.method}" not allowed.', Allow=allow
            )
        return view(request, *args, **kwargs)

    return csrf_exempt(wrapper)


class JsonAnswersMixin:
    """For views whose success is not the envelope (the schema document, the docs page): their
    OPTIONS and their errors (405, 404 for an unknown ``format``) are still JSON envelopes.

    Their own renderers cannot draw those: the docs page's template renderer crashed (500) on
    OPTIONS's metadata and answered HTML 405s.
    """

    def options(self, request, *args, **kwargs):
        request.accepted_renderer = EnvelopeRenderer()
        request.accepted_media_type = EnvelopeRenderer.media_type
        return Response(self.metadata_class().determine_metadata(request, self))

    def handle_exception(self, exc):
        self.request.accepted_renderer = EnvelopeRenderer()
        self.request.accepted_media_type = EnvelopeRenderer.media_type
        return super().handle_exception(exc)


class SchemaView(JsonAnswersMixin, SpectacularAPIView):
    """The OpenAPI document, JSON unless YAML is asked for (``?format=yaml``)."""

    renderer_classes = [OpenApiJsonRenderer, OpenApiYamlRenderer]
    rate_limit = EXEMPT  # public and static: not counted, no headers


class DocsView(JsonAnswersMixin, SpectacularSwaggerSplitView):
    """The interactive docs page (HTML, the one page of the API that is not JSON). Its
    set-up script is served from the page's own URL (``?script``), not inline, and its one
    inline style carries the nonce: the Content-Security-Policy of collab/csp.py holds."""

    template_name = "docs/swagger_ui.html"
    rate_limit = EXEMPT


@reads_only
def healthz(request):
    return JsonResponse({"success": True, "data": {"status": "ok", "version": __version__}})


@reads_only
def readyz(request):
    checks = {"database": _check_database()}
    if settings.REDIS_URL:
        checks["redis"] = _check_redis()
    ready = all(state == "ok" for state in checks.values())
    response = JsonResponse(
        {
            "success": ready,
            "data": {"status": "ready" if ready else "unavailable", "checks": checks},
        },
        status=200 if ready else 503,
    )
    # A probe that hung up before its check ran (its statement was not sent): nobody reads the
    # 503, and the service is not at fault; Django would log it as an ERROR.
    response._has_been_logged = client_left()
    return response


def _check_database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    except Exception as exc:  # any failure means "not ready"; say which
        if client_left():
            logger.info("Readiness: the client left before the database was checked")
        else:
            logger.warning("Readiness: database unreachable: %s", exc)
        return f"error: {exc.__class__.__name__}"


def _check_redis() -> str:
    import redis

    try:
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1
        )
        client.ping()
        return "ok"
    except redis.RedisError as exc:
        logger.warning("Readiness: Redis unreachable: %s", exc)
        return f"error: {exc.__class__.__name__}"


@csrf_exempt
def not_found(request, *args, **kwargs):
    return json_error(404, "NOT_FOUND", f"No route matches {request.method} {request.path}.")


not_found.http_route = UNMATCHED  # type: ignore[attr-defined] # a route fact, as rate_limit


@reads_only
def _metrics(request):
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    from collab.metrics import scrape_registry

    response = HttpResponse(generate_latest(scrape_registry()), content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response


@csrf_exempt
def metrics(request):
    """Prometheus's text exposition (docs/operations/metrics.md), to its readers only: anyone
    else gets the 404 of a path that does not exist, whatever the method."""
    if not metrics_scraper(request):
        return not_found(request)
    return _metrics(request)


def metrics_scraper(request) -> bool:
    """Whether the request may read the metrics (they are on, and it is one of their readers)."""
    return settings.METRICS_ENABLED and metrics_reader(request)


def metrics_reader(request) -> bool:
    from collab.metrics import environ_reader

    return environ_reader(request.META)


metrics.rate_limit = EXEMPT  # type: ignore[attr-defined] # a scraper is never counted
# A scrape addressed to a pod's IP, which ALLOWED_HOSTS cannot list, is served to the readers.
metrics.any_host = metrics_scraper  # type: ignore[attr-defined] # collab.api.middleware


def bad_request(request, exception=None, *args, **kwargs):
    """Django's 400 for what it refuses before any of our middleware answers (a Host the
    trace's middleware asked for first, a request too malformed to parse): JSON, as every other
    answer."""
    if isinstance(exception, DisallowedHost):
        return json_error(400, "BAD_REQUEST", "The Host header is not allowed here.")
    return json_error(400, "BAD_REQUEST", "The request cannot be processed.")


def server_error(request, *args, **kwargs):
    exc = sys.exc_info()[1]
    if exc is not None and is_cancelled(exc):
        # A statement cancelled outside a view (a middleware's: the credentials' lookup), at
        # its deadline or because its client left: the 503 a view's gets, logged as it is.
        status, body = error_of(exc)
        response = JsonResponse(body, status=status)
        response["Retry-After"] = str(settings.DATABASE_TIMEOUT_RETRY_AFTER)
        # Logged by error_of, at INFO when the client left: Django's would be an ERROR.
        response._has_been_logged = client_left()
        return response
    return json_error(
        500,
        "INTERNAL_ERROR",
        "The service failed to handle this request.",
        {"request_id": getattr(request, "request_id", "")},
    )
