"""A deadline on each database statement of a web request.

``StatementDeadlineMiddleware`` wraps every statement a request runs (Django's
``execute_wrapper``, on each database alias) so that one running past
``DATABASE_STATEMENT_TIMEOUT_MS`` is cancelled by the database itself:

- PostgreSQL: ``SET LOCAL statement_timeout``, which ends with the transaction it is set in,
  so nothing leaks to the next user of a pooled connection (the psycopg pool, or PgBouncer in
  transaction mode, where a session ``SET`` would reach other clients' transactions). Outside
  a transaction the statement is sent behind it in one query string, which PostgreSQL runs as
  one implicit transaction (one round trip); inside one, it is set once, before the
  transaction's first statement.
- SQLite: a progress handler on the request's connection that interrupts a statement (and
  the reading of its rows) once its deadline has passed.

Either way the statement fails with an ``OperationalError`` that ``is_cancelled`` recognises,
which the API's exception handler answers 503 with ``Retry-After``. Commands, migrations and
Celery tasks never pass through the middleware and keep no deadline.

A read whose client hangs up is cancelled too, where the database allows it: the web server
(collab/asgi.py) gives such a request a ``Disconnect`` in ``environ[DISCONNECT_KEY]`` and calls
its ``cancel`` when the client leaves before the answer is sent. The statement in flight is
cancelled (PostgreSQL: a cancel request for the connection; SQLite: the progress handler
interrupts it) and every later statement of the request fails at once, with the same
``OperationalError`` a deadline gives, so the request ends as one past its deadline does.
"""

import contextlib
import contextvars
import logging
import threading
import time

from django.conf import settings
from django.db import OperationalError, connections, transaction

logger = logging.getLogger(__name__)

# SQLite: the handler runs every this many virtual machine instructions (tens of
# microseconds of work): often enough to stop within a few milliseconds of the deadline,
# rarely enough to cost nothing a request would notice.
PROGRESS_STEPS = 10_000
# PostgreSQL's code for a statement cancelled (by its timeout or a cancel request).
QUERY_CANCELED = "57014"
# Where the web server puts a request's ``Disconnect`` (a WSGI environ key: request.META).
DISCONNECT_KEY = "collab.disconnect"
# How long a cancel request to PostgreSQL may take (a new connection to the server).
CANCEL_TIMEOUT_SECONDS = 2.0

_disconnect: contextvars.ContextVar["Disconnect | None"] = contextvars.ContextVar(
    "collab.db.querycost.disconnect", default=None
)


class ClientDisconnected(OperationalError):
    """A statement of a request whose client has gone: not sent to the database."""


def is_cancelled(exc: BaseException) -> bool:
    """Whether ``exc`` is a statement the database cancelled at its deadline, or one of a
    request whose client disconnected."""
    if not isinstance(exc, OperationalError):
        return False
    if isinstance(exc, ClientDisconnected):
        return True
    cause = exc.__cause__
    if getattr(cause, "sqlstate", None) == QUERY_CANCELED:
        return True
    return type(cause).__module__ == "sqlite3" and "interrupted" in str(cause)


def client_left() -> bool:
    """Whether the client of the request being answered (on this thread) has disconnected."""
    disconnect = _disconnect.get()
    return disconnect is not None and disconnect.cancelled


class Disconnect:
    """The cancel hook of one request, shared by the web server and the request's thread.

    ``cancel`` (called once the client has gone, from a thread that is not the request's: it
    blocks) cancels the statement the request has in flight and makes each later one fail at
    once. It never reaches a statement of another request: only the connections registered by
    ``statement`` while a statement of this request runs are cancelled, under the lock that
    their registration and release take, and ``end`` (the request is over) disarms it.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self.cancelled = False
        self._ended = False
        self._running: list = []  # PostgreSQL connections with a statement of the request

    def cancel(self) -> bool:
        """Cancel the request's database work; False when it had already ended."""
        with self._lock:
            if self.cancelled or self._ended:
                return False
            self.cancelled = True
            for raw in self._running:
                try:
                    raw.cancel_safe(timeout=CANCEL_TIMEOUT_SECONDS)
                except Exception:  # the server unreachable: the deadline still holds
                    logger.warning("Could not cancel a statement", exc_info=True)
            return True

    def end(self) -> None:
        with self._lock:
            self._ended = True
            self._running.clear()

    @contextlib.contextmanager
    def statement(self, connection):
        """Around one statement on ``connection``: refused at once once cancelled."""
        raw = connection.connection
        cancellable = connection.vendor == "postgresql" and raw is not None
        with self._lock:
            if self.cancelled:
                raise ClientDisconnected("The client disconnected; the statement was not run.")
            if cancellable:
                self._running.append(raw)
        try:
            yield
        finally:
            if cancellable:
                with self._lock, contextlib.suppress(ValueError):  # cleared by end()
                    self._running.remove(raw)


