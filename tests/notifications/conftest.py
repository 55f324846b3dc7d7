import pytest

from tests.liveserver import asgi_server, process_env, require_services


@pytest.fixture(scope="module")
def live_port(django_db_setup, tmp_path_factory):
    """One ASGI server per module (starting and stopping one took about 4 s a test): it holds
    no state of a test's own, and each test's rows are new (sequences are not reset)."""
    require_services()
    env = process_env(EVENT_STREAM_HEARTBEAT_SECONDS="1", DATABASE_POOL="1")
    with asgi_server(env, tmp_path_factory.mktemp("live")) as port:
        yield port


@pytest.fixture
def live(world, live_port):
    return live_port


@pytest.fixture(autouse=True)
def fresh_receivers():
    """Each test meets every receiver anew: no kept connections, no failures counted."""
    from notifications import transport

    transport.receivers.close()
    yield
    transport.receivers.close()
