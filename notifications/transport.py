"""One HTTP POST of a delivery, to an address checked by the private-address guard.

The URL's host is resolved and checked here, at connect time in the worker, by the guard
(``collab.netguard.pin``); the connection then goes to that checked address, with the original
name in the ``Host`` header and, for HTTPS, in SNI and certificate verification, so a name that
resolves elsewhere by now (DNS rebinding) reaches nothing unchecked. Redirects are not
followed: a receiver answers where it was registered.
"""

import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import urllib3

from collab.netguard import UnsafeAddress, pin

RESPONSE_EXCERPT_BYTES = 2048


@dataclass
class PostResult:
    status_code: int | None
    duration_ms: int
    response_excerpt: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def retryable(self) -> bool:
        """Network failures, 5xx, 408 and 429 may pass; other answers will not change."""
        if self.status_code is None:
            return not self.error.startswith("refused:")
        return self.status_code >= 500 or self.status_code in (408, 429)


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
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    default_port = port == (443 if parts.scheme == "https" else 80)
    name = f"[{host}]" if ":" in host else host
    request_headers = {"Host": name if default_port else f"{name}:{port}", **headers}
    pool_options: dict[str, Any] = {
        "timeout": urllib3.Timeout(total=timeout),
        "retries": False,
        "maxsize": 1,
    }
    pool: urllib3.HTTPConnectionPool
    if parts.scheme == "https":
        pool = urllib3.HTTPSConnectionPool(
            address, port, server_hostname=host, assert_hostname=host, **pool_options
        )
    else:
        pool = urllib3.HTTPConnectionPool(address, port, **pool_options)
    try:
        response = pool.urlopen(
            "POST",
            path,
            body=body,
            headers=request_headers,
            redirect=False,
            preload_content=False,
            assert_same_host=False,
        )
        try:
            excerpt = response.read(RESPONSE_EXCERPT_BYTES, decode_content=True)
        finally:
            response.release_conn()
        return PostResult(
            response.status, elapsed(), response_excerpt=excerpt.decode("utf-8", "replace")
        )
    except urllib3.exceptions.HTTPError as exc:
        return PostResult(None, elapsed(), error=f"{type(exc).__name__}: {exc}"[:500])
    except OSError as exc:
        return PostResult(None, elapsed(), error=f"{type(exc).__name__}: {exc}"[:500])
    finally:
        pool.close()
