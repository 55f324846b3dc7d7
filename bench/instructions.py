"""CPU instructions per request of the issue list and of its bare baseline, with callgrind.

Run it with one command (from the repository's root), after bench/issue_list.py has seeded
its projects (it reuses the small one):

    .venv/bin/python bench/instructions.py

Throughput on a machine shared with other work moves with their load; the number of
instructions a request executes does not. Each case is served in-process through the WSGI
application (production settings plus the baseline's route, the rate limiter off, the same
database as bench/issue_list.py): warmed with --warm requests, then --requests more, under
``valgrind --tool=callgrind`` (``apt-get install -y valgrind``). Two runs per case, one
without the measured requests, and the difference divided by --requests is the cost of one
request in this process: routing, middleware, authentication, queries as the client sees
them (not PostgreSQL's own work), rendering. Prints a table and writes
bench/results/instructions.json.
"""

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from harness import ROOT, environment_configure

RESULTS = ROOT / "bench" / "results" / "instructions.json"
SMALL_PROJECT = "Bench 10000"
QUERY = "status=open&per_page=50"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=40, help="Measured requests per case.")
    parser.add_argument("--warm", type=int, default=20, help="Requests before measuring.")
    parser.add_argument("--project", default=SMALL_PROJECT, help="Project measured.")
    # Internal: serve one case in this process (what callgrind runs).
    parser.add_argument("--serve", nargs=2, metavar=("PATH", "COUNT"), help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    environment_configure("bench.settings", RATE_LIMIT_ENABLED="0")
    sys.path.insert(0, str(ROOT))
    if args.serve:
        serve(args.serve[0], int(args.serve[1]), args.warm)
        return 0
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is needed: apt-get install -y valgrind")

    import django

    django.setup()
    from accounts.models import User
    from accounts.services import api_key_create, api_key_revoke
    from collab.api.scopes import ALL_SCOPES
    from projects.models import Project

    project = Project.objects.filter(name=args.project).first()
    if project is None:
        sys.exit(f"No project '{args.project}': run bench/issue_list.py first.")
    owner = User.objects.get(email="owner@demo.collab.localhost")
    key, plaintext = api_key_create(
        user=owner, name="instructions", scopes=list(ALL_SCOPES), expires_in="1d"
    )
    cases = {}
    for page in (1, 20):
        query = QUERY if page == 1 else f"{QUERY}&page={page}"
        cases[f"bare p{page}"] = f"/bench/bare/projects/{project.pk}/issues?{query}"
        cases[f"list p{page}"] = f"/v1/projects/{project.pk}/issues?{query}"
    environment = {**os.environ, "BENCH_API_KEY": plaintext, "PYTHONHASHSEED": "0"}
    try:
        # Two at a time: one per core.
        with ThreadPoolExecutor(2) as pool:
            futures = {
                (name, count): pool.submit(instructions, path, count, args.warm, environment)
                for name, path in cases.items()
                for count in (0, args.requests)
            }
            counts = {item: future.result() for item, future in futures.items()}
    finally:
        api_key_revoke(api_key=key)

    rows = {
        name: (counts[(name, args.requests)] - counts[(name, 0)]) / args.requests for name in cases
    }
    print(f"\n{'case':<10} {'M instructions/request':>24} {'bare/list':>10}")
    for name, per_request in rows.items():
        bare = rows[name.replace("list", "bare")]
        shown = f"{bare / per_request:.2f}" if name.startswith("list") else ""
        print(f"{name:<10} {per_request / 1e6:>24.2f} {shown:>10}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "ran_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "project": args.project,
                "requests": args.requests,
                "warm": args.warm,
                "paths": cases,
                "instructions_per_request": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"Wrote {RESULTS.relative_to(ROOT)}")
    return 0


def instructions(path: str, count: int, warm: int, environment: dict) -> int:
    """Instructions of a whole run of this script serving ``count`` requests of ``path``."""
    with tempfile.TemporaryDirectory() as directory:
        output = Path(directory) / "callgrind.out"
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={output}",
            sys.executable,
            __file__,
            "--serve",
            path,
            str(count),
            "--warm",
            str(warm),
        ]
        subprocess.run(command, env=environment, check=True, capture_output=True)
        totals = re.search(r"^(?:summary|totals): (\d+)", output.read_text(), re.MULTILINE)
        return int(totals.group(1))


def serve(path: str, count: int, warm: int) -> None:
    import django

    django.setup()
    from django.core.wsgi import get_wsgi_application

    application = get_wsgi_application()
    route, _, query = path.partition("?")
    headers = {}
    if route.startswith("/v1/"):
        headers["HTTP_AUTHORIZATION"] = f"Bearer {os.environ['BENCH_API_KEY']}"

    def request() -> None:
        environ = {
            "REQUEST_METHOD": "GET",
            "PATH_INFO": route,
            "QUERY_STRING": query,
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": "127.0.0.1",
            "REMOTE_ADDR": "127.0.0.1",
            "wsgi.input": io.BytesIO(b""),
            "wsgi.errors": sys.stderr,
            "wsgi.url_scheme": "http",
            "wsgi.version": (1, 0),
            "wsgi.multithread": True,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
            **headers,
        }
        status = []
        body = b"".join(
            application(environ, lambda line, _headers, _info=None: status.append(line))
        )
        if not status[0].startswith("200"):
            raise SystemExit(f"{path}: {status[0]} {body[:300]!r}")

    for _ in range(warm + count):
        request()


if __name__ == "__main__":
    sys.exit(main())
