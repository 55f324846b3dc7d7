"""Celery as a cluster: queues by kind, one beat sending (a lock), a visibility timeout longer
than anything a message waits or runs, and time limits on every task."""

import json
import os
import re
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.apps import apps as django_apps
from django.conf import settings

from collab import beat
from collab.celery import app
from tests.liveserver import QUEUES, Beat, _group_kill, wait_until

ROOT = Path(settings.BASE_DIR)
QUEUE_NAMES = ["default", "webhooks", "git", "analytics", "email", "exports"]
# The project's own apps: those installed from this repository (a new app is in it at once).
PROJECT_APPS = tuple(
    config.name for config in django_apps.get_app_configs() if Path(config.path).parent == ROOT
)
# The intended queue of every task of the project. A new task belongs here and in
# CELERY_TASK_ROUTES, with a line in the table above it saying why it is safe to run twice.
EXPECTED_QUEUES = {
    "notifications.tasks.event_fanout": "webhooks",
    "notifications.tasks.webhook_deliver": "webhooks",
    "notifications.tasks.deliveries_sweep": "webhooks",
    "gitintegration.tasks.repository_sync_task": "git",
    "gitintegration.tasks.repositories_sync_all": "git",
    "gitintegration.tasks.repositories_sweep": "git",
    "comments.tasks.mentions_sweep": "email",
    "accounts.tasks.invitations_email_sweep": "email",
    "analytics.tasks.analytics_rollup_all": "analytics",
    "analytics.tasks.analytics_rollup_project": "analytics",
    "accounts.tasks.invitation_send_email": "email",
    "comments.tasks.mentions_notify": "email",
    "notifications.tasks.webhook_disabled_notify": "email",
    "events.tasks.events_purge": "default",
    "ratelimits.tasks.rate_limit_counters_purge": "default",
    "accounts.tasks.denied_tokens_purge": "default",
    "issues.tasks.facet_counts_compact": "default",
    "transfer.tasks.export_build": "exports",
    "transfer.tasks.exports_sweep": "exports",
}


def project_tasks() -> dict:
    app.loader.import_default_modules()
    return {
        name: task
        for name, task in app.tasks.items()
        if name.split(".")[0] in (*PROJECT_APPS, "collab")
    }


def queue_of(name: str, options: dict | None = None) -> str:
    return app.amqp.router.route(dict(options or {}), name)["queue"].name


# Queues ---------------------------------------------------------------------------------------


def test_the_six_queues_are_declared_and_default_is_the_default():
    assert list(app.amqp.queues) == QUEUE_NAMES
    assert app.conf.task_default_queue == "default"
    assert QUEUES.split(",") == QUEUE_NAMES, "tests/liveserver.py's workers take every queue"
    # Celery's own tasks, and any name not routed, go to the default queue.
    assert queue_of("celery.backend_cleanup") == "default"
    assert queue_of("no.such.task") == "default"


def test_every_task_of_the_project_routes_to_its_queue():
    tasks = project_tasks()
    unlisted = sorted(set(tasks) - set(EXPECTED_QUEUES))
    assert not unlisted, f"route these in CELERY_TASK_ROUTES and list them here: {unlisted}"
    assert sorted(tasks) == sorted(EXPECTED_QUEUES), "a routed task is gone"
    routed = {name: queue_of(name) for name in tasks}
    assert routed == EXPECTED_QUEUES
    assert set(routed.values()) == set(QUEUE_NAMES), "every queue has work"


def test_routes_are_in_settings_not_in_decorators():
    assert {name: route["queue"] for name, route in settings.CELERY_TASK_ROUTES.items()} == (
        EXPECTED_QUEUES
    )
    for name, task in project_tasks().items():
        assert getattr(task, "queue", None) is None, name
    for path in ROOT.glob("*/tasks.py"):
        assert "queue=" not in path.read_text(), path


def test_beat_entries_go_to_their_tasks_queue():
    assert app.conf.beat_scheduler == "collab.beat:LockedScheduler"
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        assert entry["task"] in EXPECTED_QUEUES, name
        assert queue_of(entry["task"], entry.get("options")) == EXPECTED_QUEUES[entry["task"]]


