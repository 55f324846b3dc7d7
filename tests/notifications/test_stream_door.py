"""The stream's door of ``collab.asgi``: the request is answered on the REST threads, then the
frames go out from a coroutine that holds only the stream (not the request, its user, or a
thread), and what streams joining together may see is read once for all of them.

In process, through the ASGI application itself, on the test database.
"""

import asyncio
import gc
from urllib.parse import urlencode

import pytest
from django.core.handlers.asgi import ASGIRequest

from collab.api.scopes import ALL_SCOPES
from notifications import selectors, stream
from tests.factories import make_api_key

live_test = pytest.mark.django_db(transaction=True)


def stream_scope(key: str, method: str = "GET", query: dict | None = None) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": "/v1/events/stream",
        "raw_path": b"/v1/events/stream",
        "query_string": urlencode(query or {}).encode(),
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"authorization", f"Bearer {key}".encode()),
            (b"accept", b"text/event-stream"),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


class Exchange:
    """One request to the application: what it sent, and a way to leave."""

    def __init__(self, scope: dict):
        from collab.asgi import application

        self.incoming: asyncio.Queue = asyncio.Queue()
        self.outgoing: asyncio.Queue = asyncio.Queue()
        self.incoming.put_nowait({"type": "http.request", "body": b"", "more_body": False})
        self.task = asyncio.create_task(
            application(scope, self.incoming.get, self.outgoing.put), name="exchange"
        )

    async def next(self) -> dict:
        return await asyncio.wait_for(self.outgoing.get(), timeout=10)

    async def leave(self) -> None:
        self.incoming.put_nowait({"type": "http.disconnect"})
        await asyncio.wait_for(self.task, timeout=10)


def headers(start: dict) -> dict[str, str]:
    return {name.decode().lower(): value.decode() for name, value in start["headers"]}


def live_requests() -> list[ASGIRequest]:
    gc.collect()
    # By exact type: isinstance() on a weak proxy whose object is gone raises.
    return [item for item in gc.get_objects() if type(item) is ASGIRequest]


@live_test
def test_an_open_stream_keeps_no_request_and_ends_when_its_client_leaves(world):
    key = make_api_key(world.developer, ALL_SCOPES)

    async def opened(types: str) -> Exchange:
        exchange = Exchange(stream_scope(key, query={"types": types}))
        start = await exchange.next()
        assert start["status"] == 200
        assert headers(start)["content-type"] == "text/event-stream"
        assert (await exchange.next())["body"] == b": connected\n\n"
        return exchange

    async def scenario():
        first = await opened("issue.*")
        # A second stream, since DRF's schema descriptor keeps the view of the latest request
        # of a view class (and so its request) on the class, whatever the server.
        second = await opened("comment.*")
        hub = stream.hub()
        assert [s.user_id for s in hub.subscribers] == [world.developer.pk] * 2
        # The first stream is open, and its request, user and credential are gone.
        assert [r.GET.get("types") for r in live_requests()] in ([], ["comment.*"])
        await first.leave()
        await second.leave()
        assert hub.subscribers == set()
        assert first.task.exception() is None and second.task.exception() is None

    asyncio.run(scenario())


@live_test
def test_errors_and_head_answer_before_any_stream_starts(world):
    key = make_api_key(world.developer, ALL_SCOPES)

    async def answer(scope: dict) -> tuple[dict, dict]:
        exchange = Exchange(scope)
        start, body = await exchange.next(), await exchange.next()
        await asyncio.wait_for(exchange.task, timeout=10)
        return start, body

    async def scenario():
        start, body = await answer(stream_scope(key, query={"project_id": "999999"}))
        assert start["status"] == 404
        assert b'"code":"NOT_FOUND"' in body["body"].replace(b" ", b"")
        start, body = await answer(stream_scope("not-a-key"))
        assert start["status"] == 401
        start, body = await answer(stream_scope(key, method="HEAD"))
        assert start["status"] == 200 and body["body"] == b""
        assert stream.hub().subscribers == set()

    asyncio.run(scenario())


@live_test
def test_an_undecodable_query_string_is_400_in_the_envelope(world):
    key = make_api_key(world.developer, ALL_SCOPES)

    async def scenario():
        scope = {**stream_scope(key), "query_string": b"types=\xff"}
        exchange = Exchange(scope)
        start, body = await exchange.next(), await exchange.next()
        assert start["status"] == 400
        assert headers(start)["content-type"] == "application/json"
        assert b"BAD_REQUEST" in body["body"]

    asyncio.run(scenario())


@live_test
def test_streams_joining_together_read_their_scopes_once(world, monkeypatch):
    reads: list[set[int]] = []
    read = selectors.visible_scopes

    def counted(*, user_ids):
        reads.append(set(user_ids))
        return read(user_ids=user_ids)

    monkeypatch.setattr(selectors, "visible_scopes", counted)
    people = [world.owner, world.developer, world.outsider]

    async def scenario():
        hub = stream.hub()
        joining = [stream.Subscriber(user_id=person.pk, types=None) for person in people]
        await asyncio.gather(*(hub.subscribe(subscriber) for subscriber in joining))
        return joining

    joined = asyncio.run(scenario())
    assert reads == [{person.pk for person in people}]
    for person, subscriber in zip(people, joined, strict=True):
        projects, workspaces = read(user_ids={person.pk})[person.pk]
        assert (subscriber.project_ids, subscriber.workspace_ids) == (projects, workspaces)
    assert joined[0].project_ids != joined[2].project_ids  # they do differ


@live_test
def test_a_stream_whose_scope_cannot_be_read_is_a_500_in_the_envelope(world, monkeypatch):
    """The database failing as the stream joins the hub: no 200 and an empty stream, but the
    contract's error, and the hub keeps no subscriber."""
    from django.db import OperationalError

    def down(*, user_ids):
        raise OperationalError("the database is down")

    monkeypatch.setattr(selectors, "visible_scopes", down)
    key = make_api_key(world.developer, ALL_SCOPES)

    async def scenario():
        exchange = Exchange(stream_scope(key))
        start, body = await exchange.next(), await exchange.next()
        await asyncio.wait_for(exchange.task, timeout=10)
        assert stream.hub().subscribers == set()
        # The hub started a moment ago: let its Redis subscription settle before the loop ends
        # (one cancelled while it is being sent can keep asyncio.run() from returning).
        await asyncio.sleep(1)
        return start, body

    start, body = asyncio.run(scenario())
    assert start["status"] == 500, start
    assert headers(start)["content-type"].startswith("application/json")
    assert b'"code":"INTERNAL_ERROR"' in body["body"].replace(b" ", b"")
    assert headers(start)["x-request-id"]
