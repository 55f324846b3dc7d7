"""The benchmark suite's smoke run: bench/run.py --smoke, end to end, so it never rots.

Small data and one-second turns; what is checked is that every measurement ran and reported,
not how fast anything was (figures come from a full run, kept in bench/results/).
"""

import json
import os
import re
import subprocess
import sys
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection

from tests import templatedb
from tests.liveserver import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.live]
# The smoke run's ceiling: about 65 seconds on two idle cores, several times that when it
# starts beside the whole suite on a slow machine; past it, something hangs.
SMOKE_SECONDS = 420
LAST_LINE = re.compile(
    r"^bench: list/bare=(\d+\.\d\d) metrics/bare=(\d+\.\d\d) list1M/list10k=(\d+\.\d\d) "
    r"metrics1M/metrics10k=(\d+\.\d\d) create/bare=(\d+\.\d\d) "
    r"create/bare_create=(\d+\.\d\d) patch/bare_patch=(\d+\.\d\d) "
    r"bulk_create/s=(\d+) webhooks/s=(\d+) stream_p99_ms=(\d+) "
    r"filters1M/filters10k=(\d+\.\d\d) \(([a-z_]+(?: \+status)?)\) search1M=(\d+\.\d) "
    r"search/bare=(\d+\.\d\d) search1M/search10k=(\d+\.\d\d) \(([a-z ]+)\) "
    r"wal_with/without_rank_index=(\d+\.\d\d|n/a) "
    r"metrics_on/off=(\d+\.\d\d) export_issues/s=(\d+) import_issues/s=(\d+)$"
)
SEARCH_SHAPES = ("rare", "common", "very common", "two words", "prefix", "phrase", "workspace")
FILTERS = ("type", "priority", "assignee", "labels", "q", "created_after", "updated_after")
MEASUREMENTS = {
    "bare 200 p1",
    "list 200 p1",
    "bare 200 p20",
    "list 200 p20",
    "bare 1k p1",
    "list 1k p1",
    "bare 1k p20",
    "list 1k p20",
    "deep 1k by offset",
    "deep 1k by cursor",
    "metrics 200",
    "dashboard 200",
    "metrics 1k",
    "dashboard 1k",
    "issue get",
    "bare patch",
    "issue patch",
    "bare create",
    "issue create",
    "create 8 clients 1 project",
    "create 8 clients 8 projects",
    "bulk create x100",
    "thread 10 p1",
    "thread 10000 p1",
    "users/me",
    "users/me limiter on",
    "list 200 p1 limiter on",
    "list 200 p1 metrics off",
    "search comments",
    *(f"search {shape} {size}" for shape in SEARCH_SHAPES for size in ("200", "1k")),
    *(
        f"filter {name}{status} {size}"
        for name in FILTERS
        for status in ("", " +status")
        for size in ("200", "1k")
    ),
}