def test_the_worker_commands_take_every_queue():
    procfile = (ROOT / "Procfile.local").read_text()
    [worker] = [line for line in procfile.splitlines() if line.startswith("worker:")]
    assert "--beat" in worker.split()
    assert f"-Q {QUEUES}" in worker
    page = (ROOT / "docs" / "operations" / "worker.md").read_text()
    assert f"celery -A collab worker -Q {QUEUES}" in page
    for name in QUEUE_NAMES[1:]:
        assert f"celery -A collab worker -Q {name}" in page, name


# Visibility timeout and time limits -----------------------------------------------------------

# Every place a task is queued with a wait. A new one must be bounded and counted below.
COUNTDOWN = re.compile(r"\b(countdown|eta)\s*=|\.retry\(|retry_backoff_max")


def test_every_countdown_in_the_project_is_known():
    found = []
    for name in (*PROJECT_APPS, "collab"):
        for path in sorted((ROOT / name).rglob("*.py")):
            if "migrations" in path.parts or path.parent.name == "settings":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if COUNTDOWN.search(line) and not line.lstrip().startswith("#"):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    # notifications/delivery.py: the webhook retries, queued with a countdown only when it is
    # at most WEBHOOK_COUNTDOWN_MAX_SECONDS (later ones wait on their row for the sweeper),
    # through notifications/dispatch.py, which hands the countdown on to the broker.
    places = {place.split(":")[0] for place in found}
    assert places == {"notifications/delivery.py", "notifications/dispatch.py"}, found
    source = (ROOT / "notifications/delivery.py").read_text()
    assert "retry_in <= settings.WEBHOOK_COUNTDOWN_MAX_SECONDS" in source


_LIMITS_PROGRAM = """
import json, django
django.setup()
from django.conf import settings
from collab.celery import app
app.loader.import_default_modules()
from pathlib import Path
from django.apps import apps as django_apps
root = Path(settings.BASE_DIR)
apps = {c.name for c in django_apps.get_app_configs() if Path(c.path).parent == root} | {"collab"}
tasks = [t for n, t in app.tasks.items() if n.split(".")[0] in apps]
countdowns = [settings.WEBHOOK_COUNTDOWN_MAX_SECONDS]
for task in tasks:
    if getattr(task, "autoretry_for", ()):
        if getattr(task, "retry_backoff", False):
            countdowns.append(getattr(task, "retry_backoff_max", 600))
        else:
            countdowns.append(task.retry_kwargs.get("countdown", task.default_retry_delay))
print(json.dumps({
    "visibility": app.conf.broker_transport_options.get("visibility_timeout"),
    "countdown": max(countdowns),
    "limits": {t.name: [t.soft_time_limit, t.time_limit] for t in tasks},
    "git_timeout": settings.GIT_TIMEOUT_SECONDS,
    "acks_late": app.conf.task_acks_late,
    "reject_on_worker_lost": app.conf.task_reject_on_worker_lost,
}))
"""


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"GIT_TIMEOUT_SECONDS": "600", "WEBHOOK_COUNTDOWN_MAX_SECONDS": "3000"},
        {"CELERY_TASK_SOFT_TIME_LIMIT": "7200", "ANALYTICS_TASK_SOFT_TIME_LIMIT": "9000"},
    ],
    ids=["defaults", "long-git-and-countdowns", "long-limits"],
)
def test_the_visibility_timeout_exceeds_any_countdown_plus_any_run(overrides):
    """With Redis as broker a message is unacknowledged from when a worker takes it (it waits
    out its countdown there) until its task ends: Redis must not hand it to another worker
    meanwhile. Settings as a Redis deployment reads them, whatever this run's broker."""
    env = {
        **process_env_plain(),
        "REDIS_URL": "redis://127.0.0.1:6379/0",
        "PYTEST_XDIST_WORKER": "gw0",
        **overrides,
    }
    result = subprocess.run(
        [sys.executable, "-c", _LIMITS_PROGRAM],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["acks_late"] and found["reject_on_worker_lost"]
    limits = found["limits"]
    assert set(limits) == set(EXPECTED_QUEUES)
    for name, (soft, hard) in limits.items():
        assert soft and hard and soft < hard, name
    longest_run = max(hard for _, hard in limits.values())
    assert found["visibility"] > found["countdown"] + longest_run
    # A git task outlasts git's own timeouts: the lock wait and a fetch of history.
    git = found["git_timeout"]
    for name in (
        "gitintegration.tasks.repository_sync_task",
        "gitintegration.tasks.repositories_sync_all",
    ):
        assert limits[name][0] >= (git * 4 + 30) + git * 4 + 2 * git, name


def process_env_plain() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "REDIS_URL"}
    env["DJANGO_SETTINGS_MODULE"] = "collab.settings.test"
    return env


