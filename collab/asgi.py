"""The ASGI application that production, compose and ./run serve (gunicorn + uvicorn workers).

Two doors into one Django project:

- every request but the event stream goes to Django's WSGI handler on a fixed pool of threads
  (a2wsgi). The REST endpoints are synchronous code; Django's ASGI handler would run each
  request in a new thread of its own, which was measured at about 0.75 of the throughput of
  gunicorn's threaded WSGI workers, and at 0.45 with connections kept per thread. On a pool of
  long-lived threads they run as under gunicorn's threads, keeping their database connections;
- ``GET /v1/events/stream`` is answered on the same threads (middleware, credentials, filters,
  errors in the envelope: the view of notifications/views.py), and its frames are then sent
  by a coroutine on the process's event loop, so one process holds thousands of streams. Once
  the response has started, an open stream keeps only its subscriber, its generator and its
  connection: not the request, a thread, an executor or a database connection of its own, as
  it did under Django's ASGI handler (372 objects per stream for the collector to walk).

A read (``GET``/``HEAD``) whose client hangs up before its answer stops its database work
(``ClientWatch``): a2wsgi listens to the client only while it reads a body, so a watcher of
this module's own does, and cancels the request's statements (collab/db/querycost.py). A write
whose client hangs up still completes: what was sent and not awaited must not be lost.
"""

import asyncio
import contextlib
import contextvars
import io
import logging
import os
from typing import Any

from a2wsgi import WSGIMiddleware
from django.conf import settings
from django.core import signals
from django.core.asgi import get_asgi_application
from django.core.handlers.asgi import ASGIRequest
from django.core.handlers.base import BaseHandler
from django.core.wsgi import get_wsgi_application
from django.urls import set_script_prefix

from collab.api.routes import DeclaredPaths
from collab.db.querycost import DISCONNECT_KEY, Disconnect
from collab.tracing import start_unless_forking

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "collab.settings.local")
# Before the handlers load their middleware: tracing adds its own (collab/tracing.py).
start_unless_forking()

# Django's own ASGI handler, for comparison in bench/serving.py.
django_asgi = get_asgi_application()
_django_wsgi = get_wsgi_application()


def _terminated_input(environ, start_response):
    # a2wsgi's input ends where the request body ends (the ASGI server has decoded any
    # chunking), as gunicorn's own workers promise with this key; without it a chunked body
    # could not be read safely, and the body guard would refuse it (411).
    environ["wsgi.input_terminated"] = True
    disconnect = environ["asgi.scope"].get(DISCONNECT_KEY)
    if disconnect is not None:
        environ[DISCONNECT_KEY] = disconnect
    return _django_wsgi(environ, start_response)


django_wsgi = WSGIMiddleware(_terminated_input, workers=int(os.environ.get("WEB_THREADS", "8")))
logger = logging.getLogger("collab.stream")
# The paths of the views that declare they stream (``streams = True``), from their routes.
ASYNC_PATHS = DeclaredPaths("streams")
# Only reads are streamed: any other method of these paths is answered (405) by the WSGI side.
ASYNC_METHODS = frozenset({"GET", "HEAD"})
# A stream's request has no body; what one carries anyway is kept up to this size for the
# body guard to judge (it answers by Content-Length), the rest read and dropped.
BODY_KEPT = 64 * 1024


class StreamHandler(BaseHandler):
    """Django's request cycle for a stream's request, run on a thread of the pool."""

    def __init__(self):
        super().__init__()
        self.load_middleware()

    def respond(self, scope: dict, body: bytes):
        set_script_prefix(settings.FORCE_SCRIPT_NAME or scope.get("root_path", "") or "/")
        signals.request_started.send(sender=self.__class__, scope=scope)
        try:
            request = ASGIRequest(scope, io.BytesIO(body))
        except UnicodeDecodeError:  # a query string that is not UTF-8
            from collab.api.middleware import json_error

            response = json_error(400, "BAD_REQUEST", "The query string is not valid UTF-8.")
            response.close()
            return response
        response = self.get_response(request)
        # The request is over once its response is built: this gives the database connection
        # back (a stream reads the log through the hub) and lets the request go (the response
        # holds its close() until closed, and with it the user, the URL resolver's trail...).
        response.close()
        return response


