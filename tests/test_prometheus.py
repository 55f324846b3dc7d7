"""A real Prometheus (Debian's ``prometheus``) scraping what production runs: gunicorn with 2
worker processes and a prefork Celery worker serving its metrics on ``WORKER_METRICS_PORT``.
A known number of requests and tasks are sent; Prometheus's own HTTP API then answers with
exactly those totals, a latency quantile, and a queue-length series for every queue."""

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

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
    pytest.mark.slow(seconds=20),
    pytest.mark.django_db(transaction=True),
    pytest.mark.live,
]
QUEUES = {"default", "webhooks", "git", "analytics", "email", "exports"}
REQUESTS = 40
TASKS = 6
TASK = "ratelimits.tasks.rate_limit_counters_purge"


@pytest.fixture
def prometheus(tmp_path):
    """Start Prometheus on 127.0.0.1 with a config of the test's own; ``start(targets)``."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("Prometheus is not installed (apt-get install prometheus)")
    started = []

    def start(targets: dict[str, int]) -> int:
        jobs = [
            {
                "job_name": job,
                "scrape_interval": "1s",
                "metrics_path": "/metrics",
                "static_configs": [{"targets": [f"127.0.0.1:{port}"]}],
            }
            for job, port in targets.items()
        ]
        config = tmp_path / "prometheus.yml"
        config.write_text(json.dumps({"global": {"scrape_interval": "1s"}, "scrape_configs": jobs}))
        port = free_port()
        log = (tmp_path / "prometheus.log").open("wb")
        process = subprocess.Popen(  # noqa: S603 - Debian's prometheus, our own config
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        started.append(process)
        wait_until(lambda: answers(port, "/-/ready"), 30, message="Prometheus did not start")
        return port

    yield start
    for process in started:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def query(port: int, promql: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=5) as answer:  # noqa: S310 - loopback
        body = json.load(answer)
    assert body["status"] == "success", body
    return body["data"]["result"]


def scalar(port: int, promql: str) -> float | None:
    result = query(port, promql)
    return float(result[0]["value"][1]) if result else None


def test_prometheus_sees_every_request_and_task_sent(tmp_path, prometheus):
    require_services()
    from collab.celery import app

    worker_port = free_port()
    env = process_env(
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"), WORKER_METRICS_PORT=str(worker_port)
    )
    worker = Worker(env, tmp_path, beat=False, pool="prefork", concurrency=2).start()
    try:
        with asgi_server(env, tmp_path, workers=2) as web_port:
            wait_until(
                lambda: answers(worker_port, "/metrics"), 40,
                message=lambda: worker.output()[-3000:],
            )  # fmt: skip
            server = prometheus({"collab-web": web_port, "collab-worker": worker_port})
            wait_until(
                lambda: scalar(server, 'count(up{job=~"collab-.*"} == 1)') == 2, 30,
                message="Prometheus never scraped both targets",
            )  # fmt: skip
            requests = (
                'sum(http_server_request_duration_seconds_count{job="collab-web",'
                'http_route="/healthz",http_response_status_code="200"})'
            )
            # The server's readiness was asked at /healthz as it started: counted already.
            before = scalar(server, requests) or 0.0
            for _ in range(REQUESTS):
                assert http_get(web_port, "/healthz")[0] == 200
            for _ in range(TASKS):
                app.send_task(TASK, queue="default")

            tasks = f'sum(collab_task_duration_seconds_count{{task="{TASK}",outcome="success"}})'
            wait_until(
                lambda: (
                    scalar(server, requests) == before + REQUESTS and scalar(server, tasks) == TASKS
                ),
                60,
                message="Prometheus never saw every request and task",
            )
            time.sleep(1.5)  # another scrape or two: the totals stay exact

            assert scalar(server, requests) == before + REQUESTS
            assert scalar(server, tasks) == TASKS
            p99 = scalar(
                server,
                "histogram_quantile(0.99, sum by (le) "
                '(http_server_request_duration_seconds_bucket{http_route="/healthz"}))',
            )
            assert p99 is not None and 0 < p99 < 10
            queues = query(server, "collab_queue_length")
            assert {series["metric"]["queue"] for series in queues} >= QUEUES
            build = query(server, "collab_build_info")
            assert {series["metric"]["version"] for series in build} == {"1.0.0"}
    finally:
        worker.stop()
        worker.purge()
