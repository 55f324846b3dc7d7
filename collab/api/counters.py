"""Windowed counters, atomic across every server process: the storage of the rate limits.

A counter has a key and a window. The window starts with the counter's first hit and lasts
``window`` seconds; ``counter_hit`` counts one more event unless the limit is already reached,
in one atomic step, and says where the window stands. Checking and counting in the same step
is what makes the count exact when many processes hit one key at once (a read followed by a
write, as DRF's cache throttle does, lets every concurrent reader through).

Two stores, chosen by ``RATE_LIMIT_BACKEND``:

- ``redis``: a Lua script per hit (``EVALSHA``: one round trip). Redis runs scripts one at a
  time, so the read, the restart of an ended window and the increment cannot interleave.
  A counter is a hash ``{n: hits, r: end of the window}`` that expires soon after ``r``.
- ``database``: one ``INSERT ... ON CONFLICT (key) DO UPDATE ... WHERE ... RETURNING`` on
  ``RATE_LIMIT_COUNTER_MODEL`` (``ratelimits.RateLimitCounter``). PostgreSQL locks the row
  and evaluates the update against its latest version; SQLite runs one writer at a time.
  Either way one statement, one count.

Hits past the limit are not counted, so ``hits`` never exceeds the limit it was hit with and a
client that keeps knocking does not push its own window further away.

Both stores fail open: when the store cannot answer (Redis down, a timeout), the call logs a
warning and returns ``None``, and the caller serves the request unlimited. The store is then
left alone for ``RATE_LIMIT_FAIL_OPEN_SECONDS``, so an outage costs one short timeout every few
seconds per process rather than one per request.

Time is read from ``now()`` (Unix seconds) by the application, not by the store, so every
process and both stores agree on it, and tests can move it.
"""

import functools
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.signals import setting_changed
from django.db import DatabaseError, connection
from django.dispatch import receiver

logger = logging.getLogger("collab.ratelimit")


def now() -> float:
    return time.time()


@dataclass(frozen=True)
class Window:
    """A counter's state: ``hits`` counted in the window ending at ``reset`` (Unix seconds)."""

    hits: int
    reset: int
    counted: bool = True  # False: the limit was reached, this hit was refused

    @classmethod
    def fresh(cls, window: int, at: float) -> "Window":
        """The window a hit at ``at`` would open: nothing counted yet."""
        return cls(hits=0, reset=int(at) + window, counted=False)

    def retry_after(self, at: float) -> int:
        return max(1, int(self.reset - at + 0.999))


class _FailOpen:
    """Runs store calls, turning the store's errors into ``None`` and a logged warning."""

    name = ""
    errors: tuple[type[Exception], ...] = ()

    def __init__(self, *, pause: float):
        self._pause = pause
        self._down_until = 0.0
        self._lock = threading.Lock()

    def _call(self, what: str, operation):
        if time.monotonic() < self._down_until:
            return None
        try:
            return operation()
        except self.errors as exc:
            with self._lock:
                already_down = time.monotonic() < self._down_until
                self._down_until = time.monotonic() + self._pause
            if not already_down:
                logger.warning(
                    "Rate limiter: the %s store failed (%s: %s) during %s; serving requests "
                    "without limits, retrying in %.0f s.",
                    self.name,
                    exc.__class__.__name__,
                    exc,
                    what,
                    self._pause,
                )
            return None


# Redis --------------------------------------------------------------------------------------

# KEYS[1]: the counter. ARGV: limit, window (seconds), now (Unix seconds).
# Returns {hits, reset, counted}.
_HIT_SCRIPT = """
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'n', 'r')
local hits = tonumber(state[1]) or 0
local reset = tonumber(state[2])
if reset == nil or reset <= now then
  hits = 0
  reset = math.floor(now) + window
  redis.call('HSET', KEYS[1], 'n', 0, 'r', reset)
  redis.call('EXPIRE', KEYS[1], window + 60)
end
if hits >= limit then
  return {hits, reset, 0}
end
hits = redis.call('HINCRBY', KEYS[1], 'n', 1)
return {hits, reset, 1}
"""


