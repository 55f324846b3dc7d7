"""How Collab is served, measured: REST throughput by server, the event stream's capacity and
latency, and webhook delivery latency and rate, all on loopback, in one run.

    .venv/bin/python bench/serving.py [--seconds 8] [--rounds 2] [--subscribers 1000]

PostgreSQL from DATABASE_URL (default postgres://postgres@127.0.0.1:5432/collab_serving,
created, migrated and seeded with a small demo when missing), Redis from REDIS_URL (default
redis://127.0.0.1:6379/0). Production settings, rate limiter off.

1. REST: ``GET /v1/projects/:id/issues?status=open&per_page=50`` and ``GET /v1/users/me`` with
   wrk, in rounds taken in turn, on three servers of 2 processes each: gunicorn's threaded WSGI
   workers (``collab.wsgi``, 8 threads), what production runs (``collab.asgi``: uvicorn
   workers, REST on a pool of 8 threads), and Django's plain ASGI handler for everything
   (``collab.asgi:django_asgi``, each request on a thread of its own).
2. Stream: one ASGI process; ``--subscribers`` streams opened at once; then issues created one
   by one, and the time from each commit to its frame at every subscriber.
3. Webhooks: one worker process (solo pool) and a receiver on 127.0.0.1; the time from each
   commit to the delivery's arrival, then a burst of events and deliveries per second.

Prints a table, writes bench/results/serving.json, and ends with the line
``serving: asgi/wsgi=<r> django_asgi/wsgi=<r> stream_subscribers=<n> stream_p50_ms=<x>
webhook_p50_ms=<x>``. Stops everything it started.
"""

import argparse
import asyncio
import http.server
import json
import os
import platform
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.harness import Server, percentile, process_rss_mib, streams_open  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "serving.json"
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/collab_serving"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
SERVERS = ("wsgi", "asgi", "django_asgi")


def main() -> int:
    args = parse_args()
    env = configure_environment()
    sys.path.insert(0, str(ROOT))
    from bench.harness import database_ensure

    database_ensure(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    project, user = seed()
    key, plaintext = api_key(user)
    results: dict = {"machine": machine(), "started_at": datetime.now(UTC).isoformat()}
    try:
        results["rest"] = measure_rest(args, env, project, plaintext)
        results["stream"] = measure_stream(args, env, project, user, plaintext)
        results["webhooks"] = measure_webhooks(args, env, project, user)
    finally:
        key.delete()
    report(results)
    return 0


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8, help="Seconds per wrk round.")
    parser.add_argument("--rounds", type=int, default=2, help="Rounds per REST measurement.")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--events", type=int, default=30, help="Events timed per measurement.")
    return parser.parse_args()


def configure_environment() -> dict:
    os.environ.setdefault("DATABASE_URL", DEFAULT_DATABASE_URL)
    os.environ.setdefault("REDIS_URL", DEFAULT_REDIS_URL)
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "collab.settings.production",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            "SECURE_SSL_REDIRECT": "0",
            "ALLOWED_HOSTS": "127.0.0.1",
            "RATE_LIMIT_ENABLED": "0",
            "WEBHOOK_ALLOW_PRIVATE_NETWORKS": "1",
            "LOG_LEVEL": "WARNING",
        }
    )
    return dict(os.environ)


def seed():
    from django.core.management import call_command

    from accounts.models import User
    from projects.models import Project

    user = User.objects.filter(email="owner@demo.collab.localhost").first()
    if user is None:
        call_command("seed_demo", issues=2000, verbosity=0)
        user = User.objects.get(email="owner@demo.collab.localhost")
    project = Project.objects.filter(workspace__memberships__user=user).order_by("id").first()
    return project, user


def api_key(user):
    from accounts import services
    from collab.api.scopes import ALL_SCOPES

    return services.api_key_create(
        user=user, name="bench serving", scopes=list(ALL_SCOPES), expires_in="1d"
    )


def machine() -> dict:
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_before": os.getloadavg(),
    }


# Processes ---------------------------------------------------------------------------------


