"""Analytics under size: metrics, dashboard data and reports on projects of very different sizes.

    .venv/bin/python manage.py seed_demo --project-name Perf10k --issues 10000
    .venv/bin/python manage.py seed_demo --project-name Perf1M --issues 1000000
    .venv/bin/python bench/analytics.py --project Perf10k --project Perf1M

DATABASE_URL / REDIS_URL as for the service (loopback only). Requests go through Django's test
client in this process (production settings, rate limiter off), so the figures are the
service's own time per request without the network or gunicorn. For each project it measures:

1. with no rollups stored (everything counted live from the sources, as before any backfill);
2. ``analytics_backfill`` of the project (time taken);
3. with the rollups (the normal state: only today counted live; large projects' breakdowns from
   the stored snapshot);
4. the streamed CSV report of every issue: time, bytes, and the growth of the process's peak
   memory while streaming.

Each endpoint's figure is the median (and 95th percentile) of --rounds requests after two
warm-up requests, with the SQL queries of one request. Writes bench/results/analytics.json.
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "collab.settings.production")
os.environ.setdefault("SECRET_KEY", "bench-only-" + "x" * 50)
os.environ.setdefault("ALLOWED_HOSTS", "testserver")
os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
os.environ["RATE_LIMIT_ENABLED"] = "0"

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from accounts import keys  # noqa: E402
from accounts.models import ApiKey, Membership, Role  # noqa: E402
from analytics.models import BreakdownSnapshot, ProjectDay, RollupState  # noqa: E402
from collab.api.scopes import ALL_SCOPES  # noqa: E402
from issues.models import IssueStatusCount  # noqa: E402
from projects.models import Project  # noqa: E402

ENDPOINTS = (
    "metrics?period=30d",
    "metrics?period=1y",
    "metrics?period=all",
    "dashboard?period=30d",
    "dashboard?period=1y",
)


def _client(project: Project) -> tuple[Client, ApiKey]:
    owner = (
        Membership.objects.filter(workspace_id=project.workspace_id, role=Role.OWNER)
        .select_related("user")
        .first()
        .user
    )
    plaintext = keys.generate_key()
    key = ApiKey.objects.create(
        user=owner,
        name="analytics bench",
        prefix=keys.display_prefix(plaintext),
        key_hash=keys.hash_key(plaintext),
        scopes=list(ALL_SCOPES),
    )
    return Client(HTTP_AUTHORIZATION=f"Bearer {plaintext}", secure=True), key


def _measure(client: Client, url: str, rounds: int) -> dict:
    for _ in range(2):
        response = client.get(url)
        assert response.status_code == 200, (url, response.content[:300])
    with CaptureQueriesContext(connection) as captured:
        client.get(url)
    # Read now: the next request empties the connection's log the slice reads from.
    queries = len(captured)
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200
    times.sort()
    return {
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(times[min(len(times) - 1, int(len(times) * 0.95))], 1),
        "queries": queries,
        "rounds": rounds,
    }


def _report(client: Client, project: Project) -> dict:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    response = client.get(f"/v1/projects/{project.pk}/reports/issues?format=csv")
    size = rows = 0
    for piece in response.streaming_content:
        size += len(piece)
        rows += piece.count(b"\n")
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "seconds": round(elapsed, 1),
        "megabytes": round(size / 1e6, 1),
        "lines": rows,
        "peak_rss_growth_mb": round((after - before) / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--project", action="append", required=True, help="A project's name.")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--live-rounds", type=int, default=5)
    parser.add_argument("--no-report", action="store_true")
    args = parser.parse_args()
    results = {}
    for name in args.project:
        project = Project.objects.filter(name=name).order_by("pk").first()
        if project is None:
            parser.error(f"No project named {name!r}: seed it first (see the docstring).")
        issues = sum(
            IssueStatusCount.objects.filter(project=project).values_list("count", flat=True)
        )
        client, key = _client(project)
        try:
            result = {"issues": issues}
            RollupState.objects.filter(project=project).delete()
            ProjectDay.objects.filter(project=project).delete()
            BreakdownSnapshot.objects.filter(project=project).delete()
            result["live"] = {
                endpoint: _measure(
                    client, f"/v1/projects/{project.pk}/{endpoint}", args.live_rounds
                )
                for endpoint in ENDPOINTS
            }
            started = time.perf_counter()
            call_command("analytics_backfill", "--project", str(project.pk), verbosity=0)
            result["backfill_seconds"] = round(time.perf_counter() - started, 1)
            result["rollup_rows"] = ProjectDay.objects.filter(project=project).count()
            result["rollups"] = {
                endpoint: _measure(client, f"/v1/projects/{project.pk}/{endpoint}", args.rounds)
                for endpoint in ENDPOINTS
            }
            if not args.no_report:
                result["csv_report"] = _report(client, project)
        finally:
            key.delete()
        results[name] = result
        print(
            f"== {name}: {issues} issues, backfill {result['backfill_seconds']} s, "
            f"{result['rollup_rows']} rollup rows"
        )
        print(f"{'endpoint':24} {'live p50':>10} {'rollups p50':>12} {'p95':>8} {'SQL':>4}")
        for endpoint in ENDPOINTS:
            live, rolled = result["live"][endpoint], result["rollups"][endpoint]
            print(
                f"{endpoint:24} {live['p50_ms']:>8} ms {rolled['p50_ms']:>9} ms "
                f"{rolled['p95_ms']:>5} ms {rolled['queries']:>4}"
            )
        if "csv_report" in result:
            print(f"csv report: {result['csv_report']}")
    out = ROOT / "bench" / "results" / "analytics.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
