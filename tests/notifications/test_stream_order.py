"""The stream under an adversarial commit order: exactly once, and never at or below the cursor.

Event ids are taken before commit, so a transaction held open commits its event after a later
one: the hub reads 11, then 13, then 12 late. A stream resumed from 13 must not get 12 (the
client's cursor covers it); a stream resumed from 11 must get 12 once, and 13 once. Run on the
hub woken through Redis and on the polling hub of the embedded default.
"""

import threading
import time

import pytest
from django.db import connection, transaction

from collab.api.scopes import ALL_SCOPES
from events.models import Event
from events.services import event_record
from tests.factories import make_api_key
from tests.liveserver import asgi_server, process_env, require_services
from tests.notifications.sse_reader import Reader

pytestmark = [
    pytest.mark.slow(seconds=17),
    pytest.mark.django_db(transaction=True),
    pytest.mark.live,
]


def _record(world, label: str) -> int:
    with transaction.atomic():
        event = event_record(
            type="project.updated",
            workspace_id=world.acme.pk,
            project_id=world.project.pk,
            data={"label": label},
        )
    return event.pk


class HeldEvent:
    """An event written in a transaction that stays open until ``commit()``: its id is
    taken now, and it becomes visible only then."""

    def __init__(self, world):
        self.world = world
        self.id: int | None = None
        self.written = threading.Event()
        self.release = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.written.wait(10), "the held transaction did not start"

    def _run(self):
        try:
            with transaction.atomic():
                self.id = event_record(
                    type="project.updated",
                    workspace_id=self.world.acme.pk,
                    project_id=self.world.project.pk,
                    data={"label": "late"},
                ).pk
                self.written.set()
                assert self.release.wait(30)
        finally:
            connection.close()

    def commit(self):
        self.release.set()
        self.thread.join(10)


def _ids(reader: Reader, until: int, timeout: float = 10) -> list[int]:
    """Every frame's id until ``until`` arrives, then whatever else comes in two seconds."""
    got: list[int] = []
    deadline = time.monotonic() + timeout
    while until not in got and time.monotonic() < deadline:
        got += [int(frame.id) for frame in reader.take(1, timeout=0.5)]
    if until in got:
        got += [int(frame.id) for frame in reader.take(50, timeout=2)]
    return got


@pytest.mark.parametrize("hub", ["redis", "polling"])
def test_late_commits_reach_each_stream_once_and_never_below_its_cursor(world, tmp_path, hub):
    require_services()
    env = process_env(EVENT_STREAM_POLL_SECONDS="0.2", EVENT_STREAM_SAFETY_POLL_SECONDS="0.2")
    if hub == "polling":
        env["REDIS_URL"] = ""
    key = make_api_key(world.owner, ALL_SCOPES)
    query = f"project_id={world.project.pk}"
    with asgi_server(env, tmp_path) as port:
        warm = Reader(port, key, query=query)  # starts the server's hub
        # The response's headers come before the stream has joined the hub: events recorded
        # in between are before its start. Record until one arrives, and start from that one.
        for _ in range(20):
            before = _record(world, "before")
            if _ids(warm, before, timeout=0.5):
                break
        else:
            pytest.fail("the stream never went live")
        warm.take(50, timeout=1)  # any earlier try that arrived late
        held = HeldEvent(world)
        after = _record(world, "after")
        assert held.id < after
        # The hub has read `after` and waits for the held id as a gap.
        assert _ids(warm, after) == [after]

        behind = Reader(port, key, query=query, last_event_id=before)  # cursor below the late one
        ahead = Reader(port, key, query=query, last_event_id=after)  # cursor above it
        fresh = Reader(port, key, query=query)
        held.commit()
        last = _record(world, "last")

        got = {
            name: _ids(reader, last)
            for name, reader in {
                "behind": behind,
                "ahead": ahead,
                "fresh": fresh,
                "warm": warm,
            }.items()
        }
        for reader in (warm, behind, ahead, fresh):
            reader.close()

    assert Event.objects.filter(pk=held.id).exists(), "the held event committed"
    for name, ids in got.items():
        assert len(ids) == len(set(ids)), (name, ids)
    assert sorted(got["behind"]) == [held.id, after, last]
    assert got["ahead"] == [last], "nothing at or below the cursor"
    assert sorted(got["warm"]) == [held.id, last]
    assert last in got["fresh"] and set(got["fresh"]) <= {held.id, last}
