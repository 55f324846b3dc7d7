"""The benchmark suite: every figure of bench/README.md's table, in one run.

    bench/run                 # what bench/README.md shows: 10,000 and 1,000,000 issues
    bench/run --smoke         # seconds, on small data (what CI runs)

Everything stays on loopback. PostgreSQL from DATABASE_URL (default
postgres://postgres@127.0.0.1:5432/collab_bench: created when missing, migrated), Redis from
REDIS_URL (default redis://127.0.0.1:6379/0). The projects "Bench 10000" and "Bench 1000000" of
the workspace "Bench" are seeded with ``seed_demo`` unless they hold their issues already (the
first run seeds for about five minutes; later runs reuse them), and their analytics rollups
brought up to yesterday with ``analytics_backfill``, as the rollup job keeps them.

It starts what production runs (docker-compose.yml): gunicorn on ``collab.asgi`` with uvicorn
workers (2 processes, the REST endpoints on 8 threads each) and a Celery worker (one process),
with production settings plus the bare baseline's route (bench/settings.py). The rate limiter
is off on that server, as the baseline has none; a second, identical server with it on gives
its cost. Load comes from wrk (``apt-get install -y wrk``; bench/run installs it when it can),
or with --python-load from Python threads. Each measurement is split into --rounds turns taken
in order (each API figure right after its baseline's) so drift on the machine weighs on all
alike, and the best turn is kept; every turn is in the JSON.

Measured, each with requests/s, p50 and p99 latency and SQL queries per request (counted once
per endpoint in this process, through Django's test client):

- the issue list (``status=open&per_page=50``, pages 1 and 20) on both sizes, and the bare
  Django view (bench/views.py) on the same pages: same filter, exact count, rows and labels;
- a deep page of the large project's list, page 1,000 (the last full page on less data), by
  number (``OFFSET``) and by the cursor page 999 gives (keyset): the same rows;
- ``GET /v1/issues/:id``, ``POST /v1/projects/:id/issues`` and ``PATCH /v1/issues/:id`` (the
  writes go to a project of their own, "Bench writes", in a workspace of its own, so the
  measured sizes and workspaces stay put), the
  writes against bare views doing their essential writes (bench/views.py); creates from 8
  clients at once into one project and into 8; ``POST .../issues/bulk`` with 100 items;
- every documented filter of the issue list (``FILTERS``), alone and with ``status=open``,
  on both sizes, and ``GET /v1/search`` by query shape (SEARCH_SHAPES) on both sizes, over
  comments, and across a workspace of SEARCH_WORKSPACE_PROJECTS projects (``workspace_id``:
  the large project's, and one whose largest project is of the small size);
- ``GET /v1/projects/:id/metrics?period=30d`` and ``.../dashboard?period=30d`` on both sizes;
- webhook delivery to ten receivers on 127.0.0.1 and a dead one (it takes connections and
  never answers): an issue created over HTTP to its signed deliveries (p50, p99), a burst for
  deliveries per second of the one sender process (a threads pool, as docker-compose.yml runs
  it), and write to delivery with writes at a steady --webhook-rate;
- the event stream on a server of one process: the time --subscribers streams take to open,
  the time from a write to its frame at every one of them (p50, p99), then --capacity streams
  held at once: a write's frame at each, and the server's memory per stream;
- the rate limiter: ``GET /v1/users/me`` and the issue list with it off and on (Redis).

Every request figure is also given as a ratio to the bare baseline on the 10,000-issue project,
page 1. Prints a table, writes bench/results/run.json (or --output), and ends with the line
``bench: list/bare=<r> metrics/bare=<r> list1M/list10k=<r> metrics1M/metrics10k=<r>
create/bare=<r> create/bare_create=<r> patch/bare_patch=<r> bulk_create/s=<n> webhooks/s=<n>
stream_p99_ms=<n> filters1M/filters10k=<r> (<filter>) search1M=<n> search/bare=<r>
search1M/search10k=<r> (<shape>) wal_with/without_rank_index=<r> metrics_on/off=<r>
export_issues/s=<n> import_issues/s=<n>``: the list's and the
metrics' (``period=30d``, small project) throughput against the baseline's, what the list and
the metrics cost on the big project against the small one (time per request, 1.00 = the
same), creates against the list's
baseline, creates and PATCHes against their own bare baselines (bench/views.py), issues created
per second through bulk requests of 100, webhook deliveries per second of one worker process,
the stream's write-to-frame p99, the worst of the filters' costs on the big project against
the small one (and which filter it is), ``/v1/search`` requests per second on the big one,
the list with the metrics on against off, and the issues of the bench's workspace exported and
imported per second (bench/transfer.py).
Stops every process it started and revokes its API key.
"""

import argparse
import asyncio
import gc
import http.client
import http.server
import json
import os
import platform
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import (  # noqa: E402
    FRESH_CONNECTION,
    OWNER,
    WORKSPACE,
    Server,
    Target,
    api_key_for_owner,
    api_key_revoke,
    database_ensure,
    environment_configure,
    load_generator,
    percentile,
    process_rss_mib,
    project_seed,
    size_label,
    stop_on_terminate,
    streams_open,
)
from bench.search import measure_rank_index  # noqa: E402
from bench.transfer import measure_transfer  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "run.json"
BASELINE = "bare small p1"
DEEP_PAGE = 1000  # the deep page measured, by number and by cursor
BULK_ITEMS = 100
# The comment threads measured side by side: a page of a long one costs what a short one does.
THREAD_LENGTHS = (10, 10_000)
# Each documented filter of the issue lists, measured alone and with status=open on both sizes
# (the seeded data spreads every value over the year: each matches a fixed share of issues).
FILTERS = {
    "type": "type=bug",
    "priority": "priority=critical",
    "assignee": "assignee=me",
    "labels": "labels=backend",
    "q": "q=emoji",
    "created_after": f"created_after={(datetime.now(UTC) - timedelta(days=30)):%Y-%m-%d}",
    "updated_after": f"updated_after={(datetime.now(UTC) - timedelta(days=30)):%Y-%m-%d}",
}
SEARCH_QUERY = "emoji"
# ``/v1/search`` by query shape, on both sizes (the seeded words: issues.seeding). The common
# word is SEARCH_QUERY; search/bare is it on the large project against the bare list.
SEARCH_SHAPES = {
    "rare": "zeppelin",  # 1 issue in 2,000 (issues.seeding.RARE_EVERY)
    "common": SEARCH_QUERY,  # about 5%
    "very common": "change",  # about 33%
    "two words": "emoji safari",  # both: about 0.6%
    "prefix": "bill*",  # billing: about 17%
    "phrase": '"dark mode"',  # about 5%
}
# /v1/search across a workspace (``workspace_id``, no project): the bench's workspace, whose
# projects include the large one, and "Bench small", whose largest is of the small size, each
# topped up to this many projects.
SEARCH_WORKSPACE_PROJECTS = 20
SMALL_WORKSPACE = "Bench small"
# The writes' projects (writes_project): apart from the workspaces searched.
WRITES_WORKSPACE = "Bench writes"
# Every search measured on both sizes: the shapes, and across a workspace.
SEARCH_CASES = [*SEARCH_SHAPES, "workspace"]
HEALTHY_RECEIVERS = 10
WEBHOOK_SENDERS = 32  # the webhook worker's threads (docker-compose.yml)


