"""The rate limiter's cost per request: the same endpoint with and without it, in one run.

Run it with one command (from the repository's root), in well under a minute:

    .venv/bin/python bench/ratelimit.py

Everything stays on loopback. PostgreSQL comes from DATABASE_URL (default
postgres://postgres@127.0.0.1:5432/collab_bench; created when missing, then migrated) and
Redis from REDIS_URL (default redis://127.0.0.1:6379/0).

Three gunicorn servers run as production does (production settings, 2 workers x 8 threads,
gthread), alike but for the limiter: off (``RATE_LIMIT_ENABLED=0``), on Redis (one Lua script
per request) and on the database counter (one PostgreSQL upsert per request). Each is driven on
``GET /v1/users/me`` with an API key for --duration seconds by wrk when installed
(``apt-get install -y wrk``), else by Python threads bounded by --requests, in --rounds rounds
taken in turn so drift hits all three alike; the medians are printed side by side. The limit is
set high enough that nothing is refused. Then the counter call alone is timed in this process.
Writes bench/results/ratelimit.json; stops its servers and revokes its key.
"""

import argparse
import http.client
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "ratelimit.json"
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/collab_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
PATH = "/v1/users/me"
EMAIL = "ratelimit-bench@example.com"
CONFIGS = {
    "limiter off": {"RATE_LIMIT_ENABLED": "0"},
    "Redis": {"RATE_LIMIT_ENABLED": "1", "RATE_LIMIT_BACKEND": "redis"},
    "database": {"RATE_LIMIT_ENABLED": "1", "RATE_LIMIT_BACKEND": "database"},
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=4, help="Seconds per measurement.")
    parser.add_argument("--rounds", type=int, default=2, help="Measurements per server.")
    parser.add_argument("--connections", type=int, default=8, help="Concurrent connections.")
    parser.add_argument("--requests", type=int, default=8000, help="Python load: most requests.")
    parser.add_argument("--python-load", action="store_true", help="Python threads even with wrk.")
    parser.add_argument("--calls", type=int, default=2000, help="Counter calls timed in-process.")
    return parser.parse_args()


def configure_environment() -> dict:
    os.environ.setdefault("DATABASE_URL", DEFAULT_DATABASE_URL)
    os.environ.setdefault("REDIS_URL", DEFAULT_REDIS_URL)
    for name in ("DATABASE_URL", "REDIS_URL"):
        host = urlparse(os.environ[name]).hostname or "localhost"
        if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
            raise SystemExit(f"{name} must point at loopback; got {host}.")
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "collab.settings.production",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            "DEBUG": "0",
            "SECURE_SSL_REDIRECT": "0",
            "ALLOWED_HOSTS": "127.0.0.1",
            "LOG_LEVEL": "WARNING",
            "PYTHONWARNINGS": "ignore:No directory at",  # static files are not collected
            # High enough that no request is refused: every one does the full work.
            "RATE_LIMIT_STANDARD": str(10**9),
            "RATE_LIMIT_KEY_PREFIX": f"bench:{secrets.token_hex(6)}:",
        }
    )
    return dict(os.environ)


def database_ensure(url: str) -> None:
    import psycopg

    name = urlparse(url).path.lstrip("/")
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if exists.fetchone() is None:
            connection.execute(f'CREATE DATABASE "{name}"')


def api_key_create():
    from accounts import services
    from accounts.models import User

    user = User.objects.filter(email=EMAIL).first()
    if user is None:
        user, _ = services.user_create(
            email=EMAIL, password=secrets.token_urlsafe(16), workspace_name="Rate limit bench"
        )
    return services.api_key_create(user=user, name="bench", scopes=["users:read"])


