"""One beat per cluster: a scheduler that sends due tasks only while it holds a Redis lock.

Every beat process (``celery -A collab beat``, or ``worker --beat``) runs this scheduler
(``CELERY_BEAT_SCHEDULER``). With a Redis broker, each tick first takes or renews the lock
``collab:beat:lock`` (one round trip, a lease of ``CELERY_BEAT_LOCK_TTL_SECONDS``, enforced by
Redis's own clock); the holder sends what is due and ticks at least every third of the lease,
so it renews long before the lease ends. The others stand by: they send nothing and try for
the lock every sixth of the lease. When the holder dies its lease lapses, and a standby takes
over within the lease plus one try (a holder that stops cleanly hands over at once).

The holder also writes when each entry last ran to ``collab:beat:last-run``; a beat taking
over reads it, so the schedule goes on where the previous holder left it: an entry that just
ran is not sent again, and one overdue is sent once, at once. (An entry that has not run since
the new holder started keeps the new holder's own start as its last run, as a fresh beat does:
no burst of every periodic task on takeover, or from a stale record.)

Without Redis (the embedded default: one machine, kombu's filesystem transport) there is no
lock and it is celery's own ``PersistentScheduler``, as before.
"""

import logging
import os
import socket
import time
import uuid
from datetime import datetime

import redis
from celery.beat import PersistentScheduler
from prometheus_client import Gauge

logger = logging.getLogger("collab.beat")

BEAT_LAST_TICK = Gauge(
    "collab_beat_last_tick_timestamp_seconds",
    "Unix time beat last sent each schedule entry.",
    ["entry"],
    multiprocess_mode="max",
)

LOCK_KEY = "collab:beat:lock"
LAST_RUN_KEY = "collab:beat:last-run"
DEFAULT_TTL_SECONDS = 30.0

# Take the lock when it is free, renew it when it is ours: 1 if we hold it now, else 0.
_ACQUIRE_OR_RENEW = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return 1
end
if not holder then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class LockedScheduler(PersistentScheduler):
    """``PersistentScheduler`` whose ``tick()`` sends due tasks only while it holds the lock."""

    def __init__(self, *args, **kwargs):
        # Which process holds the lock, for people reading it: host, pid, and a nonce.
        self.token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.holding = False
        self._redis = None
        self._redis_failing = False
        self._standby_said = False
        self._published: dict[str, str] = {}
        super().__init__(*args, **kwargs)
        self.lock_ttl = float(self.app.conf.get("beat_lock_ttl_seconds") or DEFAULT_TTL_SECONDS)

    # The lock --------------------------------------------------------------------------------

    @property
    def redis_url(self) -> str | None:
        url = self.app.conf.broker_url or ""
        return url if url.startswith(("redis://", "rediss://")) else None

    @property
    def renew_every(self) -> float:
        return self.lock_ttl / 3

    @property
    def standby_every(self) -> float:
        return self.lock_ttl / 6

    def client(self) -> redis.Redis:
        if self._redis is None:
            assert self.redis_url, "the beat lock needs REDIS_URL"
            self._redis = redis.Redis.from_url(
                self.redis_url, socket_timeout=2, socket_connect_timeout=2
            )
        return self._redis

    def lock_hold(self) -> bool:
        """Take the lock or renew our lease on it; whether we hold it now."""
        try:
            held = bool(
                self.client().eval(
                    _ACQUIRE_OR_RENEW, 1, LOCK_KEY, self.token, int(self.lock_ttl * 1000)
                )
            )
        except (redis.RedisError, OSError) as exc:
            # The broker is this Redis too: nothing could be sent anyway.
            if not self._redis_failing:
                logger.warning("beat: cannot reach Redis for the lock, sending nothing: %s", exc)
            self._redis_failing = True
            held = False
        else:
            self._redis_failing = False
        if held and not self.holding:
            logger.info("beat: holding the lock %s as %s; sending due tasks", LOCK_KEY, self.token)
            self._schedule_resume()
            self._standby_said = False
        elif not held and not self._standby_said:
            logger.info("beat: the lock %s is not ours; standing by", LOCK_KEY)
            self._standby_said = True
        self.holding = held
        return held

    def lock_release(self) -> None:
        if not self.holding:
            return
        self.holding = False
        try:
            self.client().eval(_RELEASE, 1, LOCK_KEY, self.token)
            logger.info("beat: released the lock %s", LOCK_KEY)
        except (redis.RedisError, OSError) as exc:
            logger.warning("beat: could not release the lock (it lapses by itself): %s", exc)

    # The schedule shared between beats -------------------------------------------------------

    def _schedule_resume(self) -> None:
        """Continue the schedule from the last runs the previous holder recorded."""
        try:
            shared = self.client().hgetall(LAST_RUN_KEY)
        except (redis.RedisError, OSError) as exc:
            logger.warning("beat: could not read the last runs, keeping this beat's: %s", exc)
            return
        now = self.app.now()
        for raw_name, raw_when in shared.items():
            entry = self.schedule.get(_text(raw_name))
            if entry is None:
                continue
            # The later of the two: an entry runs no more often than its interval across the
            # cluster, and waits at most one interval more. (Another machine's clock may be
            # ahead: never later than now.)
            try:
                when = datetime.fromisoformat(_text(raw_when))
                entry.last_run_at = max(entry.last_run_at, min(when, now))
            except (ValueError, TypeError):  # unreadable, or naive against aware
                continue
        self._heap = None  # rebuilt from the entries on the next tick
        self._published = {}

    def _schedule_publish(self) -> None:
        changed = {
            name: entry.last_run_at.isoformat()
            for name, entry in self.schedule.items()
            if entry.last_run_at is not None
            and self._published.get(name) != entry.last_run_at.isoformat()
        }
        if not changed:
            return
        try:
            self.client().hset(LAST_RUN_KEY, mapping=changed)
        except (redis.RedisError, OSError) as exc:  # published again on the next tick
            logger.warning("beat: could not record the last runs: %s", exc)
            return
        self._published.update(changed)

    # Celery's hooks ----------------------------------------------------------------------------

    def tick(self, *args, **kwargs) -> float:
        if self.redis_url is None:
            return super().tick(*args, **kwargs)
        if not self.lock_hold():
            return self.standby_every
        started = time.monotonic()
        interval = super().tick(*args, **kwargs)
        self._schedule_publish()
        if time.monotonic() - started > self.lock_ttl / 2:
            logger.warning("beat: a tick took over half the lock's lease; raise its TTL")
        return min(interval, self.renew_every)

    def apply_entry(self, entry, producer=None) -> None:
        super().apply_entry(entry, producer=producer)
        BEAT_LAST_TICK.labels(entry.name).set(time.time())

    def close(self) -> None:
        try:
            if self.redis_url is not None and self.holding:
                self._schedule_publish()
                self.lock_release()
        finally:
            super().close()

    @property
    def info(self) -> str:
        if self.redis_url is None:
            return super().info
        return f"{super().info}\n    . lock -> {LOCK_KEY} (ttl {self.lock_ttl:g} s)"