def main() -> int:
    args = parse_args()
    stop_on_terminate()
    environment = environment_configure(
        "bench.settings",
        RATE_LIMIT_ENABLED="0",
        WEBHOOK_ALLOW_PRIVATE_NETWORKS="1",
        DATABASE_POOL="1",
    )
    database_ensure(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.management import call_command

    started = time.monotonic()
    load_before = os.getloadavg()
    call_command("migrate", verbosity=0)
    sizes = {"small": args.small, "large": args.large}
    projects = {name: project_seed(issues) for name, issues in sizes.items()}
    for project in projects.values():
        project["rollup_seconds"] = rollups_bring_up(project["id"])
    writes = writes_project()
    search_workspaces = search_workspaces_ensure(args.small)
    # Before the servers start: the machine is the export's and the import's alone.
    transfer = measure_transfer(workspace_id=bench_workspace_id())
    rank_index = measure_rank_index(project_id=writes["id"], creates=20 if args.smoke else 1000)
    database_settle()
    key, token = api_key_for_owner()
    projects["large"]["deep"] = deep_paging(projects["large"], token)
    load = load_generator(
        connections=args.connections, requests=args.requests, python=args.python_load
    )
    cases = cases_build(projects, writes, search_workspaces)
    processes: list = []
    results: dict = {"transfer": transfer, "rank_index": rank_index}
    try:
        queries_count(cases, token)
        # Two worker processes each, as production runs them; a smoke run's load is too small
        # to need the second, whose start costs more than its requests.
        web = 1 if args.smoke else 2
        server = Server(environment, workers=web, threads=8)
        limited = Server(
            {
                **environment,
                "RATE_LIMIT_ENABLED": "1",
                "RATE_LIMIT_BACKEND": "redis",
                "RATE_LIMIT_STANDARD": str(10**9),
                "RATE_LIMIT_KEY_PREFIX": f"bench:{secrets.token_hex(6)}:",
            },
            workers=web,
            threads=8,
        )
        # The issue list with the metrics off: what the request metrics cost (metrics_on/off).
        unmetered = Server({**environment, "METRICS_ENABLED": "0"}, workers=web, threads=8)
        celery = workers(environment)
        processes += [server, limited, unmetered, *celery]
        for process in processes:
            process.start()
        server.wait_ready(timeout=60)
        limited.wait_ready(timeout=60)
        unmetered.wait_ready(timeout=60)
        for worker in celery:
            worker.wait_ready()
        bases = {"api": server.base, "limited": limited.base, "unmetered": unmetered.base}
        measure_requests(args, load, cases, bases, token)
        unmetered.stop()
        results["webhooks"] = measure_webhooks(args, server, writes["id"], token)
        server.stop()
        limited.stop()
        results["stream"] = measure_stream(args, environment, token, writes["id"])
        queue_drain(timeout=120)  # the stream's writes: nothing left behind in the broker
    finally:
        for process in processes:
            process.stop()
        api_key_revoke(key)
    results["elapsed_seconds"] = round(time.monotonic() - started, 1)
    report(args, projects, cases, results, load.name, load_before)
    return 0


def bench_workspace_id() -> int:
    from accounts.models import Workspace

    return Workspace.objects.filter(name=WORKSPACE).order_by("pk").values_list("pk", flat=True)[0]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=10_000, help="Issues in the small project.")
    parser.add_argument("--large", type=int, default=1_000_000, help="Issues in the large project.")
    parser.add_argument("--seconds", type=float, default=3, help="Seconds of load per turn.")
    parser.add_argument("--rounds", type=int, default=3, help="Turns per measurement.")
    parser.add_argument("--connections", type=int, default=4, help="Concurrent connections.")
    parser.add_argument("--subscribers", type=int, default=1000, help="Stream subscribers.")
    parser.add_argument(
        "--capacity", type=int, default=5000, help="Streams held at once by one process."
    )
    parser.add_argument("--events", type=int, default=30, help="Writes timed per latency.")
    parser.add_argument("--burst", type=int, default=200, help="Events in the webhook burst.")
    parser.add_argument(
        "--webhook-rate", type=float, default=200, help="Deliveries/s in the steady webhook turn."
    )
    parser.add_argument(
        "--webhook-seconds",
        type=float,
        default=15,
        help="Seconds of the steady webhook turn (longer than the dead receiver's timeout).",
    )
    parser.add_argument(
        "--requests", type=int, default=5000, help="Python load: most requests per turn."
    )
    parser.add_argument("--python-load", action="store_true", help="Python threads, not wrk.")
    parser.add_argument("--output", type=Path, default=RESULTS, help="Where the JSON goes.")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="A quick check that everything runs (small data, short turns); no figures to keep.",
    )
    args = parser.parse_args()
    if args.smoke:
        args.small, args.large = 200, 1000
        args.seconds, args.rounds = 1, 1
        args.subscribers, args.capacity, args.events, args.burst = 20, 40, 3, 10
        args.webhook_rate, args.webhook_seconds = 50, 1
        # Python threads with a small budget per turn: every measurement runs and reports in
        # a fraction of a second (wrk's shortest turn is a whole second, 78 of them). 8
        # requests give each its percentiles (one per connection and more); what is checked is
        # that it ran, not its figures. At 20, the turns were 40 of the smoke run's 120 seconds
        # on an idle two-core machine, and it outlasted its test's 300 under the whole suite.
        args.python_load, args.requests = True, 8
    return args


