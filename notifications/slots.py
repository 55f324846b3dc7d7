"""How many event streams one credential holds open: at most ``STREAM_MAX_PER_CREDENTIAL``.

A credential is an API key (each key its own count: a service account's keys are separate
integrations), or a user signed in by JWT or OAuth (all their tokens share one count: a
login mints a new token, so counting per token would bound nothing).

With Redis the count holds across every process and node: one sorted set per credential, a
member per open stream scored with the time its lease ends. An open stream renews its lease
as its frames go out (a heartbeat at least every ``EVENT_STREAM_HEARTBEAT_SECONDS``), so the
streams of a node that crashed lapse within ``LEASE_SECONDS`` instead of holding their slots
for ever. Without Redis (the embedded default, one process) the count is kept in memory.
A stream that closes gives its slot back at once.
"""

import contextlib
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass

import redis
from django.conf import settings

from collab.api.exceptions import RateLimited
from collab.redisclient import quick_client

KEY_PREFIX = "collab:stream-slots:"

# Drop the lapsed leases, then take a slot if one is free: one round trip, atomic.
_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
    return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
"""

_local_lock = threading.Lock()
_local: dict[str, set[str]] = defaultdict(set)


def lease_seconds() -> float:
    """How long a stream's slot lasts unrenewed: a few heartbeats, at least a minute."""
    return max(60.0, 4 * settings.EVENT_STREAM_HEARTBEAT_SECONDS)


def credential_of(request) -> str:
    credential = request.auth
    api_key = getattr(credential, "api_key", None)
    if api_key is not None:
        return f"key:{api_key.pk}"
    return f"user:{request.user.pk}"


@dataclass(eq=False)
class Slot:
    """One open stream's place in its credential's count."""

    credential: str
    member: str
    renewed_at: float

    def renew_if_due(self) -> None:
        """Extend the lease when a third of it has gone (cheap to call on every frame)."""
        now = time.monotonic()
        if now - self.renewed_at < lease_seconds() / 3:
            return
        self.renewed_at = now
        client = quick_client()
        if client is None:
            return
        try:
            # XX: a lease that lapsed meanwhile is not taken back behind the count's back.
            client.zadd(_key(self.credential), {self.member: _lease_end()}, xx=True)
            client.pexpire(_key(self.credential), int(lease_seconds() * 1000))
        except redis.RedisError:
            pass  # renewed on the next frame; the slot lapses only after a whole lease

    def release(self) -> None:
        client = quick_client()
        if client is None:
            with _local_lock:
                members = _local.get(self.credential)
                if members is not None:
                    members.discard(self.member)
                    if not members:
                        del _local[self.credential]
            return
        with contextlib.suppress(redis.RedisError):  # else the lease lapses by itself
            client.zrem(_key(self.credential), self.member)


def _key(credential: str) -> str:
    return KEY_PREFIX + credential


def _lease_end() -> float:
    return time.time() + lease_seconds()


def slot_acquire(*, credential: str) -> Slot:
    """A slot for one more stream of this credential, or ``RateLimited`` (429) when it holds
    ``STREAM_MAX_PER_CREDENTIAL`` already."""
    limit = settings.STREAM_MAX_PER_CREDENTIAL
    member = uuid.uuid4().hex
    client = quick_client()
    if client is None:
        with _local_lock:
            members = _local[credential]
            taken = len(members) < limit
            if taken:
                members.add(member)
    else:
        try:
            taken = bool(
                client.eval(
                    _ACQUIRE,
                    1,
                    _key(credential),
                    time.time(),
                    limit,
                    _lease_end(),
                    member,
                    int(lease_seconds() * 1000),
                )
            )
        except redis.RedisError:
            # Redis down: the stream opens uncounted rather than the service refusing them all
            # (as the rate limiter fails open for a while); its release is then a no-op.
            taken = True
    if not taken:
        error = RateLimited(
            f"This credential holds {limit} open event streams, the most it may. Close one, "
            "or try again later.",
            details={"limit": limit, "reason": "stream_limit"},
        )
        error.retry_after = int(settings.EVENT_STREAM_HEARTBEAT_SECONDS) or 1
        raise error
    return Slot(credential, member, time.monotonic())


async def held_async(slot: Slot, frames):
    """The frames of an ASGI stream, its slot renewed as they go and given back at its end."""
    try:
        async for frame in frames:
            slot.renew_if_due()
            yield frame
    finally:
        slot.release()
        await frames.aclose()


class HeldSync:
    """The same for a stream on a WSGI thread. A class, not a generator: the response closes
    it even when no frame was asked for (a generator's ``finally`` would then never run)."""

    def __init__(self, slot: Slot, frames):
        self.slot, self.frames = slot, frames

    def __iter__(self):
        return self

    def __next__(self) -> bytes:
        frame = next(self.frames)
        self.slot.renew_if_due()
        return frame

    def close(self) -> None:
        self.slot.release()
        self.frames.close()
