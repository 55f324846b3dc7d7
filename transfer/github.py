"""A small client of GitHub's REST API (v3), for reading a repository's issues and what hangs on
them: JSON pages followed through their ``Link: <...>; rel="next"`` headers, the rate limit
waited out when it is spent (within a bound), and every request sent only to the server the
base URL names, so the token goes nowhere else.

It reads; it never writes to GitHub. Errors are ``GithubError`` with a message an operator can
act on; the token is never part of one.
"""

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode, urljoin

import orjson
import urllib3
from urllib3.util import parse_url

DEFAULT_BASE_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
PER_PAGE = 100
# The longest wait for a spent rate limit by default (GitHub's limits reset every hour).
DEFAULT_MAX_WAIT = 900.0
# Attempts of one request: rate limits waited out and passing server errors retried.
MAX_ATTEMPTS = 5
MAX_REDIRECTS = 3
_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="?([^";]+)"?')
_SERVER_ERRORS = frozenset({500, 502, 503, 504})
_REDIRECTS = frozenset({301, 302, 307, 308})


class GithubError(Exception):
    """GitHub could not be read; the message says why and what to do."""


class GithubNotFound(GithubError):
    """404: no such record, or the token may not see it (GitHub answers both alike)."""


class GithubRateLimited(GithubError):
    """The rate limit is spent for longer than the wait allowed."""


def _origin(url: str) -> tuple[str, str, int | None]:
    parsed = parse_url(url)
    scheme = (parsed.scheme or "").lower()
    port = parsed.port or {"http": 80, "https": 443}.get(scheme)
    return scheme, (parsed.host or "").lower(), port


def base_url_check(base_url: str) -> str:
    """The base URL without its trailing slash; a GithubError unless it is an http(s) URL with
    a host (a ``file:`` or other scheme is refused before anything is sent)."""
    try:
        parsed = parse_url(base_url.strip())
    except ValueError:
        raise GithubError(f"The base URL {base_url!r} is not a URL.") from None
    if (parsed.scheme or "").lower() not in ("http", "https") or not parsed.host:
        raise GithubError(
            f"The base URL must be an http:// or https:// URL with a host, not {base_url!r}."
        )
    if parsed.auth:
        raise GithubError("The base URL must not carry credentials; give the token instead.")
    return base_url.strip().rstrip("/")


def next_link(header: str | None) -> str | None:
    """The ``rel="next"`` address of an RFC 8288 ``Link`` header, if any."""
    for url, rel in _LINK.findall(header or ""):
        if "next" in rel.split():
            return str(url)
    return None


