import pytest

from tests.liveserver import asgi_server, process_env, require_services
from tests.notifications.receiver import start_receiver


@pytest.fixture
def live(world, tmp_path):
    require_services()
    env = process_env(EVENT_STREAM_HEARTBEAT_SECONDS="1", DATABASE_POOL="1")
    with asgi_server(env, tmp_path) as port:
        yield port


@pytest.fixture(autouse=True)
def fresh_receivers():
    """Each test meets every receiver anew: no kept connections, no failures counted."""
    from notifications import transport

    transport.receivers.close()
    yield
    transport.receivers.close()


@pytest.fixture
def receiver():
    """A receiver on 127.0.0.1 answering 200 (or the statuses it is told to)."""
    receiver, server = start_receiver()
    yield receiver
    server.shutdown()
    server.server_close()
