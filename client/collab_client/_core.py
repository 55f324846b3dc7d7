"""What the synchronous and the asynchronous clients share: building requests, deciding
retries, reading answers (envelope, errors, rate-limit headers, ETags) and the JWT session.

The two clients differ only in how they send and wait (``_client.py``); every decision is
made here, once.
"""

import os
import random
import tempfile
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlencode

import httpx

from ._types import UNSET, ListOf
from ._version import __version__
from .errors import APIConnectionError, CollabError, error_from_response, retry_after_seconds

__all__ = [
    "UNSET",
    "BaseClient",
    "Call",
    "ListOf",
    "RateLimit",
    "RetryPolicy",
    "Session",
    "download_sink",
]

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
# Answers worth asking again: the rate limit (429: refused before anything ran, so safe for
# any method), an unavailable or failing server (only where a repeat cannot do twice).
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# Sign-in paths take no Idempotency-Key (they are not replayed) and never refresh a session.
SIGN_IN_PATHS = ("/v1/auth/", "/v1/invitations/accept")
# Where an OAuth app's tokens are had and renewed (outside the API's /v1/, and its envelope).
OAUTH_TOKEN_PATH = "/oauth/token"


@dataclass(frozen=True)
class RateLimit:
    """The last ``X-RateLimit-*`` headers the server sent."""

    limit: int
    remaining: int
    used: int
    reset: int

    @classmethod
    def from_headers(cls, headers: httpx.Headers) -> "RateLimit | None":
        try:
            return cls(
                limit=int(headers["X-RateLimit-Limit"]),
                remaining=int(headers["X-RateLimit-Remaining"]),
                used=int(headers["X-RateLimit-Used"]),
                reset=int(headers["X-RateLimit-Reset"]),
            )
        except (KeyError, ValueError):
            return None


@dataclass
class RetryPolicy:
    """How many times a request is tried again, and how long to wait in between.

    Connection errors and 5xx back off exponentially with full jitter (a random wait between
    0 and ``base * 2**attempt``, at most ``cap``); 429 and 503 wait as ``Retry-After`` (or
    ``X-RateLimit-Reset``) say, unless that is longer than ``max_wait``: then the error is
    raised at once (a rate limit an hour away is the caller's decision, not a sleep).
    """

    max_retries: int = 3
    base: float = 0.5
    cap: float = 8.0
    max_wait: float = 60.0

    def backoff(self, attempt: int) -> float:
        return random.uniform(0, min(self.cap, self.base * 2**attempt))  # noqa: S311


@dataclass
class Session:
    """A sign-in that renews itself: a JWT pair (``Collab.login``), or an OAuth app's tokens
    (``Collab.oauth``: ``client_id`` set, renewed at the token endpoint, each refresh token
    spent once). ``on_refresh`` is told each renewed session, so that an app keeps the new
    refresh token."""

    access_token: str
    refresh_token: str
    expires_at: float
    client_id: str | None = None
    client_secret: str | None = None
    on_refresh: Callable[["Session"], None] | None = field(default=None, repr=False)

    @classmethod
    def from_pair(cls, pair: dict[str, Any], **app: Any) -> "Session":
        return cls(
            access_token=pair["access_token"],
            refresh_token=pair["refresh_token"],
            expires_at=time.time() + float(pair.get("expires_in") or 900),
            **app,
        )

    def stale(self) -> bool:
        return time.time() > self.expires_at - 30

    def refresh_request(self) -> tuple[str, dict[str, Any]]:
        """Where and what to send to renew it."""
        if self.client_id is None:
            return "/v1/auth/refresh", {"json": {"refresh_token": self.refresh_token}}
        form = {
            "grant_type": "refresh_token",
            "refresh_token": self.refresh_token,
            "client_id": self.client_id,
        }
        if self.client_secret:
            form["client_secret"] = self.client_secret
        return OAUTH_TOKEN_PATH, {"data": form}

    def renewed(self, response: httpx.Response) -> "Session | None":
        """The session a renewal's answer gives (None when it was refused), told to
        ``on_refresh``."""
        if response.status_code != 200:
            return None
        body = response.json()
        pair = body if self.client_id is not None else body["data"]
        session = Session.from_pair(
            pair,
            client_id=self.client_id,
            client_secret=self.client_secret,
            on_refresh=self.on_refresh,
        )
        if session.on_refresh is not None:
            session.on_refresh(session)
        return session