class StatementDeadline:
    """The execute wrapper of one connection for one request (``timeout_ms`` 0: no deadline,
    only the client's disconnect)."""

    def __init__(self, connection, timeout_ms: int, disconnect: Disconnect | None = None):
        self.connection, self.timeout_ms = connection, timeout_ms
        self.disconnect = disconnect
        self.deadline = 0.0
        self.handled = None  # the raw SQLite connection the progress handler is on

    def __call__(self, execute, sql, params, many, context):
        if self.disconnect is None:
            return self._run(execute, sql, params, many, context)
        with self.disconnect.statement(self.connection):
            return self._run(execute, sql, params, many, context)

    def _run(self, execute, sql, params, many, context):
        vendor = self.connection.vendor
        if vendor == "postgresql" and self.timeout_ms > 0:
            return self._postgresql(execute, sql, params, many, context)
        if vendor == "sqlite":
            self.deadline = (
                time.monotonic() + self.timeout_ms / 1000 if self.timeout_ms > 0 else float("inf")
            )
            raw = self.connection.connection
            if raw is not None and raw is not self.handled:
                raw.set_progress_handler(self._progress, PROGRESS_STEPS)
                self.handled = raw
        return execute(sql, params, many, context)

    def _progress(self) -> int:
        if self.disconnect is not None and self.disconnect.cancelled:
            return 1
        return 1 if time.monotonic() > self.deadline else 0

    def _set_local(self) -> str:
        return f"SET LOCAL statement_timeout = {int(self.timeout_ms)}"

    def _postgresql(self, execute, sql, params, many, context):
        raw = self.connection.connection
        if not self.connection.get_autocommit():
            # In a transaction: set once, before its first statement (psycopg opens the
            # transaction with it).
            from psycopg.pq import TransactionStatus

            if raw.info.transaction_status == TransactionStatus.IDLE:
                raw.execute(self._set_local())
            return execute(sql, params, many, context)
        cursor = context["cursor"].cursor
        server_binding = self.connection.settings_dict["OPTIONS"].get("server_side_binding")
        if many or server_binding or getattr(cursor, "name", None):
            # One statement string cannot carry it: a transaction of its own does.
            with transaction.atomic(using=self.connection.alias):
                raw.execute(self._set_local())
                return execute(sql, params, many, context)
        result = execute(f"{self._set_local()}; {sql}", params, many, context)
        cursor.nextset()  # past the SET's result, to the statement's
        return result

    def close(self) -> None:
        if self.handled is not None:
            with contextlib.suppress(Exception):  # the connection may be closed by now
                self.handled.set_progress_handler(None, 0)
            self.handled = None


class StatementDeadlineMiddleware:
    """Every statement of a request gets ``DATABASE_STATEMENT_TIMEOUT_MS`` (0: no limit), and
    is cancelled when the request carries a ``Disconnect`` and its client leaves."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        timeout_ms = settings.DATABASE_STATEMENT_TIMEOUT_MS
        disconnect = request.META.get(DISCONNECT_KEY)
        if timeout_ms <= 0 and disconnect is None:
            return self.get_response(request)
        deadlines = []
        token = _disconnect.set(disconnect)
        with contextlib.ExitStack() as stack:
            for connection in connections.all():
                deadline = StatementDeadline(connection, timeout_ms, disconnect)
                deadlines.append(deadline)
                stack.enter_context(connection.execute_wrapper(deadline))
            try:
                return self.get_response(request)
            finally:
                if disconnect is not None:
                    disconnect.end()
                for deadline in deadlines:
                    deadline.close()
                _disconnect.reset(token)
