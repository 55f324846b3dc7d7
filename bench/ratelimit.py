"""The rate limiter's cost per request: the same endpoint with and without it, in one run.

Run it with one command (from the repository's root), in well under a minute:

    .venv/bin/python bench/ratelimit.py

Everything stays on loopback. PostgreSQL comes from DATABASE_URL (default
postgres://postgres@127.0.0.1:5432/collab_bench; created when missing, then migrated) and
Redis from REDIS_URL (default redis://127.0.0.1:6379/0).

Three gunicorn servers run as production does (collab.asgi, production settings, 2 workers
x 8 threads), alike but for the limiter: off (``RATE_LIMIT_ENABLED=0``), on Redis (one Lua script
per request) and on the database counter (one PostgreSQL upsert per request). Each is driven on
``GET /v1/users/me`` with an API key for --duration seconds by wrk when installed
(``apt-get install -y wrk``), else by Python threads bounded by --requests, in --rounds rounds
taken in turn so drift hits all three alike; the medians are printed side by side. The limit is
set high enough that nothing is refused. Then the counter call alone is timed in this process.
Writes bench/results/ratelimit.json; stops its servers and revokes its key.
"""

import argparse
import json
import os
import secrets
import statistics
import sys
import time
from datetime import UTC, datetime

from harness import ROOT, Server, database_ensure, environment_configure, load_generator

RESULTS = ROOT / "bench" / "results" / "ratelimit.json"
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
    return environment_configure(
        "collab.settings.production",
        PYTHONWARNINGS="ignore:No directory at",  # static files are not collected
        # High enough that no request is refused: every one does the full work.
        RATE_LIMIT_STANDARD=str(10**9),
        RATE_LIMIT_KEY_PREFIX=f"bench:{secrets.token_hex(6)}:",
    )


def api_key_create():
    from accounts import services
    from accounts.models import User

    user = User.objects.filter(email=EMAIL).first()
    if user is None:
        user, _ = services.user_create(
            email=EMAIL, password=secrets.token_urlsafe(16), workspace_name="Rate limit bench"
        )
    return services.api_key_create(user=user, name="bench", scopes=["users:read"])


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
    load = load_generator(
        connections=args.connections, requests=args.requests, python=args.python_load
    )
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
                runs[name].append(load.run(url, headers, args.duration))
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