# Data --------------------------------------------------------------------------------------


def rollups_bring_up(project_id: int) -> float:
    """Daily rollups through yesterday, as the rollup job keeps them (nothing to do when
    they are current already)."""
    from analytics import services

    began = time.perf_counter()
    services.rollup_project(project_id=project_id)
    return round(time.perf_counter() - began, 2)


def database_settle() -> None:
    """The database as it stands between the jobs that keep it, before the servers start:
    the lists' counters folded (issues.facets.compact), as their job does every minute, and
    every table vacuumed and analysed, as autovacuum does (where it is off, as on a CI
    machine, nothing else does it). Without it a run measured what the bench's own setup left:
    the import's rolled-back million rows dead in the issues table (3.1 million after three
    runs: a phrase's request 294 ms in process, 163 ms after VACUUM), and 375,000 counter rows
    unfolded whose statistics planned a parallel scan for ``updated_after``'s sum (run 2:
    filters1M/filters10k 5.16)."""
    from django.db import connection

    from issues import facets

    facets.compact()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE)")  # outside a transaction: autocommit


def writes_project() -> dict:
    """A project for the writes, with issues for PATCH to change in turn, and eight more for
    concurrent creates spread over projects, all in a workspace of their own
    (WRITES_WORKSPACE): every run adds thousands of issues to them, newer than any seeded
    one, and a search across the measured workspace would measure those."""
    from accounts.models import User, Workspace
    from accounts.services import workspace_create
    from issues.models import Issue
    from issues.services import issue_create
    from projects.models import Project
    from projects.services import project_create

    owner = User.objects.get(email=OWNER)
    workspace = (
        Workspace.objects.filter(name=WRITES_WORKSPACE, memberships__user=owner)
        .order_by("pk")
        .first()
    ) or workspace_create(name=WRITES_WORKSPACE, owner=owner)

    def named(name: str) -> Project:
        project = Project.objects.filter(workspace=workspace, name=name).first()
        return project or project_create(
            workspace=workspace, actor=owner, name=name, visibility="private"
        )

    project = named("Bench writes")
    issue_ids = list(
        Issue.objects.filter(project=project).order_by("number").values_list("id", flat=True)[:50]
    )
    for n in range(len(issue_ids), 50):
        issue_ids.append(issue_create(project=project, actor=owner, title=f"W{n}").pk)
    for label in ("bench", "write"):  # the labels the creates name, as the baselines find them
        issue_create(project=project, actor=owner, title=f"Label {label}", labels=[label])
    spread = [named(f"Bench writes {n}").pk for n in range(1, 9)]
    return {
        "id": project.pk,
        "issue_ids": issue_ids,
        "spread_ids": spread,
        "threads": threads_seed(project, owner),
    }


def threads_seed(project, owner) -> dict[int, int]:
    """Issues of the writes project carrying threads of 10 and of 10,000 comments (bulk
    inserted, the count kept as the services keep it): ``{length: issue id}``."""
    from datetime import timedelta

    from django.utils import timezone

    from comments.markdown import render
    from comments.models import Comment
    from issues.models import Issue
    from issues.services import issue_create

    threads = {}
    for length in THREAD_LENGTHS:
        title = f"Bench thread {length}"
        issue = Issue.objects.filter(project=project, title=title).first()
        issue = issue or issue_create(project=project, actor=owner, title=title)
        have = Comment.objects.filter(issue=issue).count()
        start = timezone.now() - timedelta(days=30)
        body = "A comment with **Markdown** and `code`, as threads hold them."
        html = render(body)
        Comment.objects.bulk_create(
            (
                Comment(
                    project=project,
                    issue=issue,
                    author=owner,
                    body=body,
                    body_html=html,
                    created_at=start + timedelta(seconds=n),
                    updated_at=start + timedelta(seconds=n),
                )
                for n in range(have, length)
            ),
            batch_size=2000,
        )
        Issue.objects.filter(pk=issue.pk).update(comment_count=length)
        threads[length] = issue.pk
    return threads


# What is measured ----------------------------------------------------------------------------


def case(
    name,
    paths,
    *,
    server="api",
    method="GET",
    bodies=(),
    baseline=BASELINE,
    auth=True,
    connections=None,
    items=1,
):
    """One measurement: ``connections`` overrides --connections; ``items`` is how many issues
    one request writes (a bulk request's), for issues per second."""
    return {
        "name": name,
        "paths": list(paths),
        "server": server,
        "method": method,
        "bodies": [json.dumps(body) for body in bodies],
        "baseline": baseline,
        "auth": auth,
        "connections": connections,
        "items": items,
    }


def search_workspaces_ensure(small: int) -> dict[str, int]:
    """The workspaces /v1/search is measured across, by size: the bench's (the large project
    in it) and SMALL_WORKSPACE (a project of ``small`` issues, seeded unless there), each
    with SEARCH_WORKSPACE_PROJECTS projects (the others made empty)."""
    from django.core.management import call_command

    from accounts.models import User, Workspace
    from projects.models import Project
    from projects.services import project_create

    name = f"{SMALL_WORKSPACE} {small}"
    if not Project.objects.filter(workspace__name=SMALL_WORKSPACE, name=name).exists():
        call_command(
            "seed_demo",
            "--workspace",
            SMALL_WORKSPACE,
            "--project-name",
            name,
            "--issues",
            str(small),
            verbosity=0,
        )
    owner = User.objects.get(email=OWNER)
    found = {}
    for size, workspace_name in (("small", SMALL_WORKSPACE), ("large", WORKSPACE)):
        # The oldest of the name: the one seed_demo made (and reuses) first.
        workspace = Workspace.objects.filter(name=workspace_name).earliest("pk")
        held = Project.objects.filter(workspace=workspace).count()
        for n in range(held, SEARCH_WORKSPACE_PROJECTS):
            project_create(
                workspace=workspace, actor=owner, name=f"Bench search {n}", visibility="private"
            )
        found[size] = workspace.pk
    return found


