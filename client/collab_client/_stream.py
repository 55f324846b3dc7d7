"""``client.events.stream(...)``: the Server-Sent Events of ``GET /v1/events/stream``.

The stream is parsed here (no dependency beyond httpx). Comments (``: connected``,
``: heartbeat``) are skipped; each event is yielded as an ``Event``. When the connection
drops or the server closes it, the client reconnects by itself with ``Last-Event-ID`` set to
the last id it saw, so nothing is missed or seen twice; after ``max_reconnects`` attempts in
a row that fail to open a stream it gives up with ``APIConnectionError``. ``event: resync_required``
(the log no longer reaches back to the id) raises ``ResyncRequired``, or, given
``on_resync``, calls it and goes on from the current end of the log.
"""

import asyncio
import json
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from ._core import Call
from .errors import APIConnectionError, ResyncRequired, error_from_response
from .models import Event

PATH = "/v1/events/stream"
# The server sends a heartbeat every 15 s of quiet: four missed means the connection is dead.
READ_TIMEOUT = 60.0


class _Client(Protocol):
    """What a stream needs of either client (``_client.py``), beside its connections."""

    timeout: float

    def _call(self, method: str, path: str) -> Call: ...

    def _auth_headers(self, call: Call) -> dict[str, str]: ...

    def _note(self, response: httpx.Response) -> None: ...


class StreamClient(_Client, Protocol):
    _http: httpx.Client

    def _refresh_if_stale(self) -> None: ...

    def _refresh_after_401(self) -> bool: ...


class AsyncStreamClient(_Client, Protocol):
    _http: httpx.AsyncClient

    def _refresh_if_stale(self) -> Awaitable[None]: ...

    def _refresh_after_401(self) -> Awaitable[bool]: ...


@dataclass
class ServerSentEvent:
    event: str = "message"
    data: str = ""
    id: str | None = None


@dataclass
class SSEParser:
    """Lines in, events out (the WHATWG event-stream rules, without ``retry``)."""

    event: str = ""
    data: list[str] = field(default_factory=list)
    id: str | None = None

    def feed(self, line: str) -> ServerSentEvent | None:
        if line == "":
            if not self.data and not self.event:
                self.id = None
                return None
            sse = ServerSentEvent(self.event or "message", "\n".join(self.data), self.id)
            self.event, self.data, self.id = "", [], None
            return sse
        if line.startswith(":"):
            return None  # a comment: ": connected", ": heartbeat"
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self.event = value
        elif name == "data":
            self.data.append(value)
        elif name == "id" and "\0" not in value:
            self.id = value
        return None


def parse_lines(lines: Iterable[str]) -> Iterator[ServerSentEvent]:
    parser = SSEParser()
    for line in lines:
        sse = parser.feed(line.rstrip("\r"))
        if sse is not None:
            yield sse


@dataclass
class StreamState:
    """Where a stream stands across reconnections, and what to do with each frame."""

    params: dict[str, Any]
    last_event_id: int | None
    on_resync: Callable[[ResyncRequired], Any] | None
    max_reconnects: int
    failures: int = 0

    def headers(self, base: dict[str, str]) -> dict[str, str]:
        headers = {**base, "Accept": "text/event-stream", "Cache-Control": "no-cache"}
        if self.last_event_id is not None:
            headers["Last-Event-ID"] = str(self.last_event_id)
        return headers

    def handle(self, sse: ServerSentEvent) -> Event | None:
        """The event to yield for a frame, if any; raises ``ResyncRequired``."""
        if sse.event == "resync_required":
            data = json.loads(sse.data)
            resume = int(sse.id) if sse.id else data.get("purged_through_id", 0)
            error = ResyncRequired(
                last_event_id=data.get("last_event_id"),
                purged_through_id=data.get("purged_through_id", 0),
                resume_from=resume,
            )
            self.last_event_id = resume
            if self.on_resync is None:
                raise error
            self.on_resync(error)
            return None
        if not sse.data:
            return None
        event = Event.from_dict(json.loads(sse.data))
        if sse.id is not None:
            self.last_event_id = int(sse.id)
        return event

    def failed(self, exc: Exception) -> float:
        """The wait before reconnecting after ``exc``; raises once the budget is spent."""
        self.failures += 1
        if self.failures > self.max_reconnects:
            raise APIConnectionError(
                f"The event stream failed {self.failures} times in a row: {exc}"
            ) from exc
        return random.uniform(0, min(10.0, 0.5 * 2**self.failures))  # noqa: S311


def _timeout(client: _Client) -> httpx.Timeout:
    return httpx.Timeout(client.timeout, read=READ_TIMEOUT)


def stream_events(client: StreamClient, state: StreamState) -> Iterator[Event]:
    while True:
        try:
            client._refresh_if_stale()
            headers = state.headers(client._auth_headers(client._call("GET", PATH)))
            with client._http.stream(
                "GET", PATH, params=state.params, headers=headers, timeout=_timeout(client)
            ) as response:
                client._note(response)
                if response.status_code == 401 and client._refresh_after_401():
                    continue
                if response.status_code >= 400:
                    response.read()
                    raise error_from_response(response)
                state.failures = 0
                for sse in parse_lines(response.iter_lines()):
                    event = state.handle(sse)
                    if event is not None:
                        yield event
        except (httpx.TransportError, httpx.StreamError) as exc:
            time.sleep(state.failed(exc))
            continue
        # The server ended the stream (a restart, a client too slow): resume where it was.
        time.sleep(state.failed(ConnectionError("the server closed the stream")))


async def astream_events(client: AsyncStreamClient, state: StreamState) -> AsyncIterator[Event]:
    while True:
        try:
            await client._refresh_if_stale()
            headers = state.headers(client._auth_headers(client._call("GET", PATH)))
            async with client._http.stream(
                "GET", PATH, params=state.params, headers=headers, timeout=_timeout(client)
            ) as response:
                client._note(response)
                if response.status_code == 401 and await client._refresh_after_401():
                    continue
                if response.status_code >= 400:
                    await response.aread()
                    raise error_from_response(response)
                state.failures = 0
                parser = SSEParser()
                async for line in response.aiter_lines():
                    sse = parser.feed(line.rstrip("\r"))
                    if sse is None:
                        continue
                    event = state.handle(sse)
                    if event is not None:
                        yield event
        except (httpx.TransportError, httpx.StreamError) as exc:
            await asyncio.sleep(state.failed(exc))
            continue
        await asyncio.sleep(state.failed(ConnectionError("the server closed the stream")))