class Server:
    """gunicorn on a free loopback port, as production runs it."""

    def __init__(self, environment: dict):
        self.environment = environment
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        command = [str(Path(sys.executable).parent / "gunicorn"), "collab.wsgi"]
        command += ["--chdir", str(ROOT), "--bind", f"127.0.0.1:{self.port}"]
        command += ["--workers", "2", "--worker-class", "gthread", "--threads", "8"]
        command += ["--log-level", "warning"]
        self.process = subprocess.Popen(command, env=self.environment, start_new_session=True)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"gunicorn exited with {self.process.returncode}.")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                connection.request("GET", "/readyz")
                if connection.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise SystemExit("gunicorn did not become ready in 30 s.")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Wrk:
    name = "wrk"
    UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}

    def __init__(self, args):
        self.duration, self.connections = args.duration, args.connections

    def run(self, url: str, headers: dict) -> dict:
        header_args = [arg for name, value in headers.items() for arg in ("-H", f"{name}: {value}")]
        output = self._wrk(url, header_args, self.duration)
        if re.search(r"Non-2xx or 3xx responses: (\d+)", output) or "Socket errors" in output:
            raise SystemExit(f"wrk saw failures on {url}:\n{output}")
        latency = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", output, re.MULTILINE))
        return {
            "requests": int(re.search(r"(\d+) requests in", output).group(1)),
            "requests_per_second": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),
            "p50_ms": self._ms(latency["50"]),
            "p99_ms": self._ms(latency["99"]),
        }

    def warm(self, url: str, headers: dict) -> None:
        header_args = [arg for name, value in headers.items() for arg in ("-H", f"{name}: {value}")]
        self._wrk(url, header_args, 1)

    def _wrk(self, url: str, header_args: list[str], seconds: int) -> str:
        command = ["wrk", "--threads", "1", "--connections", str(self.connections)]
        command += ["--duration", f"{seconds}s", "--timeout", "10s", "--latency", *header_args]
        return subprocess.run(
            [*command, url], capture_output=True, text=True, check=True, timeout=seconds + 30
        ).stdout

    def _ms(self, text: str) -> float:
        number, unit = re.fullmatch(r"([\d.]+)(\w+)", text).groups()
        return round(float(number) * self.UNITS[unit], 3)


