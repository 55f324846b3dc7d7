"""Views outside the API proper: health probes and the JSON answer for unknown routes."""

import logging

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt

from collab.api.middleware import json_error

logger = logging.getLogger("collab.health")


def healthz(request):
    return JsonResponse({"success": True, "data": {"status": "ok"}})


def readyz(request):
    checks = {"database": _check_database()}
    if settings.REDIS_URL:
        checks["redis"] = _check_redis()
    ready = all(state == "ok" for state in checks.values())
    return JsonResponse(
        {
            "success": ready,
            "data": {"status": "ready" if ready else "unavailable", "checks": checks},
        },
        status=200 if ready else 503,
    )


def _check_database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    except Exception as exc:  # any failure means "not ready"; say which
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


def server_error(request, *args, **kwargs):
    return json_error(
        500,
        "INTERNAL_ERROR",
        "The service failed to handle this request.",
        {"request_id": getattr(request, "request_id", "")},
    )
