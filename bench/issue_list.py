"""The issue list under load: the API against a bare Django view, on 1,000,000 and 10,000 issues.

Run it with one command (from the repository's root):

    .venv/bin/python bench/issue_list.py --issues 1000000

Everything stays on loopback. PostgreSQL comes from DATABASE_URL (default
postgres://postgres@127.0.0.1:5432/collab_bench; the database is created when missing and
migrated), Redis from REDIS_URL (default redis://127.0.0.1:6379/0). Two projects are seeded with
``seed_demo`` unless they hold their issues already: one of --issues and one of --small.

It starts gunicorn as production does (collab.asgi with uvicorn workers, production settings
plus the baseline's route from bench/settings.py, 2 workers of 8 threads, rate limiter off),
then drives each endpoint for --duration seconds in all, split into --rounds turns taken in
order (each list right after its baseline), with wrk (``apt-get install -y wrk``) or, without
wrk, a pool of Python threads that also stops after --requests. SQL queries per request are
counted once per endpoint through Django's test client, where the API's rows and total are also
checked against the baseline's.

Measured, side by side: ``GET /v1/projects/:id/issues?status=open&per_page=50`` pages 1 and 20
on both projects; the same list with a filter that matches every issue but keeps the kept
per-status counters from answering the total (so it pays an exact ``COUNT(*)``); and the bare
baseline (bench/views.py) on the same pages. Each figure is its best round's, and ratios are
of best rounds: on a machine shared with other work, and with gunicorn's two workers sometimes
leaving one of them all the connections for a while, the best round is the one that shows
what the server can do. Every round is kept in the JSON. Prints a table, then as its last line
``bench: list/bare 10k=<r> 1M=<r> list1M/list10k=<r>``, and writes
bench/results/issue_list.json. Stops the server it started and revokes its API key.
"""

import argparse
import json
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.harness import (  # noqa: E402
    FRESH_CONNECTION,
    ROOT,
    Server,
    api_key_for_owner,
    api_key_revoke,
    database_ensure,
    environment_configure,
    load_generator,
    project_seed,
    size_label,
)

RESULTS = ROOT / "bench" / "results" / "issue_list.json"
# Matches every issue, and, like any parameter besides status, sort, page and per_page, makes
# the list count its rows instead of reading the per-status counters. On created_at, so the
# count can use the same index-only scan as the baseline's.
EVERY_ISSUE = "created_after=2000-01-01T00:00:00Z"


def main() -> int:
    args = parse_args()
    environment = configure_environment()
    database_ensure(os.environ["DATABASE_URL"])

    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    projects = {size_label(n): project_seed(n) for n in (args.issues, args.small)}
    cases = build_cases(projects)
    # Other work on the machine skews every figure: say how busy it was.
    load_before = os.getloadavg()
    key, plaintext = api_key_for_owner()
    server = None
    try:
        count_queries(cases, plaintext)
        server = Server(environment, workers=args.workers, threads=args.threads)
        server.start()
        server.wait_ready()
        load = load_generator(
            connections=args.connections, requests=args.requests, python=args.python_load
        )
        # The measurements take turns, round after round, each list right after its baseline,
        # so whatever else the machine is doing weighs on all of them alike (see report()).
        seconds = args.duration / args.rounds
        for round_ in range(1, args.rounds + 1):
            for item in cases:
                url = f"{server.base}{item['path']}"
                headers = {**item["headers"](plaintext), **FRESH_CONNECTION}
                if round_ == 1:
                    load.warm(url, headers)
                result = load.run(url, headers, seconds)
                item.setdefault("rounds", []).append(result)
                print(
                    f"  round {round_}/{args.rounds} {item['name']:<24} "
                    f"{result['requests_per_second']:>8.1f} req/s"
                )
        for item in cases:
            item["load"] = best_round(item["rounds"])
    finally:
        if server is not None:
            server.stop()
        api_key_revoke(key)

    report(args, projects, cases, load.name, load_before)
    return 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--issues", type=int, default=1_000_000, help="Issues in the big project.")
    parser.add_argument("--small", type=int, default=10_000, help="Issues in the small project.")
    parser.add_argument(
        "--duration", type=float, default=12, help="Seconds of load per measurement."
    )
    parser.add_argument(
        "--rounds", type=int, default=5, help="Turns the measurement's seconds are split into."
    )
    parser.add_argument("--connections", type=int, default=4, help="Concurrent connections.")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes.")
    parser.add_argument("--threads", type=int, default=8, help="Threads per gunicorn worker.")
    parser.add_argument(
        "--requests",
        type=int,
        default=5000,
        help="Most requests per measurement with the Python load generator.",
    )
    parser.add_argument(
        "--python-load", action="store_true", help="Use the Python load generator even with wrk."
    )
    return parser.parse_args()


def configure_environment() -> dict:
    """Production settings plus the baseline's route, the rate limiter off."""
    return environment_configure("bench.settings", RATE_LIMIT_ENABLED="0")


