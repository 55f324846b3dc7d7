#!/usr/bin/env python
"""One web process or two on the same database: the issue list and issue create, in one run.

    .venv/bin/python bench/scale.py            # under three minutes (the first run seeds first)
    .venv/bin/python bench/scale.py --smoke    # seconds, on small data (what CI runs)

Everything stays on loopback. PostgreSQL from DATABASE_URL (default
postgres://postgres@127.0.0.1:5432/collab_bench: created when missing, migrated), Redis from
REDIS_URL (default redis://127.0.0.1:6379/0). It reuses the 10,000-issue project "Bench 10000"
of bench/run (seeded with ``seed_demo`` when missing); the creates go to a project of their own,
"Bench scale writes", so the list's project keeps its size.

Two gunicorn servers as production runs them (``collab.asgi``, uvicorn workers, production
settings, the REST endpoints on 8 threads), each with ONE worker process, on two ports, both on
the same PostgreSQL and Redis; the rate limiter off, as in bench/run. Measured:

- **one**: the load on server A alone;
- **two**: the same load split evenly between A and B at once (half the connections each: two
  wrk runs in parallel, or two pools of Python threads with --python-load); req/s summed, the
  latencies those of the slower half;

for the issue list (``GET /v1/projects/:id/issues?status=open&per_page=50``, page 1, as in
bench/run) and issue create (``POST /v1/projects/:id/issues`` with a label). Each figure is the
best of --rounds turns, one and two taken in turn (in alternating order) so that drift on the
machine weighs on both alike. Each turn also records where the CPU went (from /proc: the web
processes, this database's PostgreSQL backends and PostgreSQL's background processes, the rest
of the machine, and the time the hypervisor gave to other tenants) and what the busy
PostgreSQL backends were doing, sampled ten times a second from pg_stat_activity (running,
waiting on a row lock, flushing the WAL at commit, or idle in a transaction while the web
process works). No Celery worker runs during the turns; afterwards one drains the creates'
fan-out from the broker, so nothing is left queued.

Prints a table, writes bench/results/scale.json (or --output) with every turn, and ends with
``scale: list2/list1=<r> create2/create1=<r>``: the throughput of two processes over one's.

Reading the figure. This machine has 2 cores, shared by the load generator, PostgreSQL, Redis
and the servers, so a second web process here shows what contention for those cores costs or
gains on one machine, not what a second machine would add. On a VM the hypervisor may also
take some of them for other tenants ("stole" in the table): the create's ratio, whose bound is
a lock held across Python, moves with that far more than the list's.

- The list is bound by CPU in Python: 10 to 15 ms of the web process's CPU per list against
  about 3 ms of PostgreSQL's. One process runs its Python on one core at a time (the GIL,
  whatever its threads), so it keeps about one core busy and leaves the other partly idle; a
  second process puts that core to work, and the list gains until both cores are full (the
  load generator and PostgreSQL take their share of them).
- A create into one project is bound by the project's number row. Its transaction takes the
  row first (``sequence_next``: ``UPDATE ... RETURNING``) and holds it until it commits,
  through the rest of the transaction: the issue's insert, its labels, the status counter row
  (per project too), the history row and the event, each a round trip with Python in between.
  Every other create into the project waits meanwhile: the busy backends are mostly waiting on
  ``Lock:transactionid``, and the one holding the row is mostly "idle in transaction", waiting
  for its web process. With one process the holder also waits for the GIL behind the other
  threads' requests; with a second process it shares its process with fewer of them, so
  creates gain, but only up to one create per hold time of the row, with CPU to spare. The
  commit's WAL flush is a small part of that hold time here.

On separate machines (web nodes apart from each other and from PostgreSQL): the list should
scale with the web nodes, near-linearly, until PostgreSQL's CPU is the bound. Creates into one
project would not: they stay at one per hold time of the row (mostly Python inside the
transaction, so a faster web CPU, or taking the number and the counter last, shortens it).
Creates spread over many projects scale like the list, until PostgreSQL's CPU or the disk's
commit rate is the bound.
"""

