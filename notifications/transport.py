"""One HTTP POST of a delivery, to an address checked by the private-address guard.

The URL's host is resolved and checked here, at send time in the worker, by the guard
(``collab.netguard.pin``); the connection then goes to that checked address, with the original
name in the ``Host`` header and, for HTTPS, in SNI and certificate verification, so a name that
resolves elsewhere by now (DNS rebinding) reaches nothing unchecked. Redirects are not
followed: a receiver answers where it was registered.

Connections are kept alive, in one pool per receiver (its scheme, checked address, port and
name: a name that resolves elsewhere gets a pool of its own). Senders share the pools, so a
worker sending from many threads reuses a handful of connections per receiver.

One slow or dead receiver must not hold up the others. Each receiver has a gate: at most
``WEBHOOK_HOST_CONCURRENCY`` of its deliveries are in flight at once in this process (a sender
waits ``WEBHOOK_HOST_WAIT_SECONDS`` for a turn, then defers its delivery: no attempt is made),
and after ``WEBHOOK_HOST_FAILURES_TO_PAUSE`` network failures in a row (timeouts, refused
connections) it is paused: its deliveries fail at once, as attempts with their retry schedule,
until the pause (``WEBHOOK_HOST_PAUSE_SECONDS``, doubling while it keeps failing, at most ten
times that) ends and one delivery tries it again.
"""

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import urllib3
from django.conf import settings

from collab.netguard import UnsafeAddress, pin

RESPONSE_EXCERPT_BYTES = 2048
DRAIN_BYTES = 64 * 1024
MAX_POOLS = 256  # receivers with open connections kept per process; the oldest closes first


@dataclass
class PostResult:
    status_code: int | None
    duration_ms: int
    response_excerpt: str = ""
    error: str = ""
    # Not sent, and not an attempt: the receiver has its fill of deliveries in flight.
    deferred: bool = False

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def retryable(self) -> bool:
        """Network failures, 5xx, 408 and 429 may pass; other answers will not change."""
        if self.status_code is None:
            return not self.error.startswith("refused:")
        return self.status_code >= 500 or self.status_code in (408, 429)


@dataclass
class Gate:
    """One receiver's share of this process: its deliveries in flight, its failures in a row."""

    slots: threading.BoundedSemaphore
    lock: threading.Lock = field(default_factory=threading.Lock)
    failures: int = 0
    paused_until: float = 0.0
    probing: bool = False
    # Sends out now, when they last took every slot, and when one last ended: a receiver
    # whose slots have all been taken for longer than a sender would wait, with nothing
    # back meanwhile, is stuck rather than busy, and waiting on it would only hold a sender.
    in_flight: int = 0
    full_at: float = 0.0
    ended_at: float = 0.0

    def enter(self, now: float) -> str | None:
        """``None`` to go ahead (holding a slot), else why not: "paused" or "busy"."""
        wait = settings.WEBHOOK_HOST_WAIT_SECONDS
        with self.lock:
            if self.paused_until > now or (self.paused_until and self.probing):
                return "paused"
            if self.paused_until:
                self.probing = True  # the pause is over: one delivery finds out
            stuck = (
                self.in_flight >= settings.WEBHOOK_HOST_CONCURRENCY
                and now - max(self.full_at, self.ended_at) > wait
            )
        entered = self.slots.acquire(blocking=False) if stuck else self.slots.acquire(timeout=wait)
        with self.lock:
            if not entered:
                self.probing = False
                return "busy"
            self.in_flight += 1
            if self.in_flight >= settings.WEBHOOK_HOST_CONCURRENCY:
                self.full_at = time.monotonic()
        return None

    def leave(self, *, reached: bool, now: float) -> None:
        """After a send: ``reached`` when the receiver answered at all (any status)."""
        self.slots.release()
        with self.lock:
            self.probing = False
            self.in_flight -= 1
            self.ended_at = now
            if reached:
                self.failures, self.paused_until = 0, 0.0
                return
            self.failures += 1
            if self.failures >= settings.WEBHOOK_HOST_FAILURES_TO_PAUSE:
                base = settings.WEBHOOK_HOST_PAUSE_SECONDS
                doublings = self.failures - settings.WEBHOOK_HOST_FAILURES_TO_PAUSE
                self.paused_until = now + min(base * 2**doublings, base * 10)