def build_cases(projects: dict) -> list[dict]:
    def api(token):
        return {"Authorization": f"Bearer {token}"}

    def bare(_token):
        return {}

    cases = []
    for size, project in projects.items():
        base = f"/v1/projects/{project['id']}/issues?status=open&per_page=50"
        bare_base = f"/bench/bare/projects/{project['id']}/issues?status=open&per_page=50"
        for page in (1, 20):
            suffix = "" if page == 1 else f"&page={page}"
            cases.append(case(f"bare {size} p{page}", bare_base + suffix, bare, None))
            cases.append(case(f"list {size} p{page}", base + suffix, api, f"bare {size} p{page}"))
        cases.append(
            case(f"list {size} p1 COUNT(*)", f"{base}&{EVERY_ISSUE}", api, f"bare {size} p1")
        )
    return cases


def case(name: str, path: str, headers, baseline: str | None) -> dict:
    return {"name": name, "path": path, "headers": headers, "baseline": baseline}


def count_queries(cases: list[dict], token: str) -> None:
    """SQL queries per request, and a check that the API and the baseline agree."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_HOST="127.0.0.1")
    bodies = {}
    for item in cases:
        headers = item["headers"](token)
        client.get(item["path"], headers=headers)  # caches warm, as in a running server
        with CaptureQueriesContext(connection) as captured:
            response = client.get(item["path"], headers=headers)
        if response.status_code != 200:
            raise SystemExit(f"{item['name']}: {response.status_code} {response.content[:300]!r}")
        item["queries"] = len(captured.captured_queries)
        item["bytes"] = len(response.content)
        bodies[item["name"]] = response.json()
    for item in cases:
        if item["baseline"] is None:
            continue
        mine, bare = bodies[item["name"]], bodies[item["baseline"]]
        same_rows = [row["id"] for row in mine["data"]] == [row["id"] for row in bare["data"]]
        if not same_rows or mine["meta"]["total"] != bare["meta"]["total"]:
            raise SystemExit(f"{item['name']} and {item['baseline']} disagree.")


def best_round(rounds: list[dict]) -> dict:
    """The round of highest throughput, with the requests and throughput of every round."""
    best = dict(max(rounds, key=lambda result: result["requests_per_second"]))
    best["requests"] = sum(result["requests"] for result in rounds)
    best["rounds_requests_per_second"] = [result["requests_per_second"] for result in rounds]
    return best


def ratio(item: dict, baseline: dict) -> float:
    return round(item["load"]["requests_per_second"] / baseline["load"]["requests_per_second"], 2)


def report(args, projects: dict, cases: list[dict], load_name: str, load_before) -> None:
    by_name = {item["name"]: item for item in cases}
    rows = []
    for item in cases:
        load = item["load"]
        baseline = by_name.get(item["baseline"])
        to_baseline = ratio(item, baseline) if baseline else None
        rows.append(
            {
                "name": item["name"],
                "path": item["path"],
                "requests": load["requests"],
                "requests_per_second": load["requests_per_second"],
                "rounds_requests_per_second": load["rounds_requests_per_second"],
                "p50_ms": load["p50_ms"],
                "p99_ms": load["p99_ms"],
                "queries": item["queries"],
                "response_bytes": item["bytes"],
                "baseline": item["baseline"],
                "ratio_to_baseline": to_baseline,
            }
        )

    print()
    header = (
        f"{'measurement':<26} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'queries':>7} {'/bare':>6}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        shown = "" if row["ratio_to_baseline"] is None else f"{row['ratio_to_baseline']:.2f}"
        print(
            f"{row['name']:<26} {row['requests_per_second']:>8.1f} {row['p50_ms']:>8.2f} "
            f"{row['p99_ms']:>8.2f} {row['queries']:>7} {shown:>6}"
        )
    print()
    for project in projects.values():
        seeded = (
            f", seeded in {project['seed_seconds']} s"
            if project["seed_seconds"] is not None
            else ""
        )
        print(f"{project['name']}: id {project['id']}, {project['open']} open issues{seeded}")

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "ran_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "machine": {
                    "cpus": os.cpu_count(),
                    "processor": platform.processor() or platform.machine(),
                    "python": platform.python_version(),
                    "load_average_before": load_before,
                    "load_average_after": os.getloadavg(),
                },
                "load_generator": load_name,
                "settings": {
                    "duration_seconds": args.duration,
                    "rounds": args.rounds,
                    "connections": args.connections,
                    "gunicorn_workers": args.workers,
                    "gunicorn_threads": args.threads,
                },
                "projects": projects,
                "results": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"Wrote {RESULTS.relative_to(ROOT)}")
    big, small = projects
    ratios = {row["name"]: row["ratio_to_baseline"] for row in rows}
    # One line to compare runs by: the list against its baseline on both sizes, page 1, and
    # what the big project costs against the small one.
    scale = ratio(by_name[f"list {big} p1"], by_name[f"list {small} p1"])
    print(
        f"bench: list/bare {small}={ratios[f'list {small} p1']:.2f} "
        f"{big}={ratios[f'list {big} p1']:.2f} list{big}/list{small}={scale:.2f}"
    )


if __name__ == "__main__":
    sys.exit(main())
