"""The HTTP/1.1 connection the web server runs: uvicorn's httptools protocol with bounds on the
request head and a strict reading of ``Transfer-Encoding``.

uvicorn applies none of gunicorn's ``limit_request_*`` and has no head timeout: a head of
150 MB sent in pieces was read whole (httptools keeps a header field in memory until it ends),
10,000 headers were accepted, and connections dripping a header line every few seconds stayed
open for ever. llhttp also reads ``identity, chunked``, ``gzip, chunked`` or two
``Transfer-Encoding`` fields as chunked, which a front end reading them otherwise would frame
differently (request smuggling). Here:

- The head (request line and header fields) is at most ``MAX_HEAD_BYTES``; past it the answer
  is 431 (414 when the request target alone is past it). Counted twice: the parts the parser
  hands over (request target, each field as ``name: value`` with its line end), which sees a
  head that arrives in one read; and every byte received while a head is expected, which
  cuts a head sent in pieces once it passes the bound, whatever the parser keeps (what is
  held then is the bound and at most one read, 256 KiB, past it).
- At most ``MAX_HEADER_FIELDS`` header fields; more is 431.
- A head must be complete within ``settings.HEADER_TIMEOUT_SECONDS`` of the connection's
  start (the first request) or of its first byte (later ones): else 408, or a plain close when
  nothing was sent. A deadline that passes while the server itself holds the connection up (a
  response to an earlier request in progress, reading paused) gives the head a fresh one.
- ``Transfer-Encoding`` (RFC 9112 section 6.1): the only framing accepted is one field whose
  value is ``chunked`` alone. 400 for two or more fields, an empty or malformed list element,
  ``chunked`` not exactly once and last, ``identity`` anywhere (no longer a transfer coding
  since RFC 7230: only a client built for smuggling sends it), or the field on an HTTP/1.0
  request. 501 for a well-formed list ending in ``chunked`` that names another coding
  (``gzip, chunked``): a coding the service does not implement. Content-Length with
  Transfer-Encoding, and differing Content-Lengths, stay 400 (llhttp refuses them).

Every refusal is the service's JSON error envelope with ``Connection: close`` (after the
answers to any requests sent ahead of the refused one), and nothing after the refused head is
read: a request placed after the body never runs.
"""

import asyncio
import json
from asyncio import TimerHandle
from typing import Any

from django.conf import settings
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

MAX_HEAD_BYTES = 16 * 1024
MAX_HEADER_FIELDS = 100

