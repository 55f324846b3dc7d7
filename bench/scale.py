#!/usr/bin/env python
"""One web process or two against the same database: the issue list and issue create.

    .venv/bin/python bench/scale.py            # about two minutes (plus seeding on first run)
    .venv/bin/python bench/scale.py --smoke    # seconds, small data (what CI runs)

It seeds (or reuses) the 10,000-issue project of the other benchmarks in the ``collab_bench``
database, then measures, turn after turn so machine noise weighs on both alike:

- **one**: one gunicorn server with one worker process (collab.asgi, production settings,
  the rate limiter off, ``--threads`` threads);
- **two**: two such servers on two ports, both on the same PostgreSQL and Redis, the load
  split evenly between them (half the connections each, both at once; the req/s summed).

Each figure is the best of ``--rounds`` turns. The last line is
``scale: list2/list1=<r> create2/create1=<r>``, and bench/results/scale.json keeps every turn.

Reading the figure: this machine has 2 cores, shared by the load generator, PostgreSQL, Redis
and the servers. A second web process here shows what contention for those cores costs or
gains, not what a second machine adds. The list is bound by Python's CPU time per request
(rendering 20 issues), so on one machine two processes gain what idle CPU there was; creates
are bound by commits and by the per-project number row each create locks until it commits, so
more processes mostly queue on that row. On separate machines the list scales with the web
nodes until PostgreSQL's CPU is the bound; creates into one project do not (into many, they do).
"""

import argparse
import json
import os
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import (  # noqa: E402
    FRESH_CONNECTION,
    ROOT,
    Server,
    Target,
    api_key_for_owner,
    api_key_revoke,
    database_ensure,
    environment_configure,
    load_generator,
    project_seed,
)

RESULTS = ROOT / "bench" / "results" / "scale.json"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--issues", type=int, default=10_000, help="Issues in the project.")
    parser.add_argument("--seconds", type=float, default=4, help="Seconds of load per turn.")
    parser.add_argument("--rounds", type=int, default=3, help="Turns per measurement.")
    parser.add_argument("--connections", type=int, default=4, help="Concurrent connections.")
    parser.add_argument("--threads", type=int, default=8, help="Threads per server process.")
    parser.add_argument("--requests", type=int, default=5000, help="Python load: most per turn.")
    parser.add_argument("--python-load", action="store_true", help="Python threads, not wrk.")
    parser.add_argument("--output", type=Path, default=RESULTS, help="Where the JSON goes.")
    parser.add_argument("--smoke", action="store_true", help="Small data, short turns.")
    args = parser.parse_args()
    if args.smoke:
        args.issues, args.seconds, args.rounds, args.requests = 200, 1, 1, 100
    return args


def drive_split(load_for, targets: list[Target], seconds: float) -> dict:
    """The same load on each target at once (one load generator each); req/s summed."""
    results: list[dict | None] = [None] * len(targets)

    def run(index: int) -> None:
        results[index] = load_for(len(targets)).drive(targets[index], seconds)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(targets))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done = [result for result in results if result is not None]
    return {
        "requests": sum(result["requests"] for result in done),
        "requests_per_second": round(sum(r["requests_per_second"] for r in done), 1),
        "p50_ms": max(result["p50_ms"] for result in done),
        "p99_ms": max(result["p99_ms"] for result in done),
    }


def main() -> int:
    args = parse_args()
    environment = environment_configure("bench.settings", RATE_LIMIT_ENABLED="0")
    database_ensure(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    project = project_seed(args.issues)
    key, plaintext = api_key_for_owner()
    headers = {"Authorization": f"Bearer {plaintext}", **FRESH_CONNECTION}
    servers = [Server(environment, workers=1, threads=args.threads) for _ in range(3)]
    measurements: dict[str, dict] = {}
    try:
        for server in servers:
            server.start()
        for server in servers:
            server.wait_ready()
        one, pair = servers[0], servers[1:]

        def load_for(parts: int):
            connections = max(1, args.connections // parts)
            return load_generator(
                connections=connections, requests=args.requests // parts, python=args.python_load
            )

        list_path = f"/v1/projects/{project['id']}/issues"
        bodies = [json.dumps({"title": f"Scale {n}", "labels": ["scale"]}) for n in range(7)]

        def targets(kind: str, group: list[Server]) -> list[Target]:
            if kind == "list":
                return [Target(s.base, [list_path], headers) for s in group]
            return [
                Target(s.base, [list_path], headers, method="POST", bodies=bodies) for s in group
            ]

        for kind in ("list", "create"):
            for server in servers:
                load_for(1).drive(targets(kind, [server])[0], 1, warm=True)
            for round_ in range(1, args.rounds + 1):
                for label, group in (("one", [one]), ("two", pair)):
                    result = drive_split(load_for, targets(kind, group), args.seconds)
                    name = f"{kind} {label}"
                    measurements.setdefault(name, {"rounds": []})["rounds"].append(result)
                    print(
                        f"  round {round_}/{args.rounds} {name:<12} "
                        f"{result['requests_per_second']:>8.1f} req/s",
                        flush=True,
                    )
    finally:
        for server in servers:
            server.stop()
        api_key_revoke(key)

    rows = []
    for name, measured in measurements.items():
        best = max(measured["rounds"], key=lambda r: r["requests_per_second"])
        rows.append({"name": name, **best, "rounds": measured["rounds"]})
    by_name = {row["name"]: row for row in rows}
    ratios = {
        "list2/list1": round(
            by_name["list two"]["requests_per_second"] / by_name["list one"]["requests_per_second"],
            2,
        ),
        "create2/create1": round(
            by_name["create two"]["requests_per_second"]
            / by_name["create one"]["requests_per_second"],
            2,
        ),
    }
    print(f"\n{'measurement':<14}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}")
    for row in rows:
        print(
            f"{row['name']:<14}{row['requests_per_second']:>10.1f}"
            f"{row['p50_ms']:>10.1f}{row['p99_ms']:>10.1f}"
        )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "project": project,
                "settings": {
                    "seconds": args.seconds,
                    "rounds": args.rounds,
                    "connections": args.connections,
                    "threads": args.threads,
                    "smoke": args.smoke,
                    "cores": os.cpu_count(),
                    "load_average_after": os.getloadavg(),
                },
                "requests": rows,
                "ratios": ratios,
            },
            indent=2,
        )
    )
    print(
        f"scale: list2/list1={ratios['list2/list1']:.2f} "
        f"create2/create1={ratios['create2/create1']:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