import argparse
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
from datetime import UTC, datetime
from pathlib import Path

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
    project_seed,
    stop_on_terminate,
)

RESULTS = ROOT / "bench" / "results" / "scale.json"
WRITES = "Bench scale writes"
ENDPOINTS = ("list", "create")
SETUPS = {"one": 1, "two": 2}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def main() -> int:
    args = parse_args()
    stop_on_terminate()
    environment = environment_configure("bench.settings", RATE_LIMIT_ENABLED="0", DATABASE_POOL="1")
    database_ensure(os.environ["DATABASE_URL"])
    import django

    django.setup()
    from django.core.management import call_command

    started = time.monotonic()
    load_before = os.getloadavg()
    call_command("migrate", verbosity=0)
    project = project_seed(args.issues)
    writes = writes_project()
    key, token = api_key_for_owner()
    headers = {"Authorization": f"Bearer {token}", **FRESH_CONNECTION}
    paths = {
        "list": f"/v1/projects/{project['id']}/issues?status=open&per_page=50",
        "create": f"/v1/projects/{writes}/issues",
    }
    bodies = [json.dumps({"title": f"Scale {n}", "labels": ["scale"]}) for n in range(7)]
    servers = [Server(environment, workers=1, threads=args.threads) for _ in range(2)]
    measurements = {f"{endpoint} {setup}": [] for endpoint in ENDPOINTS for setup in SETUPS}
    load_name = ""
    try:
        for server in servers:
            server.start()
        for server in servers:
            server.wait_ready(timeout=60)
        for endpoint in ENDPOINTS:

            def targets(count: int, endpoint=endpoint) -> list[Target]:
                if endpoint == "list":
                    return [Target(s.base, [paths["list"]], headers) for s in servers[:count]]
                return [
                    Target(s.base, [paths["create"]], headers, "POST", bodies)
                    for s in servers[:count]
                ]

            if not args.smoke:
                for target in targets(2):
                    load_for(args, 1).drive(target, 1, warm=True)
            for round_ in range(1, args.rounds + 1):
                order = list(SETUPS) if round_ % 2 else list(reversed(SETUPS))
                for setup in order:
                    turn, load_name = measure_turn(args, servers[: SETUPS[setup]], targets)
                    name = f"{endpoint} {setup}"
                    measurements[name].append(turn)
                    print(
                        f"  round {round_}/{args.rounds} {name:<11}"
                        f" {turn['requests_per_second']:>8.1f} req/s",
                        flush=True,
                    )
    finally:
        for server in servers:
            server.stop()
        api_key_revoke(key)
        # Even after a failure: what the creates queued does not stay in the broker.
        drain = fanout_drain(environment, args.output.with_name(args.output.stem + "-worker.log"))
    elapsed = round(time.monotonic() - started, 1)
    report(args, project, writes, measurements, drain, load_name, load_before, elapsed)
    return 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--issues", type=int, default=10_000, help="Issues in the list's project.")
    parser.add_argument("--seconds", type=float, default=3, help="Seconds of load per turn.")
    parser.add_argument("--rounds", type=int, default=6, help="Turns per measurement.")
    parser.add_argument(
        "--connections", type=int, default=4, help="Concurrent connections in all (even)."
    )
    parser.add_argument("--threads", type=int, default=8, help="Threads per web process.")
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
    if args.connections < 2 or args.connections % 2:
        parser.error("--connections must be even, to split evenly between two servers")
    if args.smoke:
        args.issues, args.seconds, args.rounds, args.requests = 200, 1, 1, 120
    return args


def writes_project() -> int:
    """The project the creates go to (made on first use), apart from the list's."""
    from accounts.models import User
    from projects.models import Project
    from projects.services import project_create

    project = Project.objects.filter(workspace__name=WORKSPACE, name=WRITES).first()
    if project is None:
        workspace = Project.objects.filter(workspace__name=WORKSPACE).first().workspace
        owner = User.objects.get(email=OWNER)
        project = project_create(
            workspace=workspace, actor=owner, name=WRITES, visibility="private"
        )
    return project.pk