# The beat lock, in process ----------------------------------------------------------------------


def _scheduler(tmp_path, name: str) -> "beat.LockedScheduler":
    scheduler = beat.LockedScheduler(app=app, schedule_filename=str(tmp_path / name))
    sent = scheduler.sent = []
    scheduler.apply_async = lambda entry, **kwargs: sent.append(entry.name)
    return scheduler


@pytest.fixture
def schedulers(tmp_path):
    """Schedulers in this process (nothing sent: each records the names it would send)."""
    made = []

    def make(name: str) -> "beat.LockedScheduler":
        made.append(_scheduler(tmp_path, name))
        return made[-1]

    yield make
    for scheduler in made:
        if scheduler._store is not None:
            scheduler.close()
            scheduler._store = None


def _long_ago():
    return app.now() - timedelta(days=2)


def _make_due(scheduler, name: str) -> None:
    scheduler.schedule[name].last_run_at = _long_ago()
    scheduler._heap = None


def _run_ticks(scheduler, times: int = 20) -> None:
    for _ in range(times):
        scheduler.tick()


@pytest.fixture
def redis_lock():
    if not settings.REDIS_URL:
        pytest.skip("the beat lock needs Redis (REDIS_URL)")
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    client.delete(beat.LOCK_KEY, beat.LAST_RUN_KEY)
    yield client
    client.delete(beat.LOCK_KEY, beat.LAST_RUN_KEY)


def test_without_redis_beat_schedules_as_before(schedulers, monkeypatch):
    if settings.REDIS_URL:  # as on the embedded default, whose broker is the filesystem
        monkeypatch.setattr(beat.LockedScheduler, "redis_url", None)
    scheduler = schedulers("alone")
    _make_due(scheduler, "events-purge")
    _run_ticks(scheduler)
    assert scheduler.sent == ["events-purge"]
    assert scheduler._redis is None, "no lock without Redis"


def test_one_scheduler_sends_the_other_stands_by_then_takes_over(schedulers, redis_lock):
    first, second = schedulers("first"), schedulers("second")
    _run_ticks(first, 2)
    assert first.holding
    assert first.tick() <= first.lock_ttl / 3, "the holder renews well within its lease"
    for name in ("events-purge", "denied-tokens-purge"):
        _make_due(second, name)
    _make_due(first, "events-purge")
    _run_ticks(first)
    _run_ticks(second)
    assert first.sent == ["events-purge"]
    assert second.sent == [] and not second.holding
    assert second.tick() == pytest.approx(second.lock_ttl / 6)
    assert 0 < redis_lock.pttl(beat.LOCK_KEY) <= first.lock_ttl * 1000

    # The holder stops cleanly and lets go at once. Say it last ran denied-tokens-purge long
    # ago: the other goes on from that record, so it sends denied-tokens-purge, overdue, and
    # not events-purge, which the first beat just sent (due by its own record).
    first.close()
    first._store = None
    assert redis_lock.get(beat.LOCK_KEY) is None
    redis_lock.hset(beat.LAST_RUN_KEY, "denied-tokens-purge", _long_ago().isoformat())
    _run_ticks(second)
    assert second.holding
    assert second.sent == ["denied-tokens-purge"]
    assert redis_lock.get(beat.LOCK_KEY).decode() == second.token


