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
"""

import contextlib
import time

from django.conf import settings
from django.db import OperationalError, connections, transaction

# SQLite: the handler runs every this many virtual machine instructions (tens of
# microseconds of work): often enough to stop within a few milliseconds of the deadline,
# rarely enough to cost nothing a request would notice.
PROGRESS_STEPS = 10_000
# PostgreSQL's code for a statement cancelled (by its timeout or a cancel request).
QUERY_CANCELED = "57014"


def is_cancelled(exc: BaseException) -> bool:
    """Whether ``exc`` is a statement the database cancelled at its deadline."""
    if not isinstance(exc, OperationalError):
        return False
    cause = exc.__cause__
    if getattr(cause, "sqlstate", None) == QUERY_CANCELED:
        return True
    return type(cause).__module__ == "sqlite3" and "interrupted" in str(cause)


class StatementDeadline:
    """The execute wrapper of one connection for one request."""

    def __init__(self, connection, timeout_ms: int):
        self.connection, self.timeout_ms = connection, timeout_ms
        self.deadline = 0.0
        self.handled = None  # the raw SQLite connection the progress handler is on

    def __call__(self, execute, sql, params, many, context):
        vendor = self.connection.vendor
        if vendor == "postgresql":
            return self._postgresql(execute, sql, params, many, context)
        if vendor == "sqlite":
            self.deadline = time.monotonic() + self.timeout_ms / 1000
            raw = self.connection.connection
            if raw is not None and raw is not self.handled:
                raw.set_progress_handler(self._progress, PROGRESS_STEPS)
                self.handled = raw
        return execute(sql, params, many, context)

    def _progress(self) -> int:
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
    """Every statement of a request gets ``DATABASE_STATEMENT_TIMEOUT_MS`` (0: no limit)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        timeout_ms = settings.DATABASE_STATEMENT_TIMEOUT_MS
        if timeout_ms <= 0:
            return self.get_response(request)
        deadlines = []
        with contextlib.ExitStack() as stack:
            for connection in connections.all():
                deadline = StatementDeadline(connection, timeout_ms)
                deadlines.append(deadline)
                stack.enter_context(connection.execute_wrapper(deadline))
            try:
                return self.get_response(request)
            finally:
                for deadline in deadlines:
                    deadline.close()
