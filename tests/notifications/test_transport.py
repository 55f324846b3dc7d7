"""The webhook transport against real sockets on 127.0.0.1: kept connections, a receiver's
share of the senders, the pause after failures in a row."""

import socket
import threading
import time
from datetime import timedelta

import pytest
from celery.signals import task_prerun
from django.utils import timezone

from events.models import Event
from notifications import crypto, dispatch, fanout, tasks, transport
from notifications import delivery as engine
from notifications.models import Delivery, DeliveryAttempt, Webhook
from tests.notifications.receiver import start_receiver
from tests.notifications.test_delivery import create_issue, register

pytestmark = pytest.mark.django_db(transaction=True)


class Dropper:
    """Accepts connections and closes them at once, unanswered (a network failure each time),
    until it is ``answering``; counts the connections made to it."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.accepted = 0
        self.answering = False
        self.running = True
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def _serve(self):
        while self.running:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted += 1
            if self.answering:
                connection.recv(65536)
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
            connection.close()

    def close(self):
        self.running = False
        self.socket.close()


class Holder:
    """Answers 200 only when released: its requests stay in flight until then."""

    def __init__(self):
        self.release = threading.Event()
        self.arrived = threading.Semaphore(0)
        self.receiver, self.server = start_receiver()
        handler = self.server.RequestHandlerClass
        original, holder = handler.do_POST, self

        def do_post(handler_self):
            holder.arrived.release()
            holder.release.wait(10)
            original(handler_self)

        handler.do_POST = do_post

    @property
    def url(self) -> str:
        return self.receiver.url

    def occupy(self) -> threading.Thread:
        """A delivery in flight to it, from a thread of its own, arrived and held."""
        sending = threading.Thread(target=post, args=(self.url, 10), daemon=True)
        sending.start()
        assert self.arrived.acquire(timeout=5)
        return sending

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def post(url: str, timeout: float = 2.0) -> transport.PostResult:
    return transport.post(
        url, body=b"{}", headers={"Content-Type": "application/json"}, timeout=timeout
    )


def test_a_receivers_connection_is_kept_between_deliveries(receiver):
    results = [post(receiver.url) for _ in range(5)]
    assert [result.status_code for result in results] == [200] * 5
    requests = receiver.wait_for(5)
    assert len({request.peer_port for request in requests}) == 1


def test_each_receiver_gets_its_own_connection(receiver):
    other, other_server = start_receiver()
    try:
        for _ in range(2):
            assert post(receiver.url).ok and post(other.url).ok
        assert len({request.peer_port for request in receiver.wait_for(2)}) == 1
        assert len({request.peer_port for request in other.wait_for(2)}) == 1
        assert len(transport.receivers.pools) == 2
    finally:
        other_server.shutdown()
        other_server.server_close()


def test_failures_in_a_row_pause_the_receiver_then_one_probe_tries_it(settings):
    settings.WEBHOOK_HOST_FAILURES_TO_PAUSE = 3
    settings.WEBHOOK_HOST_PAUSE_SECONDS = 0.5
    dropper = Dropper()
    try:
        failed = [post(dropper.url) for _ in range(3)]
        assert all(result.status_code is None and result.retryable for result in failed)
        assert dropper.accepted == 3

        paused = post(dropper.url)
        assert paused.status_code is None and not paused.deferred
        assert "paused" in paused.error and paused.retryable
        assert dropper.accepted == 3  # not sent: no connection made

        time.sleep(0.6)
        probe = post(dropper.url)
        assert probe.status_code is None and "paused" not in probe.error
        assert dropper.accepted == 4
        # It failed again: paused anew, for twice as long.
        gate = transport.receivers.gate("127.0.0.1", dropper.port)
        assert gate.failures == 4
        assert 0.9 < gate.paused_until - time.monotonic() <= 1.0
        assert "paused" in post(dropper.url).error
    finally:
        dropper.close()


def test_a_receiver_answering_again_ends_its_pause(settings):
    settings.WEBHOOK_HOST_FAILURES_TO_PAUSE = 2
    settings.WEBHOOK_HOST_PAUSE_SECONDS = 0.3
    dropper = Dropper()
    try:
        assert post(dropper.url).status_code is None and post(dropper.url).status_code is None
        assert "paused" in post(dropper.url).error

        time.sleep(0.4)
        dropper.answering = True
        assert post(dropper.url).status_code == 200
        gate = transport.receivers.gate("127.0.0.1", dropper.port)
        assert gate.failures == 0 and gate.paused_until == 0
        assert post(dropper.url).ok
        assert dropper.accepted == 4
    finally:
        dropper.close()


def test_a_busy_receiver_is_waited_for_and_a_stuck_one_is_not(settings):
    """Every slot taken: a sender waits WEBHOOK_HOST_WAIT_SECONDS for one while the receiver
    has just filled up or still answers; once they have all been out for longer than that,
    with nothing back, the receiver is stuck and the delivery is deferred at once (a dead
    receiver's deliveries must not hold the senders the others need)."""
    settings.WEBHOOK_HOST_CONCURRENCY = 1
    settings.WEBHOOK_HOST_WAIT_SECONDS = 0.4
    holder = Holder()
    try:
        first = holder.occupy()  # the one slot is taken, just now

        def deferred_after() -> float:
            began = time.monotonic()
            result = post(holder.url)
            assert result.deferred
            return time.monotonic() - began

        assert deferred_after() >= 0.35  # busy: it waited for the slot
        time.sleep(0.1)  # full for longer than a sender waits, and nothing came back
        assert deferred_after() < 0.1  # stuck: deferred at once
        assert deferred_after() < 0.1
        holder.release.set()
        first.join(5)
        assert post(holder.url).ok  # back, and taken at once
    finally:
        holder.close()


def test_a_busy_receiver_defers_the_delivery_without_an_attempt(world, settings):
    settings.WEBHOOK_HOST_CONCURRENCY = 1
    settings.WEBHOOK_HOST_WAIT_SECONDS = 0.05
    settings.WEBHOOK_BUSY_DEFER_SECONDS = 30
    holder = Holder()
    try:
        first = holder.occupy()  # the receiver's one slot is taken

        webhook = Webhook.objects.create(
            workspace=world.acme,
            project=world.project,
            url=holder.url,
            events=["*"],
            secret_encrypted=_secret(),
        )
        event = Event.objects.create(
            type="issue.updated", workspace_id=world.acme.pk, dispatched_at=timezone.now()
        )
        delivery = Delivery.objects.create(webhook=webhook, event=event)
        before = timezone.now()
        assert engine.delivery_send(delivery_id=delivery.pk) is None

        delivery.refresh_from_db()
        assert delivery.status == Delivery.Status.PENDING
        assert delivery.attempts == 0 and delivery.claimed_until is None
        assert delivery.next_attempt_at >= before + timedelta(seconds=30)
        assert not DeliveryAttempt.objects.exists()
        assert holder.receiver.requests == []

        holder.release.set()
        first.join(5)
        # Its slot back, the receiver takes the delivery when it is due.
        Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
        sent = engine.delivery_send(delivery_id=delivery.pk)
        assert sent is not None and sent.status == Delivery.Status.SUCCEEDED
        assert sent.attempts == 1
    finally:
        holder.close()


def test_a_paused_receiver_fails_its_delivery_as_an_attempt_to_retry(world, settings):
    settings.WEBHOOK_HOST_FAILURES_TO_PAUSE = 1
    settings.WEBHOOK_HOST_PAUSE_SECONDS = 60
    settings.WEBHOOK_MAX_ATTEMPTS = 5
    settings.WEBHOOK_RETRY_BASE_SECONDS = 600  # past the countdown: the sweeper's to send
    dropper = Dropper()
    try:
        assert post(dropper.url).status_code is None
        webhook = Webhook.objects.create(
            workspace=world.acme,
            project=world.project,
            url=dropper.url,
            events=["*"],
            secret_encrypted=_secret(),
        )
        event = Event.objects.create(
            type="issue.updated", workspace_id=world.acme.pk, dispatched_at=timezone.now()
        )
        delivery = Delivery.objects.create(webhook=webhook, event=event)
        sent = engine.delivery_send(delivery_id=delivery.pk)
        assert sent.status == Delivery.Status.PENDING and sent.attempts == 1
        assert sent.next_attempt_at > timezone.now() + timedelta(minutes=5)
        [attempt] = DeliveryAttempt.objects.filter(delivery=delivery)
        assert "paused" in attempt.error and attempt.status_code is None
        assert dropper.accepted == 1  # only the first post reached it
    finally:
        dropper.close()


def _secret() -> str:
    return crypto.secret_encrypt("s3cret-value")


def _deliveries(world, url: str, count: int) -> list[Delivery]:
    webhook = Webhook.objects.create(
        workspace=world.acme,
        project=world.project,
        url=url,
        events=["*"],
        secret_encrypted=_secret(),
    )
    events = [
        Event.objects.create(
            type="issue.updated",
            workspace_id=world.acme.pk,
            project_id=world.project.pk,
            dispatched_at=timezone.now(),
        )
        for _ in range(count)
    ]
    return [Delivery.objects.create(webhook=webhook, event=event) for event in events]


def test_a_batch_goes_out_in_order_on_one_connection(world, receiver):
    deliveries = _deliveries(world, receiver.url, 5)
    sent = engine.deliveries_send(delivery_ids=[d.pk for d in deliveries])
    assert [d.status for d in sent] == [Delivery.Status.SUCCEEDED] * 5
    requests = receiver.wait_for(5)
    assert [r.headers["x-collab-delivery"] for r in requests] == [str(d.uuid) for d in deliveries]
    assert len({r.peer_port for r in requests}) == 1
    assert DeliveryAttempt.objects.count() == 5


FANOUT = "notifications.tasks.event_fanout"


class TaskRuns:
    """The notifications tasks run (eagerly, in this process) while it is open."""

    def __init__(self):
        self.runs: list[tuple[str, dict]] = []

    def _record(self, sender=None, kwargs=None, **_):
        if sender.name.startswith("notifications.tasks."):
            self.runs.append((sender.name, kwargs))

    def __enter__(self):
        task_prerun.connect(self._record, weak=False)
        return self.runs

    def __exit__(self, *exc):
        task_prerun.disconnect(self._record)


def test_a_fanout_sends_a_burst_of_events_in_one_batch_per_webhook(api, world, receiver, settings):
    """The fan-out task sends what it made itself: no second trip through the broker."""
    register(api, world.project, receiver.url, events=["issue.created"])
    with TaskRuns() as runs:
        items = [{"title": f"Bulk {n}"} for n in range(6)]
        response = api.owner.post(
            f"/v1/projects/{world.project.pk}/issues/bulk", {"items": items}, format="json"
        )
    assert response.status_code == 200, response.content
    # One task for the six: the coalesced fan-out of what is due (with Redis), or the
    # transaction's own events (without).
    [(name, run)] = runs
    assert name == FANOUT
    if settings.REDIS_URL:
        assert run == {"due": True}
    else:
        assert len(run["event_ids"]) == 6
    requests = receiver.wait_for(6)
    titles = [r.body for r in requests]
    assert len(titles) == 6 and all(b"Bulk" in body for body in titles)
    assert len({r.peer_port for r in requests}) == 1
    assert Delivery.objects.filter(status=Delivery.Status.SUCCEEDED).count() == 6


@pytest.fixture
def with_redis(settings):
    if not settings.REDIS_URL:
        pytest.skip("The fan-outs coalesce with Redis only.")


def test_commits_while_a_fanout_is_queued_go_with_it(api, world, receiver, with_redis):
    """A fan-out queued and not yet started takes the events committed meanwhile: they queue
    no task of their own. Once it starts, the next commit queues one again."""
    register(api, world.project, receiver.url, events=["issue.created"])
    assert fanout._fanout_mark() is True  # as a commit does that queues the fan-out
    with TaskRuns() as runs:
        for n in range(3):
            create_issue(api, world.project, title=f"Meanwhile {n}")
    assert runs == []
    assert Event.objects.filter(dispatched_at__isnull=True).count() == 3
    with TaskRuns() as runs:
        assert tasks.event_fanout.apply(kwargs={"due": True}).result == 3
    assert [name for name, _ in runs] == [FANOUT]
    assert not Event.objects.filter(dispatched_at__isnull=True).exists()
    assert len(receiver.wait_for(3)) == 3
    with TaskRuns() as runs:
        create_issue(api, world.project, title="After")
    assert runs == [(FANOUT, {"due": True})]
    assert len(receiver.wait_for(4)) == 4
    assert Delivery.objects.filter(status=Delivery.Status.SUCCEEDED).count() == 4


def test_a_fanout_the_broker_refuses_leaves_no_mark(api, world, with_redis, monkeypatch):
    """The next commit queues the fan-out again; the sweeper has the events meanwhile."""
    monkeypatch.setattr(dispatch, "enqueue", lambda *args, **kwargs: False)
    create_issue(api, world.project)
    assert fanout._fanout_mark() is True, "the refused fan-out left its mark behind"


def test_without_an_answer_from_redis_each_commit_queues_its_own(api, world, settings):
    settings.REDIS_URL = "redis://127.0.0.1:9/0"  # nothing listens on the discard port
    with TaskRuns() as runs:
        create_issue(api, world.project)
    [(name, kwargs)] = runs
    assert name == FANOUT and kwargs == {"event_ids": [Event.objects.get().pk]}
    assert not Event.objects.filter(dispatched_at__isnull=True).exists()


def test_a_busy_receiver_hands_the_rest_of_the_batch_back_untried(world, settings):
    settings.WEBHOOK_HOST_CONCURRENCY = 1
    settings.WEBHOOK_HOST_WAIT_SECONDS = 0.02
    settings.WEBHOOK_BUSY_DEFER_SECONDS = 30
    holder = Holder()
    try:
        holder.occupy()
        deliveries = _deliveries(world, holder.url, 3)
        assert engine.deliveries_send(delivery_ids=[d.pk for d in deliveries]) == [None] * 3
        for delivery in Delivery.objects.all():
            assert delivery.status == Delivery.Status.PENDING and delivery.attempts == 0
            assert delivery.claimed_until is None
        assert not DeliveryAttempt.objects.exists()
        assert holder.receiver.requests == []
    finally:
        holder.close()


def test_a_delivery_attempted_elsewhere_since_it_was_read_is_not_claimed(world, receiver):
    [delivery] = _deliveries(world, receiver.url, 1)
    Delivery.objects.filter(pk=delivery.pk).update(attempts=1)  # another worker's try
    assert engine._deliveries_claim([[delivery]]) == []  # noqa: SLF001
    assert receiver.requests == []
    assert Delivery.objects.get(pk=delivery.pk).attempts == 1


def test_a_slow_receiver_holds_up_no_other_webhook_of_the_same_task(world, receiver):
    holder = Holder()
    try:
        [slow] = _deliveries(world, holder.url, 1)
        [quick] = _deliveries(world, receiver.url, 1)
        sending = threading.Thread(
            target=engine.deliveries_send, kwargs={"delivery_ids": [slow.pk, quick.pk]}
        )
        sending.start()
        assert holder.arrived.acquire(timeout=5)  # the slow one is on the wire, unanswered
        [request] = receiver.wait_for(1, timeout=5)
        assert request.headers["x-collab-delivery"] == str(quick.uuid)
        deadline = time.monotonic() + 5
        while Delivery.objects.get(pk=quick.pk).status != Delivery.Status.SUCCEEDED:
            assert time.monotonic() < deadline, "the quick delivery was not settled"
            time.sleep(0.02)
        assert Delivery.objects.get(pk=slow.pk).status == Delivery.Status.PENDING
        holder.release.set()
        sending.join(10)
        assert Delivery.objects.get(pk=slow.pk).status == Delivery.Status.SUCCEEDED
    finally:
        holder.close()


def test_without_waiting_the_caller_is_free_while_a_slow_receiver_holds_its_turn(world, receiver):
    """What the fan-out task does on a worker: the turns go to the senders and the task's
    thread returns at once, even with one receiver sitting on its request."""
    from django.db import connection

    if connection.vendor == "sqlite":
        # The in-memory test database's shared cache fails a write meeting this thread's
        # reads ("table is locked") instead of waiting, as a database file would.
        pytest.skip("senders writing while the test reads: PostgreSQL")
    holder = Holder()
    try:
        [slow] = _deliveries(world, holder.url, 1)
        [quick] = _deliveries(world, receiver.url, 1)
        began = time.monotonic()
        sent = engine.deliveries_send(delivery_ids=[slow.pk, quick.pk], wait=False)
        assert sent == [None, None] and time.monotonic() - began < 2
        assert holder.arrived.acquire(timeout=5)  # the slow one is on the wire, unanswered
        [request] = receiver.wait_for(1, timeout=5)
        assert request.headers["x-collab-delivery"] == str(quick.uuid)
        holder.release.set()
        deadline = time.monotonic() + 10
        while set(Delivery.objects.values_list("status", flat=True)) != {"succeeded"}:
            assert time.monotonic() < deadline, "the deliveries were not settled"
            time.sleep(0.02)
        assert DeliveryAttempt.objects.filter(number=1, status_code=200).count() == 2
    finally:
        holder.close()


def test_a_retry_task_on_a_worker_does_not_wait_on_its_receiver(world):
    """A retry (``webhook_deliver``) bound for a receiver that sits on its requests: on a
    worker, its thread hands the turn on and returns, so retries for a dead receiver do not
    take the threads the next events' fan-outs need. Run eagerly (the tests), it waits."""
    from django.db import connection

    from notifications.tasks import webhook_deliver

    if connection.vendor == "sqlite":
        pytest.skip("senders writing while the test reads: PostgreSQL")
    holder = Holder()
    try:
        [slow] = _deliveries(world, holder.url, 1)
        webhook_deliver.push_request(is_eager=False)
        try:
            began = time.monotonic()
            assert webhook_deliver(delivery_ids=[slow.pk]) == [None]
            assert time.monotonic() - began < 2
        finally:
            webhook_deliver.pop_request()
        assert holder.arrived.acquire(timeout=5)  # on the wire, unanswered, and we are free
        holder.release.set()
        deadline = time.monotonic() + 10
        while Delivery.objects.get(pk=slow.pk).status != Delivery.Status.SUCCEEDED:
            assert time.monotonic() < deadline, "the delivery was not settled"
            time.sleep(0.02)
    finally:
        holder.close()


def test_an_event_reaches_its_receiver_in_four_statements(world, receiver):
    """The fan-out task's work for one event and one webhook: the fan-out, the read, the
    claim, the settle (the webhook's health row is moved at most once a second)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    webhook = Webhook.objects.create(
        workspace=world.acme,
        project=world.project,
        url=receiver.url,
        events=["issue.*"],
        secret_encrypted=_secret(),
    )

    def event():
        return Event.objects.create(
            type="issue.updated", workspace_id=world.acme.pk, project_id=world.project.pk
        )

    fanout.events_deliver(event_ids=[event().pk])  # the webhook's health row moved
    latest = event()
    with CaptureQueriesContext(connection) as queries:
        [made] = fanout.events_deliver(event_ids=[latest.pk])
    statements = [q["sql"] for q in queries.captured_queries]
    if connection.vendor == "postgresql":  # elsewhere each write is a statement of its own
        assert len(statements) == 4, statements
    delivery = Delivery.objects.get(pk=made)
    assert (delivery.webhook_id, delivery.event_id) == (webhook.pk, latest.pk)
    assert delivery.status == Delivery.Status.SUCCEEDED and delivery.attempts == 1
    assert DeliveryAttempt.objects.filter(delivery=delivery, number=1, status_code=200).exists()
    assert receiver.wait_for(2)[-1].headers["x-collab-delivery"] == str(delivery.uuid)