def oauth_code_form(
    *,
    code: str,
    code_verifier: str,
    redirect_uri: str,
    client_id: str,
    client_secret: str | None = None,
) -> dict[str, str]:
    """The token endpoint's form that exchanges an authorization code (with its PKCE
    verifier) for an app's tokens."""
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "code_verifier": code_verifier,
        "redirect_uri": redirect_uri,
        "client_id": client_id,
    }
    if client_secret:
        form["client_secret"] = client_secret
    return form


class ETagCache:
    """GET answers kept by URL with their ETag (least recently used out first)."""

    def __init__(self, size: int = 512):
        self.size = size
        self.entries: OrderedDict[str, tuple[str, Any]] = OrderedDict()

    def get(self, url: str) -> tuple[str, Any] | None:
        entry = self.entries.get(url)
        if entry is not None:
            self.entries.move_to_end(url)
        return entry

    def put(self, url: str, etag: str, body: Any) -> None:
        self.entries[url] = (etag, body)
        self.entries.move_to_end(url)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)


@dataclass
class Call:
    """One logical request: what is sent on every attempt of it."""

    method: str
    path: str
    params: dict[str, Any] | None
    json: Any
    headers: dict[str, str]
    content: bytes | None
    model: Any  # a Model class, ``list[Model]`` marker (see ``parse``), str, bytes or None
    max_retries: int

    @property
    def cache_key(self) -> str:
        return self.path + ("?" + urlencode(sorted(self.params.items())) if self.params else "")

    @property
    def retry_safe(self) -> bool:
        """Whether a repeat cannot do the work twice: an idempotent method, or a key."""
        return self.method in IDEMPOTENT_METHODS or "Idempotency-Key" in self.headers


def clean_params(params: dict[str, Any] | None) -> dict[str, Any] | None:
    """Query parameters as the API reads them: lists comma-joined, booleans lower-case,
    ``None`` left out."""
    if not params:
        return None
    cleaned: dict[str, Any] = {}
    for key, value in params.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple, set)):
            value = ",".join(str(item) for item in value)
        elif isinstance(value, bool):
            value = "true" if value else "false"
        cleaned[key] = value
    return cleaned or None


def clean_body(body: dict[str, Any] | None) -> dict[str, Any] | None:
    """A write's body without the arguments the caller left out (``UNSET``); a sequence
    given as a tuple or set is sent as a JSON array."""
    if body is None:
        return None
    return {
        key: list(value) if isinstance(value, (tuple, set, frozenset)) else value
        for key, value in body.items()
        if value is not UNSET
    }


