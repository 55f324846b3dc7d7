"""The windowed counters on each store: counting, refusing at the limit, windows, reads."""

import threading

import pytest

from collab.api import counters
from collab.api.counters import Window
from ratelimits.models import RateLimitCounter


def test_hits_count_up_to_the_limit_and_no_further(backend, clock):
    reset = int(clock.time) + 60
    hits = [counters.counter_hit("k", limit=3, window=60) for _ in range(5)]
    assert hits == [
        Window(1, reset, True),
        Window(2, reset, True),
        Window(3, reset, True),
        Window(3, reset, False),
        Window(3, reset, False),
    ]


def test_a_window_restarts_at_its_reset(backend, clock):
    start = int(clock.time)
    counters.counter_hit("k", limit=2, window=60)
    counters.counter_hit("k", limit=2, window=60)
    clock.time = start + 59.9  # the window opened at the start of the second of its first hit
    assert counters.counter_hit("k", limit=2, window=60).counted is False
    clock.time = start + 60
    assert counters.counter_hit("k", limit=2, window=60) == Window(1, start + 120, True)


def test_a_raised_limit_counts_on_from_the_same_window(backend, clock):
    for _ in range(3):
        counters.counter_hit("k", limit=2, window=60)
    assert counters.counter_hit("k", limit=4, window=60).hits == 3


def test_a_zero_limit_refuses_everything(backend, clock):
    assert counters.counter_hit("k", limit=0, window=60) == Window(0, int(clock.time) + 60, False)


def test_peek_reads_live_windows_without_counting(backend, clock):
    counters.counter_hit("a", limit=5, window=60)
    counters.counter_hit("a", limit=5, window=60)
    counters.counter_hit("b", limit=5, window=10)
    reset = int(clock.time)
    assert counters.counter_peek(["a", "b", "c"]) == [
        Window(2, reset + 60),
        Window(1, reset + 10),
        None,
    ]
    clock.advance(10)
    assert counters.counter_peek(["a", "b"]) == [Window(2, reset + 60), None]
    assert counters.counter_hit("a", limit=5, window=60).hits == 3


def test_clear_forgets_counters(backend, clock):
    counters.counter_hit("a", limit=5, window=60)
    counters.counter_hit("b", limit=5, window=60)
    counters.counter_clear(["a", "b"])
    assert counters.counter_peek(["a", "b"]) == [None, None]


def test_purge_deletes_database_counters_long_ended(settings, db, clock):
    settings.RATE_LIMIT_BACKEND = "database"
    counters.counter_hit("old", limit=5, window=60)
    clock.advance(3700)
    counters.counter_hit("new", limit=5, window=60)
    assert counters.counters_purge(older_than=3600) == 1
    assert list(RateLimitCounter.objects.values_list("key", flat=True)) == [
        f"{settings.RATE_LIMIT_KEY_PREFIX}new"
    ]


def test_redis_counts_exactly_under_concurrent_hits(backend):
    if backend != "redis":
        pytest.skip("threads share one database transaction here; see test_concurrency.py")
    barrier = threading.Barrier(40)
    results: list[Window | None] = []
    lock = threading.Lock()

    def hammer():
        barrier.wait(timeout=10)
        for _ in range(5):
            window = counters.counter_hit("hot", limit=50, window=60)
            with lock:
                results.append(window)

    threads = [threading.Thread(target=hammer) for _ in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    counted = sorted(w.hits for w in results if w is not None and w.counted)
    assert counted == list(range(1, 51))
    assert len(results) == 200