# KEYS[1]: the counter. ARGV: the end of the window the hit was counted in. Takes one hit
# back, only from that window and never below zero.
_REFUND_SCRIPT = """
local state = redis.call('HMGET', KEYS[1], 'n', 'r')
local hits = tonumber(state[1]) or 0
if tonumber(state[2]) == tonumber(ARGV[1]) and hits > 0 then
  return redis.call('HINCRBY', KEYS[1], 'n', -1)
end
return -1
"""


class RedisCounters(_FailOpen):
    name = "Redis"

    def __init__(self, *, url: str, timeout: float, pause: float):
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        super().__init__(pause=pause)
        self.errors = (redis.RedisError, OSError)
        # Short timeouts and no retries: a slow Redis must cost a request milliseconds.
        self.client = redis.Redis.from_url(
            url,
            socket_connect_timeout=timeout,
            socket_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=30,
        )
        self._hit = self.client.register_script(_HIT_SCRIPT)
        self._refund = self.client.register_script(_REFUND_SCRIPT)

    def hit(self, key: str, *, limit: int, window: int, at: float) -> Window | None:
        def run():
            hits, reset, counted = self._hit(keys=[key], args=[limit, window, repr(at)])
            return Window(hits=int(hits), reset=int(reset), counted=bool(counted))

        return self._call("a hit", run)

    def refund(self, key: str, *, reset: int) -> None:
        self._call("a refund", lambda: self._refund(keys=[key], args=[reset]))

    def peek(self, keys: list[str], *, at: float) -> list[Window | None] | None:
        def run():
            pipe = self.client.pipeline(transaction=False)
            for key in keys:
                pipe.hmget(key, "n", "r")
            states = []
            for hits, reset in pipe.execute():
                live = reset is not None and int(reset) > at
                states.append(Window(int(hits or 0), int(reset)) if live else None)
            return states

        return self._call("a read", run)

    def clear(self, keys: list[str]) -> None:
        self._call("a reset", lambda: self.client.delete(*keys))


# Database -----------------------------------------------------------------------------------


class DatabaseCounters(_FailOpen):
    name = "database"
    errors = (DatabaseError,)

    def __init__(self, *, pause: float):
        super().__init__(pause=pause)
        quote = connection.ops.quote_name
        table = quote(counter_model()._meta.db_table)
        key, hits, reset = quote("key"), quote("hits"), quote("reset_at")
        self._select = f"SELECT {key}, {hits}, {reset} FROM {table} WHERE {key} IN "  # noqa: S608
        self._delete = f"DELETE FROM {table} WHERE {key} IN "  # noqa: S608
        self._refund = (
            f"UPDATE {table} SET {hits} = {hits} - 1 "  # noqa: S608
            f"WHERE {key} = %s AND {reset} = %s AND {hits} > 0"
        )
        # Parameters: key, new reset | now, now, new reset | now, limit.
        self._upsert = (
            f"INSERT INTO {table} ({key}, {hits}, {reset}) VALUES (%s, 1, %s) "  # noqa: S608
            f"ON CONFLICT ({key}) DO UPDATE SET "
            f"{hits} = CASE WHEN {table}.{reset} <= %s THEN 1 ELSE {table}.{hits} + 1 END, "
            f"{reset} = CASE WHEN {table}.{reset} <= %s THEN %s ELSE {table}.{reset} END "
            f"WHERE {table}.{reset} <= %s OR {table}.{hits} < %s "
            f"RETURNING {hits}, {reset}"
        )

    def hit(self, key: str, *, limit: int, window: int, at: float) -> Window | None:
        def run():
            new_reset = int(at) + window
            if limit > 0:
                with connection.cursor() as cursor:
                    cursor.execute(self._upsert, [key, new_reset, at, at, new_reset, at, limit])
                    row = cursor.fetchone()
                if row is not None:
                    return Window(hits=int(row[0]), reset=int(row[1]), counted=True)
            # At the limit: nothing was written; read the window for the answer.
            [state] = self._peek([key], at)
            if state is None:
                return Window(hits=0, reset=new_reset, counted=False)
            return Window(hits=state.hits, reset=state.reset, counted=False)

        return self._call("a hit", run)

    def refund(self, key: str, *, reset: int) -> None:
        def run():
            with connection.cursor() as cursor:
                cursor.execute(self._refund, [key, reset])

        self._call("a refund", run)

    def _peek(self, keys: list[str], at: float) -> list[Window | None]:
        placeholders = ", ".join(["%s"] * len(keys))
        with connection.cursor() as cursor:
            cursor.execute(f"{self._select}({placeholders})", keys)
            rows = {row[0]: (int(row[1]), int(row[2])) for row in cursor.fetchall()}
        states: list[Window | None] = []
        for key in keys:
            hits, reset = rows.get(key, (0, 0))
            states.append(Window(hits, reset) if reset > at else None)
        return states

    def peek(self, keys: list[str], *, at: float) -> list[Window | None] | None:
        return self._call("a read", lambda: self._peek(keys, at))

    def clear(self, keys: list[str]) -> None:
        def run():
            placeholders = ", ".join(["%s"] * len(keys))
            with connection.cursor() as cursor:
                cursor.execute(f"{self._delete}({placeholders})", keys)

        self._call("a reset", run)


