"""How many event streams one credential holds open (notifications/slots.py).

Through the test client (the WSGI side of the view) and through the ASGI application itself;
on Redis when ``REDIS_URL`` is set (the count every process shares), else in memory.
"""

import asyncio
import time

import pytest
from django.core.signals import request_finished
from django.db import close_old_connections
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import AccessToken

from collab.api.scopes import ALL_SCOPES
from collab.redisclient import quick_client
from notifications import slots
from tests.conftest import assert_error, client_for
from tests.factories import make_api_key
from tests.notifications.sse_reader import STREAM
from tests.notifications.test_stream_door import Exchange, live_test, stream_scope


@pytest.fixture(autouse=True)
def few_streams(settings):
    settings.STREAM_MAX_PER_CREDENTIAL = 2
    slots._local.clear()  # noqa: SLF001 - the in-memory count of an earlier test
    client = quick_client()
    if client is not None:  # counts of an earlier test's credentials with the same ids
        for key in client.scan_iter(f"{slots.KEY_PREFIX}*"):
            client.delete(key)


def opened(client: APIClient):
    response = client.get(STREAM, HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 200, response.content
    return response


def close(response) -> None:
    """Close a stream as its client leaving would, keeping the test's connection (as the test
    client does once a streaming response is read to its end)."""
    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)


def assert_stream_limit(response) -> None:
    error = assert_error(response, 429, "RATE_LIMITED")
    assert error["details"] == {"limit": 2, "reason": "stream_limit"}
    assert int(response["Retry-After"]) > 0


def test_a_key_holds_at_most_the_configured_streams_and_a_closed_one_frees_its_slot(world):
    client = client_for(world.developer)
    first, second = opened(client), opened(client)

    assert_stream_limit(client.get(STREAM, HTTP_ACCEPT="text/event-stream"))
    # Another key of the same person is another integration, with a count of its own.
    other_key = client_for(world.developer)
    close(opened(other_key))
    close(first)
    third = opened(client)
    assert_stream_limit(client.get(STREAM, HTTP_ACCEPT="text/event-stream"))
    close(second)
    close(third)
    close(opened(client))


def test_the_tokens_of_one_user_share_a_count(world):
    def token_client() -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {AccessToken.for_user(world.owner)}")
        return client

    held = [opened(token_client()), opened(token_client())]

    assert_stream_limit(token_client().get(STREAM, HTTP_ACCEPT="text/event-stream"))
    for response in held:
        close(response)
    close(opened(token_client()))


def test_a_refused_request_takes_no_slot(world):
    client = client_for(world.developer)
    for _ in range(3):
        response = client.get(f"{STREAM}?project_id={world.other_project.pk}")
        assert_error(response, 404, "NOT_FOUND")
    held = [opened(client), opened(client)]
    for response in held:
        close(response)


def test_a_lapsed_lease_frees_its_slot(world, monkeypatch):
    """A node that crashed renews nothing: its streams' slots lapse after a lease."""
    client = client_for(world.developer)
    if quick_client() is None:
        pytest.skip("without Redis the count lives and dies with the one process")
    crashed = [opened(client), opened(client)]  # never closed: as good as lost
    assert_stream_limit(client.get(STREAM, HTTP_ACCEPT="text/event-stream"))
    later = time.time() + slots.lease_seconds() + 1
    monkeypatch.setattr(slots.time, "time", lambda: later)

    close(opened(client))
    for response in crashed:
        close(response)


@live_test
def test_an_asgi_stream_frees_its_slot_when_its_client_leaves(world):
    key = make_api_key(world.developer, ALL_SCOPES)

    async def open_stream() -> tuple[Exchange, int]:
        exchange = Exchange(stream_scope(key))
        start = await exchange.next()
        return exchange, start["status"]

    async def scenario():
        first, status_first = await open_stream()
        second, status_second = await open_stream()
        refused, status_refused = await open_stream()
        body = (await refused.next())["body"]
        await asyncio.wait_for(refused.task, timeout=10)
        await first.leave()
        again, status_again = await open_stream()
        for exchange in (second, again):
            await exchange.leave()
        return [status_first, status_second, status_refused, status_again], body

    statuses, body = asyncio.run(scenario())
    assert statuses == [200, 200, 429, 200]
    assert b'"code":"RATE_LIMITED"' in body.replace(b" ", b"")
