import pytest

from tests.liveserver import asgi_server, process_env, require_services


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
