"""``collab_event_hub_lag_events``: how many events of the log a process's event hub has not
read yet, counted beside its reads, and the most of any live process on a scrape."""

import asyncio
import time

import pytest
from django.db import transaction
from django.test import Client
from prometheus_client import CollectorRegistry, Gauge, values
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from collab.metrics import process_files_fold
from events.services import event_record
from notifications import stream
from notifications.metrics import EVENT_HUB_LAG

NAME = "collab_event_hub_lag_events"


def scraped(client: Client) -> float:
    response = client.get("/metrics")
    assert response.status_code == 200
    (family,) = [
        family
        for family in text_string_to_metric_families(response.content.decode())
        if family.name == NAME
    ]
    assert family.type == "gauge"
    (sample,) = family.samples
    return sample.value


async def until(predicate, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "not in time"
        await asyncio.sleep(0.02)


@pytest.mark.django_db(transaction=True)
def test_the_hub_counts_the_events_it_has_not_read(world, settings, monkeypatch):
    # Nothing wakes the hub but the test: no Redis, a poll far away, no consumers.
    settings.REDIS_URL = ""
    settings.EVENT_STREAM_POLL_SECONDS = 3600
    settings.EVENT_LOG_CONSUMERS = []
    monkeypatch.setattr(stream, "LAG_SAMPLE_SECONDS", 0.05)

    def record(count: int) -> None:
        with transaction.atomic():
            for index in range(count):
                event_record(
                    type="project.updated",
                    workspace_id=world.acme.pk,
                    project_id=world.project.pk,
                    data={"index": index},
                )

    def lag() -> float:
        return EVENT_HUB_LAG._value.get()

    async def scenario() -> list[float]:
        hub = stream.Hub()
        hub.task = asyncio.create_task(hub._run())
        try:
            await hub.ready.wait()
            await until(lambda: lag() == 0)
            await stream.in_thread(record, 3)
            await until(lambda: lag() == 3)
            behind = await stream.in_thread(scraped, Client())
            hub.woken.set()  # it reads them all
            await until(lambda: lag() == 0)
            assert hub.reader is not None
            assert hub.reader.last_id == await stream.in_thread(stream.last_event_id)
            return [behind, await stream.in_thread(scraped, Client())]
        finally:
            hub.task.cancel()

    assert asyncio.run(scenario()) == [3, 0]


def test_a_scrape_shows_the_most_behind_of_the_live_processes(tmp_path, monkeypatch):
    """Each process writes its own value (multiprocess mode); a scrape reads the largest of
    the live processes', and a process that ended stops counting (its files are folded)."""
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    for pid, lag in ((1001, 5), (1002, 40)):
        monkeypatch.setattr(values, "ValueClass", values.MultiProcessValue(lambda pid=pid: pid))
        gauge = Gauge(
            NAME,
            "lag",
            registry=None,
            multiprocess_mode=EVENT_HUB_LAG._multiprocess_mode,
        )
        gauge.set(lag)

    def scrape() -> list[float]:
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(tmp_path))
        return [
            sample.value
            for family in registry.collect()
            if family.name == NAME
            for sample in family.samples
        ]

    assert scrape() == [40]
    process_files_fold(1002, str(tmp_path))
    assert scrape() == [5]


@pytest.mark.django_db(transaction=True)
def test_the_hub_stops_when_cancelled_as_it_is_woken(world, settings):
    """A hub cancelled in the same turn of the loop as it is woken (an event's wake-up as the
    server stops) stops: asyncio.wait_for on Python 3.11 returned the wake-up and swallowed
    the cancellation, and the hub polled on, every EVENT_STREAM_SAFETY_POLL_SECONDS, with
    whatever waited for it to end (a test's event loop closing: 300 s)."""
    settings.REDIS_URL = ""
    settings.EVENT_STREAM_POLL_SECONDS = 3600
    settings.EVENT_LOG_CONSUMERS = []

    async def scenario() -> None:
        hub = stream.Hub()
        hub.task = asyncio.create_task(hub._run())
        await hub.ready.wait()
        await asyncio.sleep(0.05)  # waiting to be woken
        hub.woken.set()
        hub.task.cancel()
        done, _pending = await asyncio.wait([hub.task], timeout=5)
        if not done:
            hub.task.cancel()  # the test's own loop must close
        assert done and hub.task.cancelled()

    asyncio.run(scenario())