# The store in use ---------------------------------------------------------------------------


@functools.cache
def _store(backend: str, url: str, timeout: float, pause: float):
    if backend == "redis":
        return RedisCounters(url=url, timeout=timeout, pause=pause)
    return DatabaseCounters(pause=pause)


def store() -> RedisCounters | DatabaseCounters:
    """The configured store, one per process (a Redis client holds a connection pool)."""
    return _store(
        settings.RATE_LIMIT_BACKEND,
        settings.REDIS_URL,
        settings.RATE_LIMIT_REDIS_TIMEOUT,
        settings.RATE_LIMIT_FAIL_OPEN_SECONDS,
    )


@receiver(setting_changed)
def _forget_stores(*, setting, **kwargs):
    if setting.startswith("RATE_LIMIT_") or setting == "REDIS_URL":
        _store.cache_clear()


def _key(name: str) -> str:
    return f"{settings.RATE_LIMIT_KEY_PREFIX}{name}"


def counter_model() -> Any:
    """The model the database store counts in (``settings.RATE_LIMIT_COUNTER_MODEL``)."""
    return apps.get_model(settings.RATE_LIMIT_COUNTER_MODEL)


def counter_hit(name: str, *, limit: int, window: int, at: float | None = None) -> Window | None:
    """Count one event on ``name`` unless ``limit`` is reached; ``None`` if the store is down."""
    return store().hit(_key(name), limit=limit, window=window, at=now() if at is None else at)


def counter_refund(name: str, *, reset: int) -> None:
    """Take back one hit counted in the window ending at ``reset`` (a request that turned
    out not to count); nothing if that window is over."""
    store().refund(_key(name), reset=reset)


def counter_peek(names: list[str], *, at: float | None = None) -> list[Window | None] | None:
    """The live windows of ``names`` (``None`` for a counter with no live window), without
    counting; ``None`` if the store is down. One round trip whatever the number of names."""
    return store().peek([_key(name) for name in names], at=now() if at is None else at)


def counter_clear(names: list[str]) -> None:
    store().clear([_key(name) for name in names])


def counters_purge(*, older_than: int = 3600) -> int:
    """Delete database counters whose window ended more than ``older_than`` seconds ago."""
    deleted, _ = counter_model().objects.filter(reset_at__lt=int(now()) - older_than).delete()
    return deleted