class Receivers:
    """The pools and gates of this process, by receiver."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pools: OrderedDict[tuple, urllib3.HTTPConnectionPool] = OrderedDict()
        self.gates: dict[tuple[str, int], Gate] = {}

    def gate(self, host: str, port: int) -> Gate:
        with self.lock:
            gate = self.gates.get((host, port))
            if gate is None:
                slots = threading.BoundedSemaphore(settings.WEBHOOK_HOST_CONCURRENCY)
                gate = self.gates[(host, port)] = Gate(slots)
            return gate

    def pool(self, scheme: str, address: str, port: int, host: str) -> urllib3.HTTPConnectionPool:
        key = (scheme, address, port, host)
        with self.lock:
            pool = self.pools.get(key)
            if pool is not None:
                self.pools.move_to_end(key)
                return pool
            options: dict[str, Any] = {
                "retries": False,
                "maxsize": settings.WEBHOOK_HOST_CONCURRENCY,
                "block": False,
            }
            if scheme == "https":
                pool = urllib3.HTTPSConnectionPool(
                    address, port, server_hostname=host, assert_hostname=host, **options
                )
            else:
                pool = urllib3.HTTPConnectionPool(address, port, **options)
            self.pools[key] = pool
            if len(self.pools) > MAX_POOLS:
                _key, oldest = self.pools.popitem(last=False)
                oldest.close()
            return pool

    def close(self) -> None:
        with self.lock:
            for pool in self.pools.values():
                pool.close()
            self.pools.clear()
            self.gates.clear()


receivers = Receivers()


def post(url: str, *, body: bytes, headers: dict[str, str], timeout: float) -> PostResult:
    started = time.monotonic()

    def elapsed() -> int:
        return int((time.monotonic() - started) * 1000)

    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        address = pin(host, port)
    except UnsafeAddress as exc:
        return PostResult(None, elapsed(), error=f"refused: {exc}")
    gate = receivers.gate(host, port)
    held = gate.enter(time.monotonic())
    if held == "busy":
        return PostResult(None, 0, error="deferred: the receiver is busy", deferred=True)
    if held == "paused":
        return PostResult(
            None,
            0,
            error=(
                f"not sent: the receiver failed {gate.failures} times in a row; "
                "it is paused and tried again shortly"
            ),
        )
    reached = False
    try:
        result = _send(parts, address, host, port, body, headers, timeout, elapsed)
        reached = result.status_code is not None
        return result
    finally:
        gate.leave(reached=reached, now=time.monotonic())


def _send(parts, address, host, port, body, headers, timeout, elapsed) -> PostResult:
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    default_port = port == (443 if parts.scheme == "https" else 80)
    name = f"[{host}]" if ":" in host else host
    request_headers = {"Host": name if default_port else f"{name}:{port}", **headers}
    pool = receivers.pool(parts.scheme, address, port, host)
    try:
        response = pool.urlopen(
            "POST",
            path,
            body=body,
            headers=request_headers,
            redirect=False,
            preload_content=False,
            assert_same_host=False,
            timeout=urllib3.Timeout(total=timeout),
        )
        try:
            excerpt = response.read(RESPONSE_EXCERPT_BYTES, decode_content=True)
            # The rest of a short answer is read away, so the connection can be kept; one
            # that goes on is cut off.
            response.read(DRAIN_BYTES)
            if not response.closed:
                response.close()
        finally:
            response.release_conn()
        return PostResult(
            response.status, elapsed(), response_excerpt=excerpt.decode("utf-8", "replace")
        )
    except urllib3.exceptions.HTTPError as exc:
        return PostResult(None, elapsed(), error=f"{type(exc).__name__}: {exc}"[:500])
    except OSError as exc:
        return PostResult(None, elapsed(), error=f"{type(exc).__name__}: {exc}"[:500])