# A turn ----------------------------------------------------------------------------------------


def load_for(args, parts: int):
    """The load generator for one of ``parts`` equal shares of the load."""
    return load_generator(
        connections=args.connections // parts,
        requests=max(1, args.requests // parts),
        python=args.python_load,
    )


def measure_turn(args, servers: list[Server], targets) -> tuple[dict, str]:
    """The load on ``servers``, split evenly and sent at once; req/s summed, with where the
    CPU went and what PostgreSQL's backends were doing meanwhile."""
    parts = targets(len(servers))
    loads = [load_for(args, len(parts)) for _ in parts]
    results: list[dict | None] = [None] * len(parts)
    failures: list[BaseException] = []

    def drive(index: int) -> None:
        try:
            results[index] = loads[index].drive(parts[index], args.seconds)
        except BaseException as exc:  # noqa: BLE001 - SystemExit included: raised below
            failures.append(exc)

    sampler = WaitSampler()
    before = cpu_snapshot(servers)
    sampler.start()
    threads = [threading.Thread(target=drive, args=(i,)) for i in range(len(parts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    waits = sampler.stop()
    after = cpu_snapshot(servers)
    if failures:
        raise failures[0]
    requests = sum(result["requests"] for result in results)
    turn = {
        "requests": requests,
        "requests_per_second": round(sum(r["requests_per_second"] for r in results), 1),
        "p50_ms": max(result["p50_ms"] for result in results),
        "p99_ms": max(result["p99_ms"] for result in results),
        "per_server_requests_per_second": [result["requests_per_second"] for result in results],
        "cpu": cpu_used(before, after, requests),
        "postgres_backends": waits,
    }
    return turn, loads[0].name


# Where the time went ------------------------------------------------------------------------


def process_cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process (all its threads) so far; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def process_tree(pid: int) -> list[int]:
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return [pid]
    return [pid, *(int(child) for child in children)]


def postgres_pids() -> list[int]:
    """This database's backends and PostgreSQL's background processes (WAL writer,
    checkpointer...): what the load makes PostgreSQL do, not other databases' work."""
    import psycopg

    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as connection:
        rows = connection.execute(
            "SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
            " AND (datname = current_database() OR datname IS NULL)"
        ).fetchall()
    return [pid for (pid,) in rows]


def machine_cpu_seconds() -> tuple[float, float, float]:
    """(busy, stolen, all) CPU seconds of the machine so far, over every core: stolen is the
    time a VM's cores waited for the hypervisor (another tenant had them)."""
    values = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle, steal = values[3] + values[4], values[7]  # idle + iowait; steal
    total = sum(values[:8])  # user .. steal (guest time is inside user)
    return (total - idle - steal) / CLOCK_TICKS, steal / CLOCK_TICKS, total / CLOCK_TICKS


def cpu_snapshot(servers: list[Server]) -> dict:
    web = [pid for server in servers for pid in process_tree(server.process.pid)]
    postgres = postgres_pids()
    return {
        "at": time.monotonic(),
        "machine": machine_cpu_seconds(),
        "web": {pid: process_cpu_seconds(pid) for pid in web},
        "postgres": {pid: process_cpu_seconds(pid) for pid in postgres},
    }


def cpu_used(before: dict, after: dict, requests: int) -> dict:
    """Cores busy on average during the turn, by whom, and CPU milliseconds per request. The
    machine's busy share is taken of its own tick count (a VM's clock may run off the wall's)."""
    wall = after["at"] - before["at"]
    cores = os.cpu_count() or 1

    def spent(group: str) -> float:
        return sum(seconds - before[group].get(pid, 0.0) for pid, seconds in after[group].items())

    machine = zip(after["machine"], before["machine"], strict=True)
    busy, stolen, total = (now - then for now, then in machine)
    share = busy / max(1e-9, total)
    web, postgres = spent("web") / wall, spent("postgres") / wall
    per_request = 1000 * wall / max(1, requests)
    return {
        "busy_cores": round(share * cores, 2),
        "stolen_cores": round(stolen / max(1e-9, total) * cores, 2),
        "web_cores": round(web, 2),
        "postgres_cores": round(postgres, 2),
        "rest_cores": round(max(0.0, share * cores - web - postgres), 2),
        "web_ms_per_request": round(web * per_request, 2),
        "postgres_ms_per_request": round(postgres * per_request, 2),
    }


class WaitSampler:
    """What this database's busy backends are doing, ten times a second during a turn: the
    average number of backends in each state (the sampler's own connection left out)."""

    QUERY = (
        "SELECT state, wait_event_type, wait_event FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        " AND backend_type = 'client backend' AND state <> 'idle'"
    )
    INTERVAL = 0.1

    def __init__(self):
        self.samples = 0
        self.counts: dict[str, int] = {}
        self.events: dict[str, int] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> dict:
        self.done.set()
        self.thread.join(timeout=10)
        samples = max(1, self.samples)
        average = {kind: round(count / samples, 2) for kind, count in self.counts.items()}
        common = sorted(self.events.items(), key=lambda item: -item[1])[:6]
        return {
            "samples": self.samples,
            "average": average,
            "wait_events": {event: round(count / samples, 2) for event, count in common},
        }

    def _run(self) -> None:
        import psycopg

        with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as connection:
            while not self.done.wait(self.INTERVAL):
                self.samples += 1
                for state, kind, event in connection.execute(self.QUERY).fetchall():
                    category = self.category(state, kind, event)
                    self.counts[category] = self.counts.get(category, 0) + 1
                    if kind:
                        label = f"{state}: {kind}:{event}"
                        self.events[label] = self.events.get(label, 0) + 1

    @staticmethod
    def category(state: str, kind: str | None, event: str | None) -> str:
        if state and state.startswith("idle in transaction"):
            return "in_transaction_waiting_for_web"
        if kind is None:
            return "running"
        if kind == "Lock":
            return "row_lock"
        if (event or "").startswith("WAL") or kind == "IO":
            return "commit_wal"
        return "other"


# The creates' fan-out -----------------------------------------------------------------------


def fanout_drain(environment: dict, log: Path, timeout: float = 180) -> dict:
    """A Celery worker on the fan-out's queue until it is empty: each create queued its
    event's fan-out, and no worker ran during the turns."""
    import redis
    from django.conf import settings

    queue = settings.CELERY_TASK_ROUTES["notifications.tasks.event_fanout"]["queue"]
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    began = time.monotonic()
    queued = client.llen(queue)
    name = f"bench-scale-{secrets.token_hex(4)}@{socket.gethostname()}"
    command = [sys.executable, "-m", "celery", "-A", "collab", "worker", "-Q", queue, "-n", name]
    command += ["--concurrency", "2", "--loglevel", "WARNING", "--without-mingle"]
    command += ["--without-gossip"]
    log.parent.mkdir(parents=True, exist_ok=True)
    print(f"Draining {queued} queued fan-outs...", flush=True)
    with log.open("wb") as output:
        worker = subprocess.Popen(  # noqa: S603 - our own process
            command,
            cwd=ROOT,
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = began + timeout
        # Empty, and nothing taken but unfinished (a warm shutdown would put back what the
        # worker holds and has not started).
        while client.llen(queue) or worker_holds_tasks(name):
            if worker.poll() is not None:
                raise SystemExit(f"the worker exited:\n{log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise SystemExit(f"the worker did not drain {queue} in {timeout:.0f} s")
            time.sleep(0.5)
    finally:
        worker_stop(worker)
        client.close()
    return {"queue": queue, "queued": queued, "seconds": round(time.monotonic() - began, 1)}


def worker_holds_tasks(name: str) -> bool:
    """Whether the worker ``name`` runs or holds a task (or does not answer yet)."""
    from collab.celery import app

    inspect = app.control.inspect(destination=[name], timeout=1)
    active, reserved = inspect.active() or {}, inspect.reserved() or {}
    return name not in active or bool(active[name] or reserved.get(name))


def worker_stop(worker: subprocess.Popen) -> None:
    """A warm shutdown (the tasks it holds finish), then a kill if it does not come."""
    if worker.poll() is not None:
        return
    os.killpg(worker.pid, signal.SIGTERM)
    try:
        worker.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()


# Report --------------------------------------------------------------------------------------


def report(args, project, writes, measurements, drain, load_name, load_before, elapsed) -> None:
    rows = []
    for name, turns in measurements.items():
        endpoint, setup = name.split()
        best = max(turns, key=lambda turn: turn["requests_per_second"])
        rows.append(
            {
                "name": name,
                "endpoint": endpoint,
                "web_processes": SETUPS[setup],
                **best,
                "rounds_requests_per_second": [turn["requests_per_second"] for turn in turns],
                "rounds": turns,
            }
        )
    by_name = {row["name"]: row for row in rows}

    def ratio(endpoint: str) -> float:
        two, one = by_name[f"{endpoint} two"], by_name[f"{endpoint} one"]
        return round(two["requests_per_second"] / one["requests_per_second"], 2)

    ratios = {f"{endpoint}2/{endpoint}1": ratio(endpoint) for endpoint in ENDPOINTS}

    def median_ratio(endpoint: str) -> float:
        two, one = by_name[f"{endpoint} two"], by_name[f"{endpoint} one"]
        middle = [statistics.median(row["rounds_requests_per_second"]) for row in (two, one)]
        return round(middle[0] / middle[1], 2)

    # The same ratio from each side's median turn: how much the best-of figure owes to luck.
    medians = {f"{endpoint}2/{endpoint}1": median_ratio(endpoint) for endpoint in ENDPOINTS}

    print()
    header = (
        f"{'measurement':<11} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'busy':>5} {'web':>5}"
        f" {'pg':>5} {'rest':>5} {'stole':>5} {'web ms/req':>10} {'pg ms/req':>9}"
        "  postgres backends"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        cpu, backends = row["cpu"], row["postgres_backends"]["average"]
        shown = " ".join(f"{kind}={count}" for kind, count in sorted(backends.items()))
        print(
            f"{row['name']:<11} {row['requests_per_second']:>8.1f} {row['p50_ms']:>8.2f}"
            f" {row['p99_ms']:>8.2f} {cpu['busy_cores']:>5.2f} {cpu['web_cores']:>5.2f}"
            f" {cpu['postgres_cores']:>5.2f} {cpu['rest_cores']:>5.2f} {cpu['stolen_cores']:>5.2f}"
            f" {cpu['web_ms_per_request']:>10.2f} {cpu['postgres_ms_per_request']:>9.2f}  {shown}"
        )
    print(
        f"(The best turn of each. busy, web, pg, rest: cores in use on average, of"
        f" {os.cpu_count()}: all, the web processes, PostgreSQL, and the rest (the load"
        " generator, Redis, anything else running); stole: cores the hypervisor gave to"
        " other tenants meanwhile. Postgres backends: how many on average, doing what.)"
    )
    print(
        "Two over one, median turns: "
        + ", ".join(f"{name}={value:.2f}" for name, value in medians.items())
    )
    print(f"Fan-out drained afterwards: {drain['queued']} tasks in {drain['seconds']} s.")

    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
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
                    "seconds": args.seconds,
                    "rounds": args.rounds,
                    "connections": args.connections,
                    "web_processes_per_server": 1,
                    "threads": args.threads,
                    "smoke": args.smoke,
                },
                "project": project,
                "writes_project_id": writes,
                "requests": rows,
                "ratios": ratios,
                "ratios_of_median_turns": medians,
                "fanout_drain": drain,
                "elapsed_seconds": elapsed,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"Wrote {args.output}")
    print(
        f"scale: list2/list1={ratios['list2/list1']:.2f} "
        f"create2/create1={ratios['create2/create1']:.2f}"
    )


if __name__ == "__main__":
    sys.exit(main())