def cases_build(projects: dict, writes: dict, search_workspaces: dict[str, int]) -> list[dict]:
    cases = []
    for size, project in projects.items():
        query = "status=open&per_page=50"
        for page in (1, 20):
            paging = "" if page == 1 else f"&page={page}"
            bare = f"bare {size} p{page}"
            path = f"/bench/bare/projects/{project['id']}/issues?{query}{paging}"
            cases.append(case(bare, [path], baseline=None, auth=False))
            path = f"/v1/projects/{project['id']}/issues?{query}{paging}"
            cases.append(case(f"list {size} p{page}", [path], baseline=bare))
    for size, project in projects.items():
        for name, query in FILTERS.items():
            for status in ("", "status=open&"):
                path = f"/v1/projects/{project['id']}/issues?{status}{query}&per_page=50"
                cases.append(case(f"filter {name}{' +status' if status else ''} {size}", [path]))
    for size, project in projects.items():
        for shape, words in SEARCH_SHAPES.items():
            query = urlencode({"q": words, "project_id": project["id"], "per_page": 20})
            cases.append(case(f"search {shape} {size}", [f"/v1/search?{query}"]))
    for size, workspace_id in search_workspaces.items():
        query = urlencode({"q": SEARCH_QUERY, "workspace_id": workspace_id, "per_page": 20})
        cases.append(case(f"search workspace {size}", [f"/v1/search?{query}"]))
    # Comments: the writes project's threads (10,010 comments; the sized projects have none).
    query = urlencode({"q": "markdown", "type": "comment", "project_id": writes["id"]})
    cases.append(case("search comments", [f"/v1/search?{query}&per_page=20"]))
    deep = projects["large"]["deep"]
    cases.append(case("deep large by offset", [deep["offset"]]))
    cases.append(case("deep large by cursor", [deep["cursor"]]))
    for size, project in projects.items():
        base = f"/v1/projects/{project['id']}"
        cases.append(case(f"metrics {size}", [f"{base}/metrics?period=30d"]))
        cases.append(case(f"dashboard {size}", [f"{base}/dashboard?period=30d"]))
    issue_paths = [f"/v1/issues/{pk}" for pk in writes["issue_ids"]]
    cases.append(case("issue get", issue_paths))
    # Three bodies over fifty issues: every request changes its issue (a history row, an event).
    priorities = [{"priority": p} for p in ("low", "high", "medium")]
    bare_paths = [f"/bench/bare/issues/{pk}" for pk in writes["issue_ids"]]
    cases.append(case("bare patch", bare_paths, method="PATCH", bodies=priorities, auth=False))
    cases.append(
        case("issue patch", issue_paths, method="PATCH", bodies=priorities, baseline="bare patch")
    )
    titles = [{"title": f"Bench write {n}", "labels": ["bench", "write"]} for n in range(7)]
    creates = f"/v1/projects/{writes['id']}/issues"
    bare_creates = f"/bench/bare/projects/{writes['id']}/issues/create"
    cases.append(case("bare create", [bare_creates], method="POST", bodies=titles, auth=False))
    cases.append(
        case("issue create", [creates], method="POST", bodies=titles, baseline="bare create")
    )
    # Eight writers at once: into one project (they meet on its number), then one each.
    cases.append(
        case("create 8 clients 1 project", [creates], method="POST", bodies=titles, connections=8)
    )
    spread = [f"/v1/projects/{pk}/issues" for pk in writes["spread_ids"]]
    cases.append(
        case("create 8 clients 8 projects", spread, method="POST", bodies=titles, connections=8)
    )
    batch = [{"title": f"Bulk {n}", "labels": ["bench"]} for n in range(BULK_ITEMS)]
    cases.append(
        case(
            "bulk create x100",
            [f"{creates}/bulk"],
            method="POST",
            bodies=[{"items": batch}],
            items=BULK_ITEMS,
        )
    )
    for length, issue_id in writes["threads"].items():
        thread = f"/v1/issues/{issue_id}/comments?per_page=50"
        cases.append(case(f"thread {length} p1", [thread]))
    small = projects["small"]["id"]
    cases.append(case("users/me", ["/v1/users/me"]))
    cases.append(case("users/me limiter on", ["/v1/users/me"], server="limited"))
    list_path = f"/v1/projects/{small}/issues?status=open&per_page=50"
    cases.append(case("list small p1 limiter on", [list_path], server="limited"))
    cases.append(case("list small p1 metrics off", [list_path], server="unmetered"))
    return cases


def queries_count(cases: list[dict], token: str) -> None:
    """SQL queries per request (on a warm process, as a running server is), and a check that
    the list and its baseline give the same rows and total."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_HOST="127.0.0.1")
    bodies = {}
    for item in cases:
        request = {
            "method": item["method"],
            "path": item["paths"][0],
            "data": item["bodies"][0] if item["bodies"] else "",
            "content_type": "application/json",
            "headers": {"Authorization": f"Bearer {token}"} if item["auth"] else {},
        }
        client.generic(**request)
        with CaptureQueriesContext(connection) as captured:
            response = client.generic(**request)
        if response.status_code >= 300:
            raise SystemExit(f"{item['name']}: {response.status_code} {response.content[:300]!r}")
        item["queries"] = len(captured.captured_queries)
        bodies[item["name"]] = response.json()
    for item in cases:
        if item["name"].startswith("list") and item["baseline"]:
            mine, bare = bodies[item["name"]], bodies[item["baseline"]]
            same = [row["id"] for row in mine["data"]] == [row["id"] for row in bare["data"]]
            if not same or mine["meta"]["total"] != bare["meta"]["total"]:
                raise SystemExit(f"{item['name']} and {item['baseline']} disagree.")
    by_offset, by_cursor = bodies["deep large by offset"], bodies["deep large by cursor"]
    if [row["id"] for row in by_offset["data"]] != [row["id"] for row in by_cursor["data"]]:
        raise SystemExit("The deep page by offset and by cursor disagree.")


def measure_requests(args, load, cases: list[dict], bases: dict, token: str) -> None:
    """The reads in rounds, then the writes in rounds: the worker's work for the writes (their
    events' fan-out) is done before the next read is measured."""
    reads = [item for item in cases if item["method"] == "GET"]
    writes = [item for item in cases if item["method"] != "GET"]
    for group in (reads, writes):
        measure_rounds(args, load, group, bases, token)
        queue_drain(timeout=120)
    for item in cases:
        item["load"] = max(item["rounds"], key=lambda result: result["requests_per_second"])


