"""``Collab`` and ``AsyncCollab``: the same client, blocking or with ``await``.

with Collab("http://127.0.0.1:8000", api_key="clb_...") as client:
    project = client.projects.create(name="Rocket", visibility="private")

async with await AsyncCollab.login(url, email=..., password=...) as client:
    me = await client.users.me()
"""

import asyncio
import copy
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Self

import httpx

from . import _stream, resources
from ._core import (
    OAUTH_TOKEN_PATH,
    BaseClient,
    Call,
    RetryPolicy,
    Session,
    clean_params,
    download_sink,
    oauth_code_form,
)
from .errors import CollabError, error_from_response
from .models import Event
from .pagination import AsyncPager, Pager


class Collab(BaseClient):
    """The blocking client. ``api_key=`` (a ``clb_...`` key), or ``Collab.login(...)``."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        max_retries: int = 3,
        timeout: float = 30.0,
        cache: bool = False,
        retry: RetryPolicy | None = None,
        http_client: httpx.Client | None = None,
        session: Session | None = None,
    ) -> None:
        super().__init__(
            base_url,
            api_key=api_key,
            session=session,
            max_retries=max_retries,
            timeout=timeout,
            cache=cache,
            retry=retry,
        )
        self._http = http_client or httpx.Client(base_url=self.base_url, timeout=timeout)
        self._build_resources()

    def _build_resources(self) -> None:
        """One object per resource, each sending through this client."""
        self.projects = resources.Projects(self)
        self.members = resources.Members(self)
        self.issues = resources.Issues(self)
        self.labels = resources.Labels(self)
        self.repositories = resources.Repositories(self)
        self.pulls = resources.Pulls(self)
        self.comments = resources.Comments(self)
        self.webhooks = resources.Webhooks(self)
        self.deliveries = resources.Deliveries(self)
        self.events = resources.Events(self)
        self.metrics = resources.MetricsResource(self)
        self.reports = resources.Reports(self)
        self.dashboard = resources.DashboardResource(self)
        self.search = resources.Search(self)
        self.users = resources.Users(self)
        self.workspaces = resources.Workspaces(self)
        self.invitations = resources.Invitations(self)
        self.exports = resources.Exports(self)
        self.api_keys = resources.ApiKeys(self)
        self.service_accounts = resources.ServiceAccounts(self)
        self.oauth_apps = resources.OauthApps(self)
        self.authorizations = resources.Authorizations(self)
        self.audit_log = resources.AuditLog(self)
        self.rate_limit = resources.RateLimitResource(self)
        self.auth = resources.Auth(self)

    @classmethod
    def login(cls, base_url: str, *, email: str, password: str, **options: Any) -> Self:
        """Sign in with a password (JWT): the session refreshes itself as tokens expire."""
        client = cls(base_url, **options)
        pair = client.request("POST", "/v1/auth/login", json={"email": email, "password": password})
        client.session = Session.from_pair(pair)
        return client

    @classmethod
    def oauth(
        cls,
        base_url: str,
        *,
        client_id: str,
        client_secret: str | None = None,
        tokens: dict[str, Any] | None = None,
        code: str | None = None,
        code_verifier: str | None = None,
        redirect_uri: str | None = None,
        on_refresh: Callable[[Session], None] | None = None,
        **options: Any,
    ) -> Self:
        """An OAuth app's client, acting for the user who authorised it: with the ``tokens``
        the app kept (``access_token``, ``refresh_token``, ``expires_in``), or by exchanging
        the ``code`` its redirect URI was given (with the PKCE ``code_verifier`` and that
        ``redirect_uri``). The tokens renew themselves as they expire; ``on_refresh`` is told
        each new pair (keep its refresh token: the old one is spent)."""
        client = cls(base_url, **options)
        if tokens is None:
            response = client._http.post(
                OAUTH_TOKEN_PATH,
                data=oauth_code_form(
                    code=code or "",
                    code_verifier=code_verifier or "",
                    redirect_uri=redirect_uri or "",
                    client_id=client_id,
                    client_secret=client_secret,
                ),
                headers={"User-Agent": client.user_agent},
            )
            if response.status_code != 200:
                raise error_from_response(response)
            tokens = response.json()
        client.session = Session.from_pair(
            tokens, client_id=client_id, client_secret=client_secret, on_refresh=on_refresh
        )
        return client

    def logout(self) -> None:
        """End the session: both its tokens stop working."""
        if self.session is None:
            return
        self.request("POST", "/v1/auth/logout", json={"refresh_token": self.session.refresh_token})
        self.session = None

    def with_options(self, *, max_retries: int | None = None) -> Self:
        """A client sharing this one's connections and sign-in, with another retry budget
        (``client.with_options(max_retries=0).issues.create(...)``)."""
        clone = copy.copy(self)
        clone.retry = copy.copy(self.retry)
        if max_retries is not None:
            clone.retry.max_retries = max_retries
        clone._build_resources()
        return clone

    # Sending --------------------------------------------------------------------------------

    def request(self, method: str, path: str, *, raw: bool = False, **kwargs: Any) -> Any:
        """Send one API call, with retries; the typed result (``raw``: the whole body)."""
        call = self._call(method, path, **kwargs)
        response = self._send(call)
        if raw:
            if response.status_code >= 400:
                raise error_from_response(response)
            return response.json()
        return self._result(call, response)

    def _send(self, call: Call) -> httpx.Response:
        attempt = 0
        refreshed = False
        while True:
            self._refresh_if_stale(call)
            response: httpx.Response | None
            try:
                response = self._http.request(
                    call.method,
                    call.path,
                    params=call.params,
                    json=call.json,
                    content=call.content,
                    headers=self._auth_headers(call),
                )
            except httpx.TransportError as exc:
                response, error = None, exc
            else:
                self._note(response)
                if not refreshed and self._wants_refresh(call, response):
                    refreshed = self._refresh()
                    if refreshed:
                        continue
            delay = self._retry_delay(call, attempt, response)
            if delay is None:
                if response is None:
                    raise self._connection_error(error) from error
                return response
            attempt += 1
            time.sleep(delay)

    def _refresh_if_stale(self, call: Call | None = None) -> None:
        signing_in = call is not None and call.path.startswith("/v1/auth/")
        if self.session is not None and self.session.stale() and not signing_in:
            self._refresh()

    def _refresh_after_401(self) -> bool:
        return self.session is not None and self._refresh()

    def _refresh(self) -> bool:
        """Rotate the session's tokens; False when the refresh token is no longer good."""
        assert self.session is not None
        path, body = self.session.refresh_request()
        response = self._http.post(path, **body, headers={"User-Agent": self.user_agent})
        self._note(response)
        renewed = self.session.renewed(response)
        if renewed is None:
            return False
        self.session = renewed
        return True

    def paginate(self, path: str, params: dict[str, Any], model: Any) -> Pager[Any]:
        return Pager(self, path, params, model)

    def stream(self, params: dict[str, Any], **options: Any) -> Iterator[Event]:
        state = _stream.StreamState(params=clean_params(params) or {}, **options)
        return _stream.stream_events(self, state)

    def download(self, path: str, destination: Any) -> int:
        """GET ``path`` and write its body into ``destination`` (a path, or a file open for
        bytes) as it arrives, never whole in memory; answers the bytes written. An error
        answer raises its exception and writes nothing."""
        call = self._call("GET", path)
        self._refresh_if_stale(call)
        try:
            with self._http.stream("GET", path, headers=self._auth_headers(call)) as response:
                self._note(response)
                if response.status_code >= 400:
                    response.read()
                    raise error_from_response(response)
                written = 0
                with download_sink(destination) as out:
                    for chunk in response.iter_bytes():
                        out.write(chunk)
                        written += len(chunk)
        except httpx.TransportError as exc:
            raise self._connection_error(exc) from exc
        return written

    # Lifetime -------------------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncCollab(BaseClient):
    """The asynchronous client: every method of ``Collab``, awaited."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        max_retries: int = 3,
        timeout: float = 30.0,
        cache: bool = False,
        retry: RetryPolicy | None = None,
        http_client: httpx.AsyncClient | None = None,
        session: Session | None = None,
    ) -> None:
        super().__init__(
            base_url,
            api_key=api_key,
            session=session,
            max_retries=max_retries,
            timeout=timeout,
            cache=cache,
            retry=retry,
        )
        self._http = http_client or httpx.AsyncClient(base_url=self.base_url, timeout=timeout)
        self._build_resources()

    def _build_resources(self) -> None:
        """One object per resource, each sending through this client."""
        self.projects = resources.AsyncProjects(self)
        self.members = resources.AsyncMembers(self)
        self.issues = resources.AsyncIssues(self)
        self.labels = resources.AsyncLabels(self)
        self.repositories = resources.AsyncRepositories(self)
        self.pulls = resources.AsyncPulls(self)
        self.comments = resources.AsyncComments(self)
        self.webhooks = resources.AsyncWebhooks(self)
        self.deliveries = resources.AsyncDeliveries(self)
        self.events = resources.AsyncEvents(self)
        self.metrics = resources.AsyncMetricsResource(self)
        self.reports = resources.AsyncReports(self)
        self.dashboard = resources.AsyncDashboardResource(self)
        self.search = resources.AsyncSearch(self)
        self.users = resources.AsyncUsers(self)
        self.workspaces = resources.AsyncWorkspaces(self)
        self.invitations = resources.AsyncInvitations(self)
        self.exports = resources.AsyncExports(self)
        self.api_keys = resources.AsyncApiKeys(self)
        self.service_accounts = resources.AsyncServiceAccounts(self)
        self.oauth_apps = resources.AsyncOauthApps(self)
        self.authorizations = resources.AsyncAuthorizations(self)
        self.audit_log = resources.AsyncAuditLog(self)
        self.rate_limit = resources.AsyncRateLimitResource(self)
        self.auth = resources.AsyncAuth(self)

    @classmethod
    async def login(cls, base_url: str, *, email: str, password: str, **options: Any) -> Self:
        client = cls(base_url, **options)
        pair = await client.request(
            "POST", "/v1/auth/login", json={"email": email, "password": password}
        )
        client.session = Session.from_pair(pair)
        return client

    @classmethod
    async def oauth(
        cls,
        base_url: str,
        *,
        client_id: str,
        client_secret: str | None = None,
        tokens: dict[str, Any] | None = None,
        code: str | None = None,
        code_verifier: str | None = None,
        redirect_uri: str | None = None,
        on_refresh: Callable[[Session], None] | None = None,
        **options: Any,
    ) -> Self:
        """``Collab.oauth``, awaited."""
        client = cls(base_url, **options)
        if tokens is None:
            response = await client._http.post(
                OAUTH_TOKEN_PATH,
                data=oauth_code_form(
                    code=code or "",
                    code_verifier=code_verifier or "",
                    redirect_uri=redirect_uri or "",
                    client_id=client_id,
                    client_secret=client_secret,
                ),
                headers={"User-Agent": client.user_agent},
            )
            if response.status_code != 200:
                raise error_from_response(response)
            tokens = response.json()
        client.session = Session.from_pair(
            tokens, client_id=client_id, client_secret=client_secret, on_refresh=on_refresh
        )
        return client

    async def logout(self) -> None:
        if self.session is None:
            return
        await self.request(
            "POST", "/v1/auth/logout", json={"refresh_token": self.session.refresh_token}
        )
        self.session = None

    def with_options(self, *, max_retries: int | None = None) -> Self:
        clone = copy.copy(self)
        clone.retry = copy.copy(self.retry)
        if max_retries is not None:
            clone.retry.max_retries = max_retries
        clone._build_resources()
        return clone

    async def request(self, method: str, path: str, *, raw: bool = False, **kwargs: Any) -> Any:
        call = self._call(method, path, **kwargs)
        response = await self._send(call)
        if raw:
            if response.status_code >= 400:
                raise error_from_response(response)
            return response.json()
        return self._result(call, response)

    async def _send(self, call: Call) -> httpx.Response:
        attempt = 0
        refreshed = False
        while True:
            await self._refresh_if_stale(call)
            response: httpx.Response | None
            try:
                response = await self._http.request(
                    call.method,
                    call.path,
                    params=call.params,
                    json=call.json,
                    content=call.content,
                    headers=self._auth_headers(call),
                )
            except httpx.TransportError as exc:
                response, error = None, exc
            else:
                self._note(response)
                if not refreshed and self._wants_refresh(call, response):
                    refreshed = await self._refresh()
                    if refreshed:
                        continue
            delay = self._retry_delay(call, attempt, response)
            if delay is None:
                if response is None:
                    raise self._connection_error(error) from error
                return response
            attempt += 1
            await asyncio.sleep(delay)

    async def _refresh_if_stale(self, call: Call | None = None) -> None:
        signing_in = call is not None and call.path.startswith("/v1/auth/")
        if self.session is not None and self.session.stale() and not signing_in:
            await self._refresh()

    async def _refresh_after_401(self) -> bool:
        return self.session is not None and await self._refresh()

    async def _refresh(self) -> bool:
        assert self.session is not None
        path, body = self.session.refresh_request()
        response = await self._http.post(path, **body, headers={"User-Agent": self.user_agent})
        self._note(response)
        renewed = self.session.renewed(response)
        if renewed is None:
            return False
        self.session = renewed
        return True

    def paginate(self, path: str, params: dict[str, Any], model: Any) -> AsyncPager[Any]:
        return AsyncPager(self, path, params, model)

    def stream(self, params: dict[str, Any], **options: Any) -> AsyncIterator[Event]:
        state = _stream.StreamState(params=clean_params(params) or {}, **options)
        return _stream.astream_events(self, state)

    async def download(self, path: str, destination: Any) -> int:
        call = self._call("GET", path)
        await self._refresh_if_stale(call)
        try:
            async with self._http.stream("GET", path, headers=self._auth_headers(call)) as response:
                self._note(response)
                if response.status_code >= 400:
                    await response.aread()
                    raise error_from_response(response)
                written = 0
                with download_sink(destination) as out:
                    async for chunk in response.aiter_bytes():
                        out.write(chunk)
                        written += len(chunk)
        except httpx.TransportError as exc:
            raise self._connection_error(exc) from exc
        return written

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


__all__ = ["AsyncCollab", "Collab", "CollabError"]