class BaseClient:
    """State and decisions shared by ``Collab`` and ``AsyncCollab``."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        session: Session | None = None,
        max_retries: int = 3,
        timeout: float = 30.0,
        cache: bool = False,
        retry: RetryPolicy | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.session = session
        self.timeout = timeout
        self.retry = retry or RetryPolicy(max_retries=max_retries)
        if retry is None:
            self.retry.max_retries = max_retries
        self.cache = ETagCache() if cache else None
        self.last_rate_limit: RateLimit | None = None
        self.last_response: httpx.Response | None = None
        self.user_agent = f"collab-client/{__version__} (python; httpx {httpx.__version__})"

    # Requests -------------------------------------------------------------------------------

    def _call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        model: Any = None,
        if_match: str | None = None,
        idempotency_key: str | None = None,
        max_retries: int | None = None,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
    ) -> Call:
        sent = {"User-Agent": self.user_agent, "Accept": "application/json"}
        sent.update(headers or {})
        if if_match is not None:
            sent["If-Match"] = if_match
        if method == "POST" and not path.startswith(SIGN_IN_PATHS):
            # One key per call, the same on each of its retries: the server replays the
            # first answer instead of doing the work twice.
            sent["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())
        elif idempotency_key is not None:
            sent["Idempotency-Key"] = idempotency_key
        return Call(
            method=method,
            path=path,
            params=clean_params(params),
            json=clean_body(json) if isinstance(json, dict) else json,
            headers=sent,
            content=content,
            model=model,
            max_retries=self.retry.max_retries if max_retries is None else max_retries,
        )

    def _auth_headers(self, call: Call) -> dict[str, str]:
        headers = dict(call.headers)
        credential = self.session.access_token if self.session else self.api_key
        if credential and "Authorization" not in headers:
            headers["Authorization"] = f"Bearer {credential}"
        if self.cache is not None and call.method == "GET":
            cached = self.cache.get(call.cache_key)
            if cached is not None:
                headers["If-None-Match"] = cached[0]
        return headers

    def _wants_refresh(self, call: Call, response: httpx.Response | None) -> bool:
        if self.session is None or call.path.startswith(SIGN_IN_PATHS):
            return False
        return response is not None and response.status_code == 401

    def _retry_delay(
        self, call: Call, attempt: int, response: httpx.Response | None
    ) -> float | None:
        """How long to wait before trying ``call`` again, or ``None`` to give up now."""
        if attempt >= call.max_retries:
            return None
        if response is None:  # the connection failed
            return self.retry.backoff(attempt) if call.retry_safe else None
        status = response.status_code
        if status not in RETRY_STATUSES:
            return None
        if status != 429 and not call.retry_safe:
            return None
        if status in (429, 503):
            wait = retry_after_seconds(response)
            if wait is not None:
                if wait > self.retry.max_wait:
                    return None
                return wait + random.uniform(0, 0.25)  # noqa: S311 - spread the herd
        return self.retry.backoff(attempt)

    def _note(self, response: httpx.Response) -> None:
        self.last_response = response
        rate_limit = RateLimit.from_headers(response.headers)
        if rate_limit is not None:
            self.last_rate_limit = rate_limit

    def _result(self, call: Call, response: httpx.Response) -> Any:
        """The call's result from its final answer, or its error raised."""
        body: Any
        if response.status_code == 304 and self.cache is not None:
            cached = self.cache.get(call.cache_key)
            if cached is None:
                raise CollabError("Not modified, and nothing cached", status=304)
            etag, body = cached
        elif response.status_code >= 400:
            raise error_from_response(response)
        else:
            if call.model is str:
                return response.text
            if call.model is bytes:
                return response.content
            body = response.json() if response.content else None
            etag = response.headers.get("ETag")
            if self.cache is not None and call.method == "GET" and etag:
                self.cache.put(call.cache_key, etag, body)
        return parse(call.model, body, etag if call.method == "GET" else None)

    @staticmethod
    def _connection_error(exc: Exception) -> APIConnectionError:
        return APIConnectionError(f"Could not reach the server: {exc}")


def parse(model: Any, body: Any, etag: str | None = None) -> Any:
    """The typed result of a success envelope."""
    if not isinstance(body, dict) or "data" not in body:
        return body
    data = body["data"]
    if model is None or data is None:
        return data
    if isinstance(model, ListOf):
        return [model.model.from_dict(item) for item in data]
    record = model.from_dict(data)
    record.etag = etag
    return record


@contextmanager
def download_sink(destination: Any) -> Iterator[IO[bytes]]:
    """Where a download is written: a file already open for bytes, as it is; a path, through a
    temporary file beside it that takes its name only once complete, so a download cut off
    never leaves a truncated file under the name asked for."""
    if hasattr(destination, "write"):
        with nullcontext(destination) as out:
            yield out
        return
    target = Path(destination)
    handle, partial = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            yield out
        os.replace(partial, target)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
