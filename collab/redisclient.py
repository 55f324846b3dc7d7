"""The process's Redis client for quick calls made after a commit, whose failure costs only
speed (a wake-up, a hint): short timeouts, one connection pool per process and URL."""

from functools import cache

import redis
from django.conf import settings


@cache
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)


def quick_client() -> redis.Redis | None:
    """The client for ``settings.REDIS_URL``; None without Redis (the embedded default)."""
    return _client(settings.REDIS_URL) if settings.REDIS_URL else None
