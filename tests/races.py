"""A deletion and a write under it, on two real PostgreSQL connections, in a chosen order.

``race`` runs the deletion in the test's thread and lets the write in, on a thread and a
connection of its own, at one of the two moments that used to fail
(docs/guide/envelope-and-errors.md, "Races are answered like any other input"):

- ``"collected"``: after Django has read the rows to delete with the parent (its
  ``Collector``) and before it deletes any: a child committed then is not among them, and
  the parent's DELETE used to fail at COMMIT on the foreign key (the deleter's 500);
- ``"deleted"``: after the DELETEs, before the deleter commits: the write waits on the
  parent's row, then fails its own foreign-key check at its commit (the writer's 500).

The deleter waits for the write to end, or to wait on a lock (it waits on the deletion),
at most ``WRITE_WAIT_SECONDS``. Both outcomes are returned, exceptions included.
"""

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.db.models.deletion import Collector

from collab.api.exceptions import foreign_key_violation

MOMENTS = ["collected", "deleted"]
WRITE_WAIT_SECONDS = 10

postgresql_only = pytest.mark.skipif(
    "postgresql" not in settings.DATABASES["default"]["ENGINE"],
    reason="needs PostgreSQL: SQLite serialises writers on one file lock, nothing races "
    "(the writer's side runs on both: the tests named ..._meanwhile_is_404)",
)


@dataclass
class Outcome:
    value: Any = None
    error: BaseException | None = None

    def result(self) -> Any:
        """The value; the exception raised again, if there was one."""
        if self.error is not None:
            raise self.error
        return self.value


def _waiting_on_a_lock(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return row is not None and row[0] == "Lock"


def race(
    monkeypatch, *, delete: Callable[[], Any], write: Callable[[], Any], moment: str
) -> tuple[Outcome, Outcome]:
    """``delete()`` here, ``write()`` on another thread let in at ``moment`` (one of
    MOMENTS); their outcomes, deletion first."""
    assert moment in MOMENTS
    deleter = threading.get_ident()
    real_delete = Collector.delete
    written = Outcome()
    writer_pid: list[int] = []
    done = threading.Event()

    def run_write() -> None:
        try:
            connection.ensure_connection()
            writer_pid.append(connection.connection.info.backend_pid)
            written.value = write()
        except BaseException as exc:  # returned to the test
            written.error = exc
        finally:
            connection.close()
            done.set()

    writer = threading.Thread(target=run_write)

    def let_the_write_in() -> None:
        writer.start()
        deadline = time.monotonic() + WRITE_WAIT_SECONDS
        while not done.wait(0.02) and time.monotonic() < deadline:
            if writer_pid and _waiting_on_a_lock(writer_pid[0]):
                return

    def delete_with_a_write(collector: Collector, *args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() != deleter or writer.ident is not None:
            return real_delete(collector, *args, **kwargs)
        if moment == "collected":
            let_the_write_in()
            return real_delete(collector, *args, **kwargs)
        result = real_delete(collector, *args, **kwargs)
        let_the_write_in()
        return result

    monkeypatch.setattr(Collector, "delete", delete_with_a_write)
    deleted = Outcome()
    try:
        deleted.value = delete()
    except Exception as exc:  # returned to the test
        deleted.error = exc
    finally:
        monkeypatch.setattr(Collector, "delete", real_delete)
    if writer.ident is None:
        writer.start()  # the deletion never reached its DELETEs: the write runs after it
    writer.join(WRITE_WAIT_SECONDS * 3)
    assert not writer.is_alive(), "the write is stuck"
    return deleted, written


def assert_lost_to_the_deletion(outcome: Outcome) -> None:
    """A write through a service that lost to a deletion: done, or failed on the vanished
    parent's foreign key (which the API answers 404 and a worker drops)."""
    if outcome.error is not None:
        assert foreign_key_violation(outcome.error) == "parent", outcome.error