def bench_script(command: list[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    """``command`` (a bench script) to its end, ``timeout`` seconds at most. However the wait
    ends early (its timeout, or the test's own), the script is stopped with SIGTERM, on which
    it stops the servers and workers it started (bench.harness.stop_on_terminate; each runs
    in a session of its own): killed outright, it left them running, and its workers went on
    taking the tasks of the next tests on the same Redis database."""
    process = subprocess.Popen(  # noqa: S603 - our own script
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except BaseException:
        process.terminate()
        try:
            process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
        raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


@pytest.fixture
def bench_database():
    """A database of the smoke run's own, dropped afterwards: a copy of the run's migrated
    template where there is one (tests/templatedb.py), so that the run's ``migrate`` finds
    every migration applied."""
    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        pytest.skip("the benchmarks run on PostgreSQL and Redis (DATABASE_URL, REDIS_URL)")
    db = connection.settings_dict
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    name = f"collab_bench_smoke_{worker}"
    auth = quote(db["USER"] or "", safe="")
    if db["PASSWORD"]:
        auth += ":" + quote(db["PASSWORD"], safe="")
    server = f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    templatedb.drop(db, name)
    templatedb.create(db, name, template=templatedb.template())
    yield f"{server}/{name}"
    templatedb.drop(db, name)


@pytest.mark.slow(seconds=95)
@pytest.mark.timeout(SMOKE_SECONDS + 60)
def test_the_benchmark_suite_runs_end_to_end(bench_database, tmp_path):
    output = tmp_path / "run.json"
    env = {
        **os.environ,
        "DATABASE_URL": bench_database,
        "REDIS_URL": settings.REDIS_URL,
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = bench_script(
        [sys.executable, "bench/run.py", "--smoke", "--output", str(output)], env, SMOKE_SECONDS
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    last = result.stdout.strip().splitlines()[-1]
    assert LAST_LINE.match(last), last

    report = json.loads(output.read_text())
    rows = {row["name"]: row for row in report["requests"]}
    assert set(rows) == MEASUREMENTS
    for row in rows.values():
        assert row["requests_per_second"] > 0 and row["p99_ms"] >= row["p50_ms"] > 0, row
        assert row["queries"] >= 1, row
    assert report["webhooks"]["events"] == 3
    assert report["webhooks"]["deliveries_per_second_per_worker"] > 0
    stream = report["stream"]
    assert stream["subscribers"] == 20
    assert stream["frames_received"] == stream["frames_expected"] == 60
    assert set(report["ratios"]) >= {
        "list/bare",
        "list1M/list10k",
        "metrics1M/metrics10k",
        "create/bare",
        "create/bare_create",
        "patch/bare_patch",
        "metrics_on/off",
        "thread10k/thread10",
    }
    # The ratios on the last line are the JSON's.
    *numbers, worst, search, search_bare, search_cost, search_worst, wal, metrics_on_off = (
        LAST_LINE.match(last).groups()[:-2]
    )
    exported, imported = LAST_LINE.match(last).groups()[-2:]
    # The workspace's issues exported and imported (the import rolled back: nothing added).
    transfer = report["transfer"]
    assert transfer["issues"] >= 1200 and transfer["export_issues/s"] > 0
    assert [int(exported), int(imported)] == [
        report["figures"]["export_issues/s"],
        report["figures"]["import_issues/s"],
    ]
    shown = [float(value) for value in numbers]
    ratios = report["ratios"]
    assert shown == [
        ratios["list/bare"],
        ratios["metrics/bare"],
        ratios["list1M/list10k"],
        ratios["metrics1M/metrics10k"],
        ratios["create/bare"],
        ratios["create/bare_create"],
        ratios["patch/bare_patch"],
        *(report["figures"][name] for name in ("bulk_create/s", "webhooks/s", "stream_p99_ms")),
        ratios["filters1M/filters10k"],
    ]
    # The worst filter is named, and is the worst of the per-filter ratios.
    costs = {
        name[len("filter ") :]: value
        for name, value in ratios.items()
        if name.startswith("filter ")
    }
    assert set(costs) == {f"{name}{status}" for name in FILTERS for status in ("", " +status")}
    assert costs[worst] == max(costs.values()) == ratios["filters1M/filters10k"]
    assert float(search) == report["figures"]["search1M"] > 0
    assert float(search_bare) == ratios["search/bare"] > 0
    searches = {shape: ratios[f"search {shape}"] for shape in SEARCH_SHAPES}
    assert searches[search_worst] == max(searches.values()) == float(search_cost)
    # CI's PostgreSQL has RUM (./test installs it): the rank index's write cost is measured.
    rank_index = report["rank_index"]
    if rank_index["rank_index"]:
        assert float(wal) == rank_index["wal_with/without"] > 0
        assert rank_index["rank_index_build_seconds"] >= 0 and rank_index["rank_index_rows"] > 0
    else:
        assert wal == "n/a"
    assert float(metrics_on_off) == ratios["metrics_on/off"] > 0
    assert report["figures"]["bulk_create/s"] >= 100  # each request writes 100 issues


SCALE_LINE = re.compile(r"^scale: list2/list1=(\d+\.\d\d) create2/create1=(\d+\.\d\d)$")


@pytest.mark.slow(seconds=16)
def test_one_web_process_or_two_runs_end_to_end(bench_database, tmp_path):
    """bench/scale.py --smoke: two real servers on one database, every figure reported, the
    creates' fan-out drained from the broker afterwards."""
    output = tmp_path / "scale.json"
    env = {
        **os.environ,
        "DATABASE_URL": bench_database,
        "REDIS_URL": settings.REDIS_URL,
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = bench_script(
        [sys.executable, "bench/scale.py", "--smoke", "--output", str(output)], env, 120
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    last = result.stdout.strip().splitlines()[-1]
    assert SCALE_LINE.match(last), last

    report = json.loads(output.read_text())
    rows = {row["name"]: row for row in report["requests"]}
    assert set(rows) == {"list one", "list two", "create one", "create two"}
    for row in rows.values():
        assert row["requests"] > 0 and row["requests_per_second"] > 0, row
        assert row["p99_ms"] >= row["p50_ms"] > 0, row
        assert len(row["rounds"]) == report["settings"]["rounds"] == 1, row
        # Two processes: one share of the load each, both answered.
        assert len(row["per_server_requests_per_second"]) == row["web_processes"], row
        assert all(share > 0 for share in row["per_server_requests_per_second"]), row
        cpu = row["cpu"]
        assert cpu["busy_cores"] > 0 and cpu["web_ms_per_request"] > 0, cpu
        assert row["postgres_backends"]["samples"] > 0, row
    assert {row["web_processes"] for row in rows.values()} == {1, 2}
    # The creates queued their events' fan-out; a worker drained the queue afterwards (other
    # workers on the same Redis may have taken some: no exact count).
    assert report["fanout_drain"]["queue"] == "webhooks"
    assert report["fanout_drain"]["queued"] >= 0
    # The ratios on the last line are the JSON's.
    ratios = report["ratios"]
    assert (
        set(ratios) == set(report["ratios_of_median_turns"]) == {"list2/list1", "create2/create1"}
    )
    assert [float(value) for value in SCALE_LINE.match(last).groups()] == [
        ratios["list2/list1"],
        ratios["create2/create1"],
    ]
    for endpoint in ("list", "create"):
        two, one = rows[f"{endpoint} two"], rows[f"{endpoint} one"]
        expected = round(two["requests_per_second"] / one["requests_per_second"], 2)
        assert ratios[f"{endpoint}2/{endpoint}1"] == expected