def measure_rounds(args, load, cases: list[dict], bases: dict, token: str) -> None:
    for round_ in range(1, args.rounds + 1):
        for item in cases:
            driver = load
            if item["connections"]:
                driver = load_generator(
                    connections=item["connections"],
                    requests=args.requests,
                    python=args.python_load,
                )
            headers = dict(FRESH_CONNECTION)
            if item["auth"]:
                headers["Authorization"] = f"Bearer {token}"
            target = Target(
                bases[item["server"]], item["paths"], headers, item["method"], item["bodies"]
            )
            # A smoke run warms only the writes: their first requests open each server
            # process's broker connection, which on a loaded machine can outlast a short turn.
            if round_ == 1 and (not args.smoke or item["method"] != "GET"):
                driver.drive(target, 1, warm=True)
            result = driver.drive(target, args.seconds)
            item.setdefault("rounds", []).append(result)
            print(
                f"  round {round_}/{args.rounds} {item['name']:<26}"
                f" {result['requests_per_second']:>8.1f} req/s",
                flush=True,
            )


def deep_paging(project: dict, token: str) -> dict:
    """The paths of the list's deep page (``DEEP_PAGE``, or the last full one on less data): by
    number, and by the cursor the page before it gives (read once here, as a client walking by
    cursor would have it)."""
    from django.test import Client

    page = max(2, min(DEEP_PAGE, project["open"] // 50))
    path = f"/v1/projects/{project['id']}/issues?status=open&per_page=50"
    client = Client(HTTP_HOST="127.0.0.1")
    answer = client.get(f"{path}&page={page - 1}", headers={"Authorization": f"Bearer {token}"})
    if answer.status_code != 200 or not answer.json()["meta"]["next_cursor"]:
        raise SystemExit(f"No cursor after page {page - 1}: {answer.content[:300]!r}")
    cursor = answer.json()["meta"]["next_cursor"]
    return {"page": page, "offset": f"{path}&page={page}", "cursor": f"{path}&cursor={cursor}"}


# Processes ------------------------------------------------------------------------------------


class CeleryWorker:
    """A worker as docker-compose.yml runs it, with one worker process: the general one
    (prefork) or the webhook sender (``--pool threads``, its threads sharing the process)."""

    def __init__(self, environment: dict, *, name: str, queues: str, pool: str, concurrency: int):
        self.environment = environment
        self.name = f"{name}@{socket.gethostname()}"
        self.queues, self.pool, self.concurrency = queues, pool, concurrency
        self.log = ROOT / "bench" / "results" / f"worker-{name}.log"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "celery", "-A", "collab", "worker", "-n", self.name]
        command += ["-Q", self.queues, "--pool", self.pool, "--concurrency", str(self.concurrency)]
        command += ["--loglevel", "WARNING", "--without-mingle", "--without-gossip"]
        with self.log.open("wb") as output:
            self.process = subprocess.Popen(  # noqa: S603 - our own process
                command,
                cwd=ROOT,
                env=self.environment,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_ready(self, timeout: float = 60) -> None:
        from collab.celery import app

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"the worker exited:\n{self.log.read_text()[-2000:]}")
            if app.control.ping(destination=[self.name], timeout=1):
                return
        raise SystemExit(f"the worker {self.name} did not answer in time")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def workers(environment: dict) -> list[CeleryWorker]:
    """The two kinds of worker of docker-compose.yml, one process each."""
    return [
        CeleryWorker(
            environment,
            name="general",
            queues="default,git,analytics,email",
            pool="prefork",
            concurrency=1,
        ),
        CeleryWorker(
            environment,
            name="webhooks",
            queues="webhooks",
            pool="threads",
            concurrency=WEBHOOK_SENDERS,
        ),
    ]


def queue_drain(timeout: float) -> None:
    """Wait until the workers have done every task the writes queued (their events' fan-out):
    the broker's list of every queue is empty, and no worker holds a task it took from one
    (a worker takes several ahead). The fan-out rides the webhooks queue; looking at the
    default queue alone, or at the lists alone, let a measurement start behind a backlog.
    Tasks due later (retries) are left to their time."""
    import redis

    from collab.celery import app

    queues = list(app.conf.task_queues or []) or [app.conf.task_default_queue]
    names = [getattr(queue, "name", queue) for queue in queues]
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not any(client.llen(name) for name in names) and not workers_busy(app):
                return
            time.sleep(0.5)
    finally:
        client.close()
    raise SystemExit("the worker did not drain its queues in time")


def workers_busy(app) -> bool:
    """Whether a worker is running a task or holds one taken ahead that is due now."""
    inspect = app.control.inspect(timeout=1)
    held = [*(inspect.active() or {}).values(), *(inspect.reserved() or {}).values()]
    return any(held)


# Webhooks ------------------------------------------------------------------------------------


class Receiver(http.server.ThreadingHTTPServer):
    """Records when each delivery arrives, by the issue it is about."""

    def __init__(self):
        self.arrivals: dict[int, float] = {}
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), ReceiverHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"


class ReceiverHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        arrived = time.perf_counter()
        issue = (body.get("data") or {}).get("issue") or {}
        with self.server.lock:
            self.server.arrivals.setdefault(issue.get("id"), arrived)
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def http_request(base: str, method: str, path: str, token: str, body: dict | None = None):
    """One request with the API key; the envelope's data (None for an empty answer)."""
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request(
            method,
            path,
            body=json.dumps(body) if body is not None else None,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        response = connection.getresponse()
        content = response.read()
        if response.status >= 300:
            raise SystemExit(f"{method} {path}: {response.status} {content[:300]!r}")
        return json.loads(content)["data"] if content else None
    finally:
        connection.close()


class DeadReceiver:
    """A receiver that takes connections (the kernel completes them) and never answers: every
    delivery to it waits out WEBHOOK_TIMEOUT_SECONDS."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0), backlog=4096)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.socket.getsockname()[1]}/hook"

    def close(self) -> None:
        self.socket.close()


def measure_webhooks(args, server: Server, project_id: int, token: str) -> dict:
    """Ten healthy receivers and a dead one, each a webhook on issue.created: issues created
    over HTTP one by one (write to delivery at every healthy receiver, p50 and p99), a burst
    (healthy deliveries per second of the one sender process), then writes at a steady rate
    (write to delivery at that rate)."""
    from accounts.models import User
    from issues.services import issue_create, issue_create_many
    from projects.models import Project

    healthy = [Receiver() for _ in range(HEALTHY_RECEIVERS)]
    dead = DeadReceiver()
    hooks = [
        http_request(
            server.base,
            "POST",
            f"/v1/projects/{project_id}/webhooks",
            token,
            {"url": url, "events": ["issue.created"], "secret": secrets.token_hex(16)},
        )
        for url in [receiver.url for receiver in healthy] + [dead.url]
    ]

    def arrived(issue_id: int) -> list[float] | None:
        times = [receiver.arrivals.get(issue_id) for receiver in healthy]
        return None if None in times else times

    owner = User.objects.get(email=OWNER)
    project = Project.objects.get(pk=project_id)
    idle: list[float] = []
    paced: list[float] = []
    try:
        for n in range(args.events):
            sent = time.perf_counter()
            issue = http_request(
                server.base, "POST", f"/v1/projects/{project_id}/issues", token, {"title": f"H{n}"}
            )
            times = wait_for(lambda issue_id=issue["id"]: arrived(issue_id), 30)
            idle += [(arrival - sent) * 1000 for arrival in times]
        # A burst written at once: the sender's pace through it.
        burst_started = time.perf_counter()
        made = issue_create_many(
            project=project,
            actor=owner,
            items=[(n, {"title": f"Burst {n}"}) for n in range(args.burst)],
            atomic=True,
        )
        ids = [item["data"]["id"] for item in made]
        wait_for(lambda: all(arrived(issue_id) for issue_id in ids) or None, 120)
        last = max(max(arrived(issue_id)) for issue_id in ids)
        burst_seconds = last - burst_started
        # A steady rate of writes, each its own transaction and event.
        interval = HEALTHY_RECEIVERS / args.webhook_rate
        written: dict[int, float] = {}
        began = time.perf_counter()
        for n in range(round(args.webhook_seconds / interval)):
            time.sleep(max(0.0, began + n * interval - time.perf_counter()))
            issue = issue_create(project=project, actor=owner, title=f"Paced {n}")
            written[issue.pk] = time.perf_counter()
        wait_for(lambda: all(arrived(issue_id) for issue_id in written) or None, 120)
        for issue_id, at in written.items():
            paced += [(arrival - at) * 1000 for arrival in arrived(issue_id)]
    finally:
        for hook in hooks:
            http_request(server.base, "DELETE", f"/v1/webhooks/{hook['id']}", token)
        for receiver in healthy:
            receiver.shutdown()
            receiver.server_close()
        dead.close()
    deliveries = args.burst * HEALTHY_RECEIVERS
    return {
        "receivers": HEALTHY_RECEIVERS,
        "dead_receivers": 1,
        "events": args.events,
        "idle_p50_ms": round(statistics.median(idle), 1),
        "idle_p99_ms": round(percentile(idle, 99), 1),
        "burst": args.burst,
        "burst_deliveries": deliveries,
        "burst_seconds": round(burst_seconds, 2),
        "deliveries_per_second_per_worker": round(deliveries / burst_seconds, 1),
        "rate": args.webhook_rate,
        "rate_deliveries": len(paced),
        "p50_ms": round(statistics.median(paced), 1),
        "p99_ms": round(percentile(paced, 99), 1),
    }


def wait_for(probe, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.002)
    raise SystemExit("timed out waiting for a delivery")


# Stream ---------------------------------------------------------------------------------------


def measure_stream(args, environment: dict, token: str, project_id: int) -> dict:
    """--subscribers streams on a server of one process: how long they take to open, and each
    write's frame (an issue created in the writes' project, ``project_id``) at every one; then
    --capacity streams held at once, a write's frame at each, and the server's memory per
    stream."""
    from accounts.models import User
    from issues.services import issue_create
    from projects.models import Project

    owner = User.objects.get(email=OWNER)
    project = Project.objects.get(pk=project_id)
    server = Server(environment, workers=1, threads=8)
    server.start()
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    received: dict[int, list[float]] = {}

    def opened(count: int) -> tuple[list, list]:
        return asyncio.run_coroutine_threadsafe(
            streams_open(server.port, token, count, received), loop
        ).result(timeout=600)

    def write(n: int, streams: list) -> list[float]:
        """A write's frames at every stream, in ms from before the write."""
        written = time.perf_counter()
        issue_create(project=project, actor=owner, title=f"Stream {n}")
        event_id = latest_event_id(project.pk)
        deadline = time.monotonic() + 30
        while len(received.get(event_id, [])) < len(streams) and time.monotonic() < deadline:
            time.sleep(0.002)
        return [(arrival - written) * 1000 for arrival in received.get(event_id, [])]

    streams: list = []
    tasks: list = []
    try:
        server.wait_ready(timeout=60)
        began = time.perf_counter()
        streams, tasks = opened(args.subscribers)
        open_seconds = time.perf_counter() - began
        # This process's first write runs its own first-call work (imports, caches), and its
        # collector would walk every stream's objects: neither is the service's time.
        write(-1, streams)
        gc.freeze()
        latencies: list[float] = []
        for n in range(args.events):
            latencies += write(n, streams)
        rss_mib = process_rss_mib(server)
        more, more_tasks = opened(max(0, args.capacity - len(streams)))
        streams, tasks = streams + more, tasks + more_tasks
        held = write(args.events, streams)
        capacity_rss_mib = process_rss_mib(server)
    finally:
        for _reader, writer in streams:
            loop.call_soon_threadsafe(writer.close)
        for task in tasks:
            loop.call_soon_threadsafe(task.cancel)
        server.stop()
        loop.call_soon_threadsafe(loop.stop)
        gc.unfreeze()
    added = len(streams) - args.subscribers
    return {
        "subscribers": args.subscribers,
        "open_seconds": round(open_seconds, 2),
        "frames_expected": args.events * args.subscribers,
        "frames_received": len(latencies),
        "p50_ms": round(statistics.median(latencies), 1),
        "p99_ms": round(percentile(latencies, 99), 1),
        "server_rss_mib": rss_mib,
        "capacity": len(streams),
        "capacity_frames_received": len(held),
        "capacity_p99_ms": round(percentile(held, 99), 1) if held else None,
        "capacity_rss_mib": capacity_rss_mib,
        "kib_per_stream": round((capacity_rss_mib - rss_mib) * 1024 / added, 1) if added else None,
    }