class ThreadLoad:
    """``connections`` threads on keep-alive connections, at most ``requests`` requests in all,
    for at most ``duration`` seconds."""

    name = "python threads"

    def __init__(self, args):
        self.duration, self.connections, self.requests = (
            args.duration,
            args.connections,
            args.requests,
        )

    def warm(self, url: str, headers: dict) -> None:
        self._drive(url, headers, seconds=1, budget=500)

    def run(self, url: str, headers: dict) -> dict:
        latencies, elapsed = self._drive(url, headers, self.duration, self.requests)
        return {
            "requests": len(latencies),
            "requests_per_second": round(len(latencies) / elapsed, 1),
            "p50_ms": round(statistics.median(latencies) * 1000, 3),
            "p99_ms": round(latencies[max(0, int(len(latencies) * 0.99) - 1)] * 1000, 3),
        }

    def _drive(self, url: str, headers: dict, seconds: float, budget: int):
        parsed = urlparse(url)
        remaining, lock, latencies = [budget], threading.Lock(), []
        deadline = time.monotonic() + seconds

        def worker():
            connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=10)
            mine = []
            while time.monotonic() < deadline:
                with lock:
                    if remaining[0] <= 0:
                        break
                    remaining[0] -= 1
                started = time.perf_counter()
                connection.request("GET", parsed.path, headers=headers)
                response = connection.getresponse()
                response.read()
                if response.status != 200:
                    raise SystemExit(f"{url} answered {response.status}")
                mine.append(time.perf_counter() - started)
            connection.close()
            with lock:
                latencies.extend(mine)

        threads = [threading.Thread(target=worker) for _ in range(self.connections)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return sorted(latencies), time.perf_counter() - started


def time_counter_calls(calls: int) -> dict[str, float]:
    """Microseconds per counter hit, in this process, on each store (the limiter's own work)."""
    from django.test import override_settings

    from collab.api import counters

    timings = {}
    for name, backend in (("Redis", "redis"), ("database", "database")):
        with override_settings(RATE_LIMIT_BACKEND=backend):
            key = f"bench:{secrets.token_hex(4)}"
            counters.counter_hit(key, limit=10**9, window=3600)
            started = time.perf_counter()
            for _ in range(calls):
                if counters.counter_hit(key, limit=10**9, window=3600) is None:
                    raise SystemExit(f"the {name} store did not answer")
            timings[name] = round((time.perf_counter() - started) / calls * 1e6, 1)
            counters.counter_clear([key])
    return timings


def main() -> int:
    args = parse_args()
    environment = configure_environment()
    database_ensure(os.environ["DATABASE_URL"])
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from accounts import services

    started = time.monotonic()
    call_command("migrate", verbosity=0)
    api_key, plaintext = api_key_create()
    load = Wrk(args) if shutil.which("wrk") and not args.python_load else ThreadLoad(args)
    headers = {"Authorization": f"Bearer {plaintext}"}
    servers = {name: Server({**environment, **extra}) for name, extra in CONFIGS.items()}
    runs: dict[str, list[dict]] = {name: [] for name in CONFIGS}
    try:
        for server in servers.values():
            server.start()
        for server in servers.values():
            server.wait_ready()
        for server in servers.values():
            load.warm(f"http://127.0.0.1:{server.port}{PATH}", headers)
        for round_number in range(args.rounds):
            order = list(CONFIGS) if round_number % 2 == 0 else list(reversed(CONFIGS))
            for name in order:
                url = f"http://127.0.0.1:{servers[name].port}{PATH}"
                runs[name].append(load.run(url, headers))
    finally:
        for server in servers.values():
            server.stop()
        services.api_key_revoke(api_key=api_key)
    per_call = time_counter_calls(args.calls)

    summary = {
        name: {
            metric: statistics.median(run[metric] for run in measured)
            for metric in ("requests_per_second", "p50_ms", "p99_ms")
        }
        | {"requests": sum(run["requests"] for run in measured)}
        for name, measured in runs.items()
    }
    report(args, load.name, summary, per_call, time.monotonic() - started)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "at": datetime.now(UTC).isoformat(),
                "endpoint": f"GET {PATH}",
                "load": load.name,
                "connections": args.connections,
                "duration_s": args.duration,
                "rounds": args.rounds,
                "cpus": os.cpu_count(),
                "summary": summary,
                "runs": runs,
                "counter_call_us": per_call,
            },
            indent=2,
        )
    )
    return 0


def report(args, load_name: str, summary: dict, per_call: dict, elapsed: float) -> None:
    base = summary["limiter off"]
    print(
        f"\nGET {PATH} with an API key; gunicorn 2 workers x 8 threads; {load_name}, "
        f"{args.connections} connections, {args.rounds} x {args.duration} s per server; "
        f"{os.cpu_count()} CPUs; medians.\n"
    )
    print(f"{'limiter':<12} {'req/s':>9} {'vs off':>7} {'p50 ms':>8} {'p99 ms':>8} {'requests':>9}")
    for name, figures in summary.items():
        ratio = figures["requests_per_second"] / base["requests_per_second"]
        print(
            f"{name:<12} {figures['requests_per_second']:>9.1f} {ratio:>7.2f} "
            f"{figures['p50_ms']:>8.2f} {figures['p99_ms']:>8.2f} {figures['requests']:>9}"
        )
    print("\nOne counter hit alone, in-process, sequential (µs per call):")
    for name, microseconds in per_call.items():
        print(f"  {name:<10} {microseconds:>8.1f}")
    print(f"\nTook {elapsed:.0f} s. Results in {RESULTS.relative_to(ROOT)}.")


if __name__ == "__main__":
    sys.exit(main())