class StreamDoor:
    """``GET``/``HEAD /v1/events/stream``: answered on the pool's threads, then streamed."""

    def __init__(self, executor):
        self.executor = executor
        self.handler = StreamHandler()

    async def __call__(self, scope, receive, send) -> None:
        response = await self._respond(scope, receive)
        first = b""
        if response.streaming:
            # The first frame comes once the stream has joined the hub, which reads what it may
            # see: a failure there (the database down) is still a 500 in the envelope.
            first, failed = await _first_frame(response)
            if failed is not None:
                response = failed
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": _headers(response),
            }
        )
        if not response.streaming:
            await send({"type": "http.response.body", "body": response.content})
            return
        frames = response.streaming_content
        del response
        await send({"type": "http.response.body", "body": first, "more_body": True})
        # The client leaving ends the stream (and so its subscription) at once.
        streaming = asyncio.current_task()
        assert streaming is not None
        listener = asyncio.create_task(_disconnected(receive, streaming))
        try:
            async with contextlib.aclosing(frames):
                async for frame in frames:
                    await send({"type": "http.response.body", "body": frame, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        except asyncio.CancelledError:
            if not listener.done() or listener.cancelled():
                raise  # the server is stopping, not the client leaving
            streaming.uncancel()
        finally:
            listener.cancel()

    async def _respond(self, scope, receive):
        """The response, built on a thread of the pool in a context of its own (as a2wsgi
        runs every other request), which is let go with this call."""
        body = await _body_read(receive)
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(
            self.executor, context.run, self.handler.respond, scope, body
        )


async def _first_frame(response) -> tuple[bytes, Any]:
    """The stream's first frame, or the 500 to answer instead when it fails before it."""
    frames = response.streaming_content
    try:
        return await anext(frames, b""), None
    except Exception:
        from collab.api.middleware import json_error

        logger.exception("The event stream failed before its first frame")
        with contextlib.suppress(Exception):
            await frames.aclose()
        request_id = response.get("X-Request-Id", "")
        failed = json_error(
            500,
            "INTERNAL_ERROR",
            "The service failed to open the stream. Try again.",
            {"request_id": request_id},
        )
        failed["X-Request-Id"] = request_id
        return b"", failed


async def _body_read(receive) -> bytes:
    kept = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        if len(kept) < BODY_KEPT:
            kept += message.get("body", b"")[: BODY_KEPT - len(kept)]
        if not message.get("more_body", False):
            break
    return bytes(kept)


async def _disconnected(receive, streaming: asyncio.Task) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    streaming.cancel()


def _headers(response) -> list[tuple[bytes, bytes]]:
    headers = [(name.encode("ascii"), value.encode("latin1")) for name, value in response.items()]
    headers += [
        (b"Set-Cookie", cookie.output(header="").encode("ascii").strip())
        for cookie in response.cookies.values()
    ]
    return headers


stream_door = StreamDoor(django_wsgi.executor)
# The requests whose client leaving cancels their database work.
WATCHED_METHODS = frozenset({"GET", "HEAD"})


class ClientWatch:
    """Between the server and a2wsgi for one read: a watcher task is the only reader of the
    server's ``receive``. It hands the request's body on (one message ahead of a2wsgi, which
    reads it when Django asks), and then waits: ``http.disconnect`` before the response is
    complete means the client has gone, and the request's ``Disconnect`` is cancelled.
    (uvicorn also answers ``http.disconnect`` once the response is complete: ``send`` notes
    the last body message before it goes out, and that one cancels nothing.)"""

    def __init__(self, receive, send, disconnect: Disconnect):
        self._receive, self._send = receive, send
        self.disconnect = disconnect
        self.messages: asyncio.Queue = asyncio.Queue(1)
        self.left = False
        self.answered = False

    async def watch(self) -> None:
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self.left = True
                with contextlib.suppress(asyncio.QueueFull):  # a2wsgi may be waiting for it
                    self.messages.put_nowait(message)
                if not self.answered:
                    # Blocking (PostgreSQL's cancel request): off the loop, and off the pool
                    # of request threads, which may all be busy with such statements.
                    await asyncio.get_running_loop().run_in_executor(None, self.disconnect.cancel)
                return
            await self.messages.put(message)

    async def receive(self):
        if self.left and self.messages.empty():
            return {"type": "http.disconnect"}
        return await self.messages.get()

    async def send(self, message) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            self.answered = True
        await self._send(message)


async def _watched(scope, receive, send) -> None:
    disconnect = Disconnect()
    watch = ClientWatch(receive, send, disconnect)
    watched: Any = {**scope, DISCONNECT_KEY: disconnect}  # a2wsgi hands it on: asgi.scope
    watcher = asyncio.create_task(watch.watch())
    try:
        await django_wsgi(watched, watch.receive, watch.send)
    finally:
        watcher.cancel()


async def application(scope, receive, send):
    if (
        scope["type"] == "http"
        and scope["path"] in ASYNC_PATHS
        and scope["method"] in ASYNC_METHODS
    ):
        await stream_door(scope, receive, send)
    elif scope["type"] == "http" and scope["method"] in WATCHED_METHODS:
        await _watched(scope, receive, send)
    else:
        await django_wsgi(scope, receive, send)