def latest_event_id(project_id: int) -> int:
    from events.models import Event

    events = Event.objects.filter(type="issue.created", project_id=project_id).order_by("-id")
    return events.values_list("id", flat=True)[0]


# Report ---------------------------------------------------------------------------------------


def report(args, projects, cases, results, load_name, load_before) -> None:
    by_name = {item["name"]: item for item in cases}
    # Every figure is a ratio of throughputs: one of nothing is a failed measurement, named.
    idle = [item["name"] for item in cases if not item["load"]["requests_per_second"]]
    if idle:
        raise SystemExit(
            f"Measured at 0 requests per second: {', '.join(idle)}; no ratio can be made of "
            "them (the workers' logs are in bench/results/)."
        )
    baseline = by_name[BASELINE]["load"]["requests_per_second"]
    labels = {"small": size_label(args.small), "large": size_label(args.large)}

    def shown(name: str) -> str:
        for size, label in labels.items():
            name = name.replace(f" {size}", f" {label}")
        return name

    rows = []
    for item in cases:
        figures = item["load"]
        own_baseline = by_name.get(item["baseline"]) if item["baseline"] else None
        rows.append(
            {
                "name": shown(item["name"]),
                "method": item["method"],
                "path": item["paths"][0],
                "requests_per_second": figures["requests_per_second"],
                "p50_ms": figures["p50_ms"],
                "p99_ms": figures["p99_ms"],
                "queries": item["queries"],
                "issues_per_second": (
                    round(figures["requests_per_second"] * item["items"], 1)
                    if item["method"] == "POST"
                    else None
                ),
                "vs_bare": round(figures["requests_per_second"] / baseline, 2),
                "vs_own_bare": (
                    round(
                        figures["requests_per_second"]
                        / own_baseline["load"]["requests_per_second"],
                        2,
                    )
                    if own_baseline and own_baseline["name"] != BASELINE
                    else None
                ),
                "rounds_requests_per_second": [r["requests_per_second"] for r in item["rounds"]],
            }
        )

    def ratio(name: str, other: str) -> float:
        return round(
            by_name[name]["load"]["requests_per_second"]
            / by_name[other]["load"]["requests_per_second"],
            2,
        )

    def cost(large_name: str, small_name: str) -> float:
        """Time per request on the large project over the small one's."""
        return round(
            by_name[small_name]["load"]["requests_per_second"]
            / by_name[large_name]["load"]["requests_per_second"],
            2,
        )

    ratios = {
        "list/bare": round(by_name["list small p1"]["load"]["requests_per_second"] / baseline, 2),
        "metrics/bare": ratio("metrics small", BASELINE),
        "list1M/list10k": cost("list large p1", "list small p1"),
        "metrics1M/metrics10k": cost("metrics large", "metrics small"),
        "dashboard1M/dashboard10k": cost("dashboard large", "dashboard small"),
        "list1M_p20/list10k_p20": cost("list large p20", "list small p20"),
        **{
            f"filter {name}": cost(f"filter {name} large", f"filter {name} small")
            for name in [*FILTERS, *(f"{name} +status" for name in FILTERS)]
        },
        "thread10k/thread10": cost(
            f"thread {THREAD_LENGTHS[-1]} p1", f"thread {THREAD_LENGTHS[0]} p1"
        ),
        # Time per request of the deep page against page 1, on the large project.
        "deep_offset/p1": cost("deep large by offset", "list large p1"),
        "deep_cursor/p1": cost("deep large by cursor", "list large p1"),
        "create/bare": round(by_name["issue create"]["load"]["requests_per_second"] / baseline, 2),
        "create/bare_create": ratio("issue create", "bare create"),
        "patch/bare_patch": ratio("issue patch", "bare patch"),
        "create_8_clients_1_project/8_projects": ratio(
            "create 8 clients 1 project", "create 8 clients 8 projects"
        ),
        "limiter_on/off users_me": round(
            by_name["users/me limiter on"]["load"]["requests_per_second"]
            / by_name["users/me"]["load"]["requests_per_second"],
            2,
        ),
        "metrics_on/off": ratio("list small p1", "list small p1 metrics off"),
        "limiter_on/off list": round(
            by_name["list small p1 limiter on"]["load"]["requests_per_second"]
            / by_name["list small p1"]["load"]["requests_per_second"],
            2,
        ),
    }

    hooks, stream = results["webhooks"], results["stream"]
    bulk = next(row for row in rows if row["name"] == "bulk create x100")
    figures = {
        "bulk_create/s": round(bulk["issues_per_second"]),
        "webhooks/s": round(hooks["deliveries_per_second_per_worker"]),
        "stream_p99_ms": round(stream["p99_ms"]),
        "search1M": round(by_name["search common large"]["load"]["requests_per_second"], 1),
        "search1M_p99_ms": max(
            by_name[f"search {shape} large"]["load"]["p99_ms"] for shape in SEARCH_CASES
        ),
        "export_issues/s": results["transfer"]["export_issues/s"],
        "import_issues/s": results["transfer"]["import_issues/s"],
    }
    search_costs = {
        shape: cost(f"search {shape} large", f"search {shape} small") for shape in SEARCH_CASES
    }
    worst_search = max(search_costs, key=search_costs.__getitem__)
    ratios.update({f"search {shape}": value for shape, value in search_costs.items()})
    ratios["search/bare"] = ratio("search common large", BASELINE)
    ratios["search1M/search10k"] = search_costs[worst_search]
    if "wal_with/without" in results["rank_index"]:  # measured where RUM is
        ratios["wal_with/without_rank_index"] = results["rank_index"]["wal_with/without"]
    filter_costs = {name: value for name, value in ratios.items() if name.startswith("filter ")}
    worst_filter = max(filter_costs, key=filter_costs.__getitem__)
    ratios["filters1M/filters10k"] = filter_costs[worst_filter]
    print()
    header = (
        f"{'measurement':<28} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'queries':>7} {'/bare':>6}"
        f" {'/own':>6} {'issues/s':>9}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        own = f"{row['vs_own_bare']:>6.2f}" if row["vs_own_bare"] is not None else f"{'':>6}"
        made = f"{row['issues_per_second']:>9.0f}" if row["issues_per_second"] else f"{'':>9}"
        print(
            f"{row['name']:<28} {row['requests_per_second']:>8.1f} {row['p50_ms']:>8.2f} "
            f"{row['p99_ms']:>8.2f} {row['queries']:>7} {row['vs_bare']:>6.2f} {own} {made}"
        )
    print()
    print(
        f"webhooks ({hooks['receivers']} receivers and a dead one, one sender process): "
        f"{hooks['deliveries_per_second_per_worker']} deliveries/s "
        f"({hooks['burst_deliveries']} in {hooks['burst_seconds']} s); write to delivery "
        f"p50 {hooks['p50_ms']} ms, p99 {hooks['p99_ms']} ms at {hooks['rate']}/s "
        f"({hooks['rate_deliveries']} deliveries), one at a time p50 {hooks['idle_p50_ms']} ms, "
        f"p99 {hooks['idle_p99_ms']} ms"
    )
    print(
        f"stream: {stream['subscribers']} subscribers on one server process "
        f"({stream['server_rss_mib']} MiB), opened in {stream['open_seconds']} s, "
        f"{stream['frames_received']}/{stream['frames_expected']} frames; write to frame "
        f"p50 {stream['p50_ms']} ms, p99 {stream['p99_ms']} ms; {stream['capacity']} held "
        f"({stream['capacity_rss_mib']} MiB, {stream['kib_per_stream']} KiB per stream), "
        f"{stream['capacity_frames_received']}/{stream['capacity']} frames of a write, "
        f"p99 {stream['capacity_p99_ms']} ms"
    )
    moved = results["transfer"]
    print(
        f"transfer: the workspace's {moved['issues']} issues ({moved['records']} records, "
        f"{moved['archive_bytes'] / 2**20:.1f} MiB archive) exported in "
        f"{moved['export_seconds']} s (peak {moved['export_max_rss_mib']} MiB), imported in "
        f"{moved['import_seconds']} s"
    )
    print("ratios: " + ", ".join(f"{name} {value:.2f}" for name, value in ratios.items()))
    for project in projects.values():
        seeded = f", seeded in {project['seed_seconds']} s" if project["seed_seconds"] else ""
        print(
            f"{project['name']}: id {project['id']}, {project['issues']} issues, "
            f"{project['open']} open{seeded}; rollups brought up in {project['rollup_seconds']} s"
        )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "ran_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average_before": load_before,
            "load_average_after": os.getloadavg(),
        },
        "settings": {
            "smoke": args.smoke,
            "load_generator": load_name,
            "connections": args.connections,
            "seconds_per_round": args.seconds,
            "rounds": args.rounds,
            "server": "gunicorn collab.asgi, uvicorn workers, 2 processes x 8 threads",
            "worker": "celery, 1 process",
        },
        "projects": projects,
        "requests": rows,
        "webhooks": hooks,
        "stream": stream,
        "transfer": results["transfer"],
        "rank_index": results["rank_index"],
        "ratios": ratios,
        "figures": figures,
        "elapsed_seconds": results["elapsed_seconds"],
    }
    args.output.write_text(json.dumps(document, indent=2) + "\n")
    print(f"Wrote {args.output} in {results['elapsed_seconds']:.0f} s.")
    wal_ratio = results["rank_index"].get("wal_with/without")
    wal = "n/a" if wal_ratio is None else f"{wal_ratio:.2f}"
    print(
        f"bench: list/bare={ratios['list/bare']:.2f} "
        f"metrics/bare={ratios['metrics/bare']:.2f} "
        f"list1M/list10k={ratios['list1M/list10k']:.2f} "
        f"metrics1M/metrics10k={ratios['metrics1M/metrics10k']:.2f} "
        f"create/bare={ratios['create/bare']:.2f} "
        f"create/bare_create={ratios['create/bare_create']:.2f} "
        f"patch/bare_patch={ratios['patch/bare_patch']:.2f} "
        f"bulk_create/s={figures['bulk_create/s']} "
        f"webhooks/s={figures['webhooks/s']} "
        f"stream_p99_ms={figures['stream_p99_ms']} "
        f"filters1M/filters10k={ratios['filters1M/filters10k']:.2f} ({worst_filter[7:]}) "
        f"search1M={figures['search1M']:.1f} "
        f"search/bare={ratios['search/bare']:.2f} "
        f"search1M/search10k={ratios['search1M/search10k']:.2f} ({worst_search}) "
        f"wal_with/without_rank_index={wal} "
        f"metrics_on/off={ratios['metrics_on/off']:.2f} "
        f"export_issues/s={figures['export_issues/s']} "
        f"import_issues/s={figures['import_issues/s']}"
    )


if __name__ == "__main__":
    sys.exit(main())