# RFC 9110 section 5.6.2: the characters of a token (lowercased here).
TOKEN_CHARS = frozenset(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz")


class HeadRefused(Exception):
    """A request head the server answers itself, before the application sees it."""

    def __init__(self, status: int, code: str, message: str, details: dict | None = None):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.details = details or {}


def _too_large() -> HeadRefused:
    return HeadRefused(
        431,
        "REQUEST_HEADER_FIELDS_TOO_LARGE",
        f"The request head is larger than {MAX_HEAD_BYTES} bytes.",
        {"max_bytes": MAX_HEAD_BYTES},
    )


def transfer_coding_refusal(values: list[bytes], http_version: str) -> HeadRefused | None:
    """Why a request's ``Transfer-Encoding`` fields are refused, or None when they are the one
    framing accepted: a single field naming ``chunked`` alone."""
    if len(values) == 1 and values[0].strip().lower() == b"chunked" and http_version == "1.1":
        return None

    def bad(message: str) -> HeadRefused:
        return HeadRefused(400, "BAD_REQUEST", message, {"header": "transfer-encoding"})

    if http_version != "1.1":
        return bad("Transfer-Encoding is not allowed in an HTTP/1.0 request.")
    if len(values) > 1:
        return bad("Transfer-Encoding may be sent once only.")
    codings = [element.strip().lower() for element in values[0].split(b",")]
    names = [coding.split(b";", 1)[0].strip() for coding in codings]
    if any(not name or not set(name) <= TOKEN_CHARS for name in names):
        return bad("Transfer-Encoding is not a list of transfer codings.")
    if names.count(b"chunked") != 1 or codings[-1] != b"chunked":
        return bad("Transfer-Encoding must end with chunked, once.")
    if b"identity" in names:
        return bad("identity is not a transfer coding.")
    unsupported = ", ".join(name.decode() for name in names if name != b"chunked")
    return HeadRefused(
        501,
        "NOT_IMPLEMENTED",
        f"Transfer coding not supported: {unsupported}. Only chunked is.",
        {"header": "transfer-encoding"},
    )


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.head_timeout: float = settings.HEADER_TIMEOUT_SECONDS
        self.head_deadline = 0.0  # when the open head must be complete (the loop's clock)
        self.head_timer: TimerHandle | None = None
        # The connection expects a head: from its start, and from the end of each message.
        self.head_open = True
        self.head_started = False  # the parser has begun the open head
        self.head_received = 0  # bytes received while a head was expected
        self.head_size = 0  # the head's bytes as the parser handed them over
        self.header_fields = 0
        self.transfer_encodings: list[bytes] | None = None
        self.refusal: HeadRefused | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head_clock()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.refusal is not None:
            return  # past a refused head nothing is read: no request placed after it runs
        if self.head_open:
            self.head_received += len(data)
        super().data_received(data)
        if self.head_open and self.head_received > MAX_HEAD_BYTES and self.refusal is None:
            self.refuse(_too_large())

    # Parser callbacks -------------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.head_open = self.head_started = True
        # The request line but its target (method, two spaces, version, line end; the method
        # is not parsed yet, 20 covers the common ones) and the empty line that ends the head.
        self.head_size = 20
        self.header_fields = 0
        self.transfer_encodings = None
        self._start_head_clock()

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        self.head_size += len(url)
        if len(self.url) > MAX_HEAD_BYTES:
            raise self._refusing(
                HeadRefused(
                    414,
                    "URI_TOO_LONG",
                    f"The request target is longer than {MAX_HEAD_BYTES} bytes.",
                    {"max_bytes": MAX_HEAD_BYTES},
                )
            )

    def on_header(self, name: bytes, value: bytes) -> None:
        self.header_fields += 1
        self.head_size += len(name) + len(value) + 4
        if self.header_fields > MAX_HEADER_FIELDS:
            raise self._refusing(
                HeadRefused(
                    431,
                    "REQUEST_HEADER_FIELDS_TOO_LARGE",
                    f"The request has more than {MAX_HEADER_FIELDS} header fields.",
                    {"max_fields": MAX_HEADER_FIELDS},
                )
            )
        if self.head_size > MAX_HEAD_BYTES:
            raise self._refusing(_too_large())
        super().on_header(name, value)
        if self.headers[-1][0] == b"transfer-encoding":
            self.transfer_encodings = (self.transfer_encodings or []) + [value]

    def on_headers_complete(self) -> None:
        self.head_open = False
        self.head_received = 0
        if self.transfer_encodings:
            refusal = transfer_coding_refusal(
                self.transfer_encodings, self.parser.get_http_version()
            )
            if refusal is not None:
                raise self._refusing(refusal)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        # What the connection carries next is a head: its bytes count from here.
        self.head_open, self.head_started = True, False

    # Refusals ---------------------------------------------------------------------------

    def _refusing(self, refusal: HeadRefused) -> HeadRefused:
        """Keeps the refusal for ``send_400_response``: raised inside a parser callback, it
        reaches uvicorn's ``data_received`` as the parser's error, which answers through it."""
        self.refusal = refusal
        return refusal

    def send_400_response(self, msg: str) -> None:
        self.refuse(
            self.refusal or HeadRefused(400, "BAD_REQUEST", "The request could not be read.")
        )

    def refuse(self, refusal: HeadRefused) -> None:
        """Answers ``refusal`` in the error envelope and closes the connection; after the
        answers to the requests before it, when a client sent them ahead (pipelining)."""
        self.refusal = refusal
        self.head_open = False
        self._cancel_head_timer()
        if self.pipeline or (self.cycle is not None and not self.cycle.response_complete):
            self.flow.pause_reading()  # and whatever still comes is dropped (data_received)
            return  # on_response_complete answers once the last of them is written
        self._send_refusal(refusal)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.refusal is not None and not self.pipeline and self.cycle.response_complete:
            self._send_refusal(self.refusal)

    def _send_refusal(self, refusal: HeadRefused) -> None:
        if self.transport.is_closing():
            return
        body = json.dumps(
            {
                "success": False,
                "error": {
                    "code": refusal.code,
                    "message": refusal.message,
                    "details": refusal.details,
                },
            },
            separators=(",", ":"),
        ).encode()
        content = [STATUS_LINE[refusal.status]]
        for name, value in self.server_state.default_headers:
            content += [name, b": ", value, b"\r\n"]
        content += [
            b"content-type: application/json\r\n",
            b"content-length: %d\r\n" % len(body),
            b"connection: close\r\n\r\n",
            body,
        ]
        self.transport.write(b"".join(content))
        self.transport.close()

    # The head's clock -------------------------------------------------------------------

    # One timer per connection, moved on lazily: a request only reads the clock, and the timer,
    # when it fires, sleeps again until the deadline of the head open then, if any.

    def _start_head_clock(self) -> None:
        self.head_deadline = self.loop.time() + self.head_timeout
        if self.head_timer is None:
            self.head_timer = self.loop.call_at(self.head_deadline, self._head_clock)

    def _cancel_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _head_clock(self) -> None:
        self.head_timer = None
        if self.transport.is_closing() or not self.head_open:
            return  # the next head starts the clock again
        if self.loop.time() < self.head_deadline:
            self.head_timer = self.loop.call_at(self.head_deadline, self._head_clock)
            return
        if (self.cycle is not None and not self.cycle.response_complete) or self.flow.read_paused:
            # The server is what the head waits for (a response still being written, or
            # reading paused for a pipelined request): its bytes are bounded anyway.
            self._start_head_clock()
            return
        if not self.head_started:
            if self.cycle is None:
                self.transport.close()  # a connection that never sent a byte
            # else idle between requests: the keep-alive timeout is the bound there, and the
            # next request's first byte starts the clock again.
            return
        self.refuse(
            HeadRefused(
                408,
                "REQUEST_TIMEOUT",
                f"The request head was not complete in time ({self.head_timeout:g} s).",
                {"timeout_seconds": self.head_timeout},
            )
        )
