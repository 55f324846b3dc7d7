"""Webhooks end to end with real processes: the ASGI server, a Celery worker with beat, Redis,
and a receiver on 127.0.0.1. Nothing in-process: requests go over HTTP to the server, which
queues on Redis, and the worker posts to the receiver."""

import base64
import hashlib
import hmac
import threading
import time

import httpx
import pytest
from standardwebhooks import Webhook as StandardWebhook

from collab.api.scopes import ALL_SCOPES
from events.models import Event
from notifications.models import Delivery
from tests.factories import make_api_key
from tests.liveserver import (
    RedisServer,
    Worker,
    asgi_server,
    celery_worker,
    process_env,
    require_services,
    wait_until,
)
from tests.notifications.receiver import start_receiver

pytestmark = [
    pytest.mark.slow(seconds=8),
    pytest.mark.django_db(transaction=True),
    pytest.mark.live,
]

SECRET = "end-to-end-secret"
QUICK = {
    "WEBHOOK_RETRY_BASE_SECONDS": "0.2",
    "WEBHOOK_SWEEP_SECONDS": "1",
    "WEBHOOK_SWEEP_GRACE_SECONDS": "1",
    "WEBHOOK_LEASE_MARGIN_SECONDS": "1",
    "DATABASE_POOL": "1",
}


class Api:
    def __init__(self, port: int, key: str):
        self.client = httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {key}"},
            timeout=30,
        )

    def post(self, path: str, body: dict) -> dict:
        response = self.client.post(path, json=body)
        assert response.status_code == 201, response.text
        return response.json()["data"]


def verify(request) -> dict:
    verifier = StandardWebhook("whsec_" + base64.b64encode(SECRET.encode()).decode())
    payload = verifier.verify(request.body, request.headers)
    expected = "sha256=" + hmac.new(SECRET.encode(), request.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(request.headers["x-collab-signature-256"], expected)
    return payload


def test_a_real_worker_delivers_and_retries(world, receiver, tmp_path):
    require_services()
    receiver.statuses = [500, 502]
    env = process_env(**QUICK)
    key = make_api_key(world.owner, ALL_SCOPES)
    with asgi_server(env, tmp_path) as port, celery_worker(env, tmp_path) as worker:
        api = Api(port, key)
        api.post(
            f"/v1/projects/{world.project.pk}/webhooks",
            {"url": receiver.url, "events": ["issue.created"], "secret": SECRET},
        )
        issue = api.post(f"/v1/projects/{world.project.pk}/issues", {"title": "Over the wire"})
        requests = receiver.wait_for(3, timeout=30)
        assert len(requests) == 3, worker.output()

    payloads = [verify(request) for request in requests]
    assert payloads[0]["data"]["issue"]["id"] == issue["id"]
    assert [r.headers["x-collab-attempt"] for r in requests] == ["1", "2", "3"]
    assert len({r.headers["x-collab-delivery"] for r in requests}) == 1
    delivery = Delivery.objects.get()
    assert delivery.status == Delivery.Status.SUCCEEDED and delivery.attempts == 3


def test_an_issue_created_while_the_broker_is_down_is_delivered_once_it_is_back(
    world, receiver, tmp_path
):
    require_services()
    redis = RedisServer(tmp_path).start()
    try:
        env = process_env(REDIS_URL=redis.url, **QUICK)
        key = make_api_key(world.owner, ALL_SCOPES)
        with asgi_server(env, tmp_path) as port, celery_worker(env, tmp_path) as worker:
            api = Api(port, key)
            api.post(
                f"/v1/projects/{world.project.pk}/webhooks",
                {"url": receiver.url, "events": ["issue.created"], "secret": SECRET},
            )
            redis.stop()
            issue = api.post(
                f"/v1/projects/{world.project.pk}/issues", {"title": "Written while Redis slept"}
            )
            event = Event.objects.get(type="issue.created")
            assert event.dispatched_at is None, "no task could be queued"
            time.sleep(2)
            assert receiver.requests == []

            redis.start()
            [request] = receiver.wait_for(1, timeout=90) or [None]
            assert request is not None, worker.output()
    finally:
        redis.stop()
    assert verify(request)["data"]["issue"]["id"] == issue["id"]
    assert Event.objects.get(pk=event.pk).dispatched_at is not None
    assert Delivery.objects.get().status == Delivery.Status.SUCCEEDED


def test_a_worker_killed_mid_delivery_does_not_lose_it(world, tmp_path):
    """SIGKILL while the receiver is still reading: after a restart the delivery arrives,
    under the same delivery id, as the next attempt."""
    require_services()
    release = threading.Event()
    receiver, server = start_receiver()
    first_arrived = threading.Event()

    original = server.RequestHandlerClass.do_POST

    def slow_first(handler):
        if not first_arrived.is_set():
            first_arrived.set()
            release.wait(20)
        original(handler)

    server.RequestHandlerClass.do_POST = slow_first
    env = process_env(WEBHOOK_TIMEOUT_SECONDS="4", **QUICK)
    key = make_api_key(world.owner, ALL_SCOPES)
    try:
        with asgi_server(env, tmp_path) as port:
            api = Api(port, key)
            api.post(
                f"/v1/projects/{world.project.pk}/webhooks",
                {"url": receiver.url, "events": ["issue.created"], "secret": SECRET},
            )
            worker = Worker(env, tmp_path).start()
            try:
                api.post(f"/v1/projects/{world.project.pk}/issues", {"title": "Killed"})
                assert first_arrived.wait(30), worker.output()
                worker.kill()
                release.set()
                delivery = Delivery.objects.get()
                assert delivery.status == Delivery.Status.PENDING and delivery.attempts == 1
                assert not delivery.attempt_log.exists(), "the attempt never finished"

                worker = Worker(env, tmp_path).start()
                requests = receiver.wait_for(2, timeout=60)
                assert len(requests) == 2, worker.output()
            finally:
                worker.stop()
                worker.purge()
    finally:
        release.set()
        server.shutdown()
        server.server_close()
    first, second = requests
    assert first.headers["x-collab-delivery"] == second.headers["x-collab-delivery"]
    assert (first.headers["x-collab-attempt"], second.headers["x-collab-attempt"]) == ("1", "2")
    verify(second)
    delivery = wait_until(
        lambda: Delivery.objects.filter(status=Delivery.Status.SUCCEEDED).first(), timeout=10
    )
    assert delivery.attempts == 2