class Process:
    def __init__(self, command: list[str], env: dict, name: str):
        self.log = ROOT / "bench" / "results" / f"{name}.log"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as output:
            self.popen = subprocess.Popen(  # noqa: S603 - our own processes
                command, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT
            )

    def stop(self):
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def start_server(kind: str, env: dict, workers: int = 2) -> tuple[Server, int]:
    server = Server(env, workers=workers, kind=kind)
    server.start()
    server.wait_ready(timeout=40)
    return server, server.port


# REST --------------------------------------------------------------------------------------


def wrk(url: str, credential: str, seconds: float, connections: int) -> dict:
    output = subprocess.run(  # noqa: S603
        ["wrk", "-t2", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency"]  # noqa: S607
        + ["-H", f"Authorization: Bearer {credential}", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))

    def latency(percent: str) -> float:
        value, unit = re.search(rf"\s{percent}%\s+([\d.]+)(us|ms|s)", output).groups()
        return float(value) * {"us": 0.001, "ms": 1, "s": 1000}[unit]

    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {
        "requests_per_second": rps,
        "p50_ms": latency("50"),
        "p99_ms": latency("99"),
        "non_2xx": int(errors.group(1)) if errors else 0,
    }


def measure_rest(args, env, project, credential) -> dict:
    if not shutil.which("wrk"):
        raise SystemExit("wrk is needed: apt-get install -y wrk")
    paths = {
        "issue_list": f"/v1/projects/{project.pk}/issues?status=open&per_page=50",
        "users_me": "/v1/users/me",
    }
    servers = {kind: start_server(kind, env) for kind in SERVERS}
    rounds: dict = {}
    try:
        for _kind, (_process, port) in servers.items():  # warm every worker
            wrk(f"http://127.0.0.1:{port}{paths['issue_list']}", credential, 2, args.connections)
        for number in range(args.rounds):
            for name, path in paths.items():
                for kind, (_process, port) in servers.items():
                    result = wrk(
                        f"http://127.0.0.1:{port}{path}", credential, args.seconds, args.connections
                    )
                    rounds.setdefault(f"{name}/{kind}", []).append(result)
                    print(
                        f"  round {number + 1} {name:<11} {kind:<12}"
                        f" {result['requests_per_second']:8.1f} req/s"
                    )
    finally:
        for process, _port in servers.values():
            process.stop()
    return {
        key: max(values, key=lambda r: r["requests_per_second"]) | {"rounds": values}
        for key, values in rounds.items()
    }


# Stream ------------------------------------------------------------------------------------


def measure_stream(args, env, project, user, credential) -> dict:
    from events.models import Event
    from issues.services import issue_create

    process, port = start_server("asgi", env, workers=1)
    received: dict[int, list[float]] = {}
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        opened = time.perf_counter()
        future = asyncio.run_coroutine_threadsafe(
            streams_open(port, credential, args.subscribers, received), loop
        )
        streams, tasks = future.result(timeout=300)
        open_seconds = time.perf_counter() - opened
        latencies: list[float] = []
        for n in range(args.events):
            issue_create(project=project, actor=user, title=f"Stream bench {n}")
            committed = time.perf_counter()
            event_id = (
                Event.objects.filter(type="issue.created")
                .order_by("-id")
                .values_list("id", flat=True)[0]
            )
            deadline = time.monotonic() + 30
            while len(received.get(event_id, [])) < len(streams) and time.monotonic() < deadline:
                time.sleep(0.005)
            arrivals = received.get(event_id, [])
            latencies += [(arrival - committed) * 1000 for arrival in arrivals]
        rss_mib = process_rss_mib(process)
        for _reader, writer in streams:
            loop.call_soon_threadsafe(writer.close)
        for task in tasks:
            loop.call_soon_threadsafe(task.cancel)
    finally:
        process.stop()
        loop.call_soon_threadsafe(loop.stop)
    expected = args.events * len(streams)
    return {
        "subscribers": len(streams),
        "open_seconds": round(open_seconds, 2),
        "frames_expected": expected,
        "frames_received": len(latencies),
        "p50_ms": round(statistics.median(latencies), 1) if latencies else None,
        "p99_ms": round(percentile(latencies, 99), 1) if latencies else None,
        "server_rss_mib": rss_mib,
    }


# Webhooks ----------------------------------------------------------------------------------


def measure_webhooks(args, env, project, user) -> dict:
    from issues.services import issue_create
    from notifications import services as notification_services
    from notifications.models import Delivery, Webhook

    arrived: dict[str, float] = {}
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            with lock:
                arrived[self.headers["X-Collab-Delivery"]] = time.perf_counter()
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    webhook, _secret = notification_services.webhook_create(
        workspace_id=project.workspace_id,
        project=project,
        actor=user,
        url=f"http://127.0.0.1:{receiver.server_address[1]}/hook",
        events=["issue.created"],
        secret="bench-secret",
    )
    worker_env = {**env, "DATABASE_POOL": "1"}
    command = [sys.executable, "-m", "celery", "-A", "collab", "worker", "--pool", "solo"]
    command += ["--loglevel", "WARNING", "--without-mingle", "--without-gossip"]
    worker = Process(command, worker_env, "worker")
    try:
        time.sleep(4)  # the worker connects and starts consuming
        latencies = []
        for n in range(args.events):
            issue = issue_create(project=project, actor=user, title=f"Hook bench {n}")
            committed = time.perf_counter()
            delivery = None
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                delivery = (
                    delivery
                    or Delivery.objects.filter(
                        webhook=webhook, event__data__issue__id=issue.pk
                    ).first()
                )
                if delivery is not None and str(delivery.uuid) in arrived:
                    latencies.append((arrived[str(delivery.uuid)] - committed) * 1000)
                    break
                time.sleep(0.002)
        burst = 200
        before = len(arrived)
        started = time.perf_counter()
        for n in range(burst):
            issue_create(project=project, actor=user, title=f"Burst {n}")
        deadline = time.monotonic() + 120
        while len(arrived) < before + burst and time.monotonic() < deadline:
            time.sleep(0.01)
        burst_seconds = max(arrived.values()) - started
    finally:
        worker.stop()
        receiver.shutdown()
        Webhook.objects.filter(pk=webhook.pk).delete()
    return {
        "events": len(latencies),
        "p50_ms": round(statistics.median(latencies), 1) if latencies else None,
        "p99_ms": round(percentile(latencies, 99), 1) if latencies else None,
        "burst": burst,
        "burst_delivered": len(arrived) - before,
        "deliveries_per_second_per_worker": round((len(arrived) - before) / burst_seconds, 1),
    }


# Report ------------------------------------------------------------------------------------


def report(results: dict) -> None:
    rest = results["rest"]
    print()
    print("| endpoint | server | req/s | p50 ms | p99 ms | vs wsgi |")
    print("|---|---|---:|---:|---:|---:|")
    for name in ("issue_list", "users_me"):
        base = rest[f"{name}/wsgi"]["requests_per_second"]
        for kind in SERVERS:
            r = rest[f"{name}/{kind}"]
            print(
                f"| {name} | {kind} | {r['requests_per_second']:.1f} | {r['p50_ms']:.1f} | "
                f"{r['p99_ms']:.1f} | {r['requests_per_second'] / base:.2f} |"
            )
    stream, hooks = results["stream"], results["webhooks"]
    print()
    print(
        f"stream: {stream['subscribers']} subscribers on one process "
        f"({stream['server_rss_mib']} MiB), opened in {stream['open_seconds']} s; "
        f"{stream['frames_received']}/{stream['frames_expected']} frames; "
        f"commit to frame p50 {stream['p50_ms']} ms, p99 {stream['p99_ms']} ms"
    )
    print(
        f"webhooks: commit to arrival p50 {hooks['p50_ms']} ms, p99 {hooks['p99_ms']} ms; "
        f"{hooks['deliveries_per_second_per_worker']} deliveries/s on one worker process"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    asgi = (
        rest["issue_list/asgi"]["requests_per_second"]
        / rest["issue_list/wsgi"]["requests_per_second"]
    )
    plain = (
        rest["issue_list/django_asgi"]["requests_per_second"]
        / rest["issue_list/wsgi"]["requests_per_second"]
    )
    print(
        f"serving: asgi/wsgi={asgi:.2f} django_asgi/wsgi={plain:.2f} "
        f"stream_subscribers={stream['subscribers']} stream_p50_ms={stream['p50_ms']} "
        f"webhook_p50_ms={hooks['p50_ms']}"
    )


if __name__ == "__main__":
    sys.exit(main())