@dataclass
class GithubClient:
    """Reads GitHub's REST API at ``base_url`` (``https://api.github.com``, or a GitHub
    Enterprise server's ``https://HOST/api/v3``), as the holder of ``token`` (None: anonymous,
    public repositories only and a far lower rate limit).

    A spent rate limit (403 or 429 with ``x-ratelimit-remaining: 0``, or a ``retry-after``) is
    waited out when it resets within ``max_wait`` seconds, and is a ``GithubRateLimited``
    otherwise. ``sleep`` and ``clock`` are time's, replaceable.
    """

    base_url: str = DEFAULT_BASE_URL
    token: str | None = field(default=None, repr=False)
    max_wait: float = DEFAULT_MAX_WAIT
    timeout: float = 30.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    waited: float = 0.0  # seconds spent waiting for rate limits, for the report
    requests: int = 0

    def __post_init__(self) -> None:
        self.base_url = base_url_check(self.base_url)
        self._origin = _origin(self.base_url)
        self._pool = urllib3.PoolManager(
            retries=False, timeout=urllib3.Timeout(connect=10.0, read=self.timeout)
        )

    def _headers(self) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": "collab-import-github",
        }
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def url(self, path: str, params: dict[str, Any] | None = None) -> str:
        url = self.base_url + "/" + path.lstrip("/")
        return f"{url}?{urlencode(params)}" if params else url

    def _same_server(self, url: str) -> str:
        """``url`` when it is on the base URL's server; a GithubError otherwise (a ``Link`` or a
        redirect pointing elsewhere would take the token with it)."""
        try:
            origin = _origin(url)
        except ValueError:
            origin = ("", "", None)
        if origin != self._origin:
            raise GithubError(f"GitHub pointed to {url!r}, outside {self.base_url}; not followed.")
        return url

    def get(self, url: str) -> tuple[Any, urllib3.HTTPHeaderDict]:
        """The JSON at ``url`` (on the base URL's server) and the response's headers."""
        url = self._same_server(url)
        redirects = 0
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                response = self._pool.request(
                    "GET", url, headers=self._headers(), redirect=False, preload_content=True
                )
            except urllib3.exceptions.HTTPError as exc:
                raise GithubError(f"Could not reach {self.base_url}: {exc}") from None
            self.requests += 1
            status = response.status
            if status == 200:
                try:
                    return orjson.loads(response.data), response.headers
                except orjson.JSONDecodeError:
                    raise GithubError(f"{url} answered something that is not JSON.") from None
            if status in _REDIRECTS and redirects < MAX_REDIRECTS:
                # A renamed or moved repository: followed on the same server only.
                url = self._same_server(urljoin(url, response.headers.get("location", "")))
                redirects += 1
                continue
            wait = self._wait(response)
            if wait is not None and attempt < MAX_ATTEMPTS:
                if self.waited + wait > self.max_wait:
                    raise GithubRateLimited(self._limit_message(response, wait))
                self.sleep(wait)
                self.waited += wait
                continue
            if status in _SERVER_ERRORS and attempt < MAX_ATTEMPTS:
                self.sleep(min(2.0**attempt, 30.0))
                continue
            raise self._error(url, response)
        raise GithubError(f"{url} still failed after {MAX_ATTEMPTS} attempts.")

    def _wait(self, response: urllib3.BaseHTTPResponse) -> float | None:
        """How long to wait before asking again when the answer is a rate limit; None when it
        is not one."""
        if response.status not in (403, 429):
            return None
        headers = response.headers
        retry_after = headers.get("retry-after")
        if retry_after is not None and retry_after.strip().isdigit():
            return float(retry_after.strip())
        reset = headers.get("x-ratelimit-reset", "")
        if headers.get("x-ratelimit-remaining") == "0" and reset.strip().isdigit():
            return max(0.0, float(reset) - self.clock())
        if response.status == 429:
            return 60.0  # GitHub's advice for a secondary limit that names no time
        return None

    def _limit_message(self, response: urllib3.BaseHTTPResponse, wait: float) -> str:
        limit = response.headers.get("x-ratelimit-limit")
        of = f" of {limit} requests an hour" if limit else ""
        until = datetime.fromtimestamp(self.clock() + wait, UTC).strftime("%Y-%m-%d %H:%M:%S")
        return (
            f"GitHub's rate limit{of} is spent until {until} UTC, {wait:.0f} s from now: longer "
            f"than the wait allowed ({self.max_wait:.0f} s in all; --max-wait raises it). Run "
            "the import again then: it carries on where it stopped."
        )

    def _error(self, url: str, response: urllib3.BaseHTTPResponse) -> GithubError:
        message = ""
        try:
            body = orjson.loads(response.data)
            if isinstance(body, dict):
                message = str(body.get("message") or "")
        except orjson.JSONDecodeError:
            pass
        said = f" ({message})" if message else ""
        path = url.removeprefix(self.base_url)
        if response.status == 401:
            return GithubError(f"GitHub refused the token{said}: check it and its expiry.")
        if response.status == 404:
            return GithubNotFound(f"GitHub has nothing at {path}{said}.")
        if response.status == 403:
            return GithubError(f"GitHub refused {path}{said}: the token lacks access to it.")
        return GithubError(f"GitHub answered {response.status} for {path}{said}.")

    def pages(self, path: str, params: dict[str, Any] | None = None) -> Iterator[list[Any]]:
        """Every page of a list, following each answer's ``rel="next"`` link."""
        url: str | None = self.url(path, {"per_page": PER_PAGE, **(params or {})})
        while url is not None:
            items, headers = self.get(url)
            if not isinstance(items, list):
                raise GithubError(f"{path} answered something that is not a list.")
            yield items
            url = next_link(headers.get("link"))

    def items(self, path: str, params: dict[str, Any] | None = None) -> Iterator[Any]:
        for page in self.pages(path, params):
            yield from page

    def one(self, path: str) -> Any:
        data, _headers = self.get(self.url(path))
        return data