def test_a_lost_lease_stops_the_sending(schedulers, redis_lock):
    scheduler = schedulers("holder")
    _run_ticks(scheduler, 2)
    assert scheduler.holding
    redis_lock.set(beat.LOCK_KEY, "someone-else", px=10_000)  # our lease lapsed, and went
    _make_due(scheduler, "events-purge")
    _run_ticks(scheduler)
    assert scheduler.sent == [] and not scheduler.holding
    scheduler.close()
    scheduler._store = None
    assert redis_lock.get(beat.LOCK_KEY) == b"someone-else", "never releases another's lock"


# Two real beat processes ----------------------------------------------------------------------

SWEEP = "notifications.tasks.deliveries_sweep"
TTL = 3.0


def _sweeps_sent(client) -> int:
    """Sweeps waiting in the webhooks queue (no worker takes them here): how many beat sent."""
    messages = client.lrange("webhooks", 0, -1)
    return sum(json.loads(raw)["headers"]["task"] == SWEEP for raw in messages)


def _pid_of(token: bytes) -> int:
    return int(token.decode().rsplit(":", 2)[1])


def _sends_in(output: str) -> int:
    return output.count(f"Sending due task webhook-deliveries-sweep ({SWEEP})")


@pytest.mark.slow(seconds=17)
@pytest.mark.live
def test_two_beat_processes_send_once_and_the_survivor_takes_over(tmp_path, redis_lock):
    """Two ``celery beat`` on one Redis: the sweep (every second here) is sent about once a
    second, not twice; SIGKILL the holder and the other sends within the lock's TTL."""
    # Beat reads no table: the environment's own database settings do.
    env = {
        **process_env_plain(),
        "REDIS_URL": settings.REDIS_URL,
        "PYTHONUNBUFFERED": "1",
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "WEBHOOK_SWEEP_SECONDS": "1",
        "CELERY_BEAT_LOCK_TTL_SECONDS": str(TTL),
    }
    redis_lock.delete("webhooks")
    beats = [Beat(env, tmp_path, "beat-a").start(), Beat(env, tmp_path, "beat-b").start()]
    try:
        started = wait_until(
            lambda: (
                _sweeps_sent(redis_lock) >= 1 and all("beat: Starting" in b.output() for b in beats)
            ),
            timeout=30,
            message="no beat sent anything",
        )
        assert started, [b.output() for b in beats]
        time.sleep(1)  # both ticking by now
        window = 6.0
        before = _sweeps_sent(redis_lock)
        time.sleep(window)
        sent = _sweeps_sent(redis_lock) - before
        assert window - 2 <= sent <= window + 2, f"{sent} sweeps in {window} s, interval 1 s"

        holder_pid = _pid_of(redis_lock.get(beat.LOCK_KEY))
        [holder] = [b for b in beats if b.pid == holder_pid]
        [standby] = [b for b in beats if b is not holder]
        assert _sends_in(standby.output()) == 0, "the standby sent nothing"
        assert "standing by" in standby.output()

        holder.kill()
        killed_at = time.monotonic()
        at_kill = _sweeps_sent(redis_lock)
        wait_until(
            lambda: _sweeps_sent(redis_lock) > at_kill,
            timeout=TTL + 10,
            message="the survivor never took over:\n" + standby.log.name,
        )
        took_over = time.monotonic() - killed_at
        # The holder's lease ran out (at most TTL after its last renewal) and the standby,
        # trying every TTL/6, took the lock and sent the overdue sweep at once.
        assert took_over <= TTL + TTL / 6 + 1.0, f"took over after {took_over:.1f} s"
        assert _pid_of(redis_lock.get(beat.LOCK_KEY)) == standby.pid
        assert "beat: holding the lock" in standby.output()

        window = 4.0
        before = _sweeps_sent(redis_lock)
        time.sleep(window)
        sent = _sweeps_sent(redis_lock) - before
        assert window - 2 <= sent <= window + 2, f"{sent} sweeps in {window} s after takeover"
    finally:
        for process in beats:
            process.stop()
            if process.process is not None:
                _group_kill(process.process)
        redis_lock.delete("webhooks")
