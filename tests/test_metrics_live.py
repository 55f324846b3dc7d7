"""Metrics across processes, through the servers production runs: gunicorn with 2 worker
processes, and a prefork Celery worker serving its own on ``WORKER_METRICS_PORT``. Every request
and task counted once, whichever process served it, and still counted once that process is gone.
"""

import glob
import os
import secrets
import signal
import threading
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.liveserver import (
    Worker,
    answers,
    asgi_server,
    free_port,
    http_get,
    process_env,
    require_services,
    wait_until,
)

pytestmark = [
    pytest.mark.slow(seconds=25),
    pytest.mark.django_db(transaction=True),
    pytest.mark.live,
]


def samples(port: int) -> dict[tuple[str, frozenset], float]:
    status, body = http_get(port, "/metrics")
    assert status == 200, body
    found = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(found: dict, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


HEALTHZ = {
    "http_request_method": "GET",
    "http_route": "/healthz",
    "http_response_status_code": "200",
}


def _send(port: int, count: int, threads: int = 8) -> None:
    """``count`` requests over fresh connections, from several threads at once, so that both
    processes take some."""

    def run(share: int) -> None:
        for _ in range(share):
            assert http_get(port, "/healthz")[0] == 200

    shares = [count // threads + (1 if index < count % threads else 0) for index in range(threads)]
    workers = [threading.Thread(target=run, args=(share,)) for share in shares]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def _pids(directory: Path) -> set[str]:
    return {
        Path(name).stem.rpartition("_")[2]
        for name in glob.glob(str(directory / "*.db"))
        if not name.endswith("_archive.db")
    }


def test_requests_over_two_processes_are_counted_exactly_once(tmp_path):
    require_services()
    base = tmp_path / "prometheus"
    env = process_env(PROMETHEUS_MULTIPROC_DIR=str(base))
    with asgi_server(env, tmp_path, workers=2) as port:
        directory = base / f"web-{port}"
        before = value(samples(port), "http_server_request_duration_seconds_count", **HEALTHZ)
        _send(port, 300)
        after = samples(port)
        assert value(after, "http_server_request_duration_seconds_count", **HEALTHZ) == before + 300
        assert len(_pids(directory)) == 2, "both processes served some of the requests"
        assert value(after, "collab_build_info", version="1.0.0", commit=_commit(after)) == 1

        # A worker replaced: its totals stay, folded into the archives, and its files go.
        victim = sorted(_pids(directory))[0]
        os.kill(int(victim), signal.SIGTERM)
        wait_until(lambda: victim not in _pids(directory), 20, message="files not folded")
        _send(port, 50)
        final = samples(port)
        assert value(final, "http_server_request_duration_seconds_count", **HEALTHZ) == before + 350
        assert (directory / "histogram_archive.db").exists()


def _commit(found: dict) -> str:
    return next(dict(labels)["commit"] for name, labels in found if name == "collab_build_info")


def test_a_prefork_worker_counts_every_task_and_serves_its_metrics(tmp_path):
    require_services()
    from collab.celery import app

    metrics_port = free_port()
    env = process_env(
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "prometheus"),
        WORKER_METRICS_PORT=str(metrics_port),
    )
    worker = Worker(env, tmp_path, beat=False, pool="prefork", concurrency=2).start()
    try:
        wait_until(lambda: answers(metrics_port, "/metrics"), 40, message="no metrics server")
        name = "ratelimits.tasks.rate_limit_counters_purge"
        for _ in range(12):
            app.send_task(name, queue="default")
        labels = {"task": name, "queue": "default", "outcome": "success"}
        wait_until(
            lambda: (
                value(samples(metrics_port), "collab_task_duration_seconds_count", **labels) >= 12
            ),
            40,
            message=lambda: worker.output()[-3000:],
        )
        found = samples(metrics_port)
        assert value(found, "collab_task_duration_seconds_count", **labels) == 12
        assert {
            dict(labels)["queue"] for name, labels in found if name == "collab_queue_length"
        } == {"default", "webhooks", "git", "analytics", "email", "exports"}
        assert http_get(metrics_port, "/other")[0] == 404
    finally:
        worker.stop()
        worker.purge()


def test_a_production_server_answers_a_scrape_addressed_to_its_pods_ip(tmp_path):
    """Production's settings (HTTPS redirects, a strict ALLOWED_HOSTS) behind gunicorn, scraped
    over plain HTTP at a pod's IP, as Prometheus does on Kubernetes: the metrics answer, and
    every other path still refuses that Host."""
    require_services()
    env = process_env(
        DJANGO_SETTINGS_MODULE="collab.settings.production",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1",  # what the server's readiness wait sends
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "prometheus"),
    )
    pod = {"Host": "10.1.2.3:8000"}
    with asgi_server(env, tmp_path) as port:
        status, body = http_get(port, "/metrics", headers=pod)
        assert status == 200, body
        assert b"collab_build_info{" in body
        for path in ("/healthz", "/v1/projects", "/metricsx"):
            status, body = http_get(port, path, headers=pod)
            assert status == 400 and b'"BAD_REQUEST"' in body, (path, status, body)
        # Loopback is the reader here; another address behind a proxy is not.
        forwarded = {**pod, "X-Forwarded-For": "203.0.113.9"}
        assert http_get(port, "/metrics", headers=forwarded)[0] == 400
