"""Schemathesis as a client author runs it: the ``st`` command against a live server on the
embedded default (SQLite, no Redis) with a worker beside it, as ``./run`` starts them, every
check, every phase including the stateful one, a fixed seed and 10 examples per operation (the
stateful phase has its own bound, in the config). Any finding fails the test with
schemathesis's own report. What the schema cannot state is configured, with its reason, in
``tests/fuzz/schemathesis.toml`` and ``tests/fuzz/hooks.py``.

The in-process suite (tests/api/test_schemathesis.py) steers requests onto a known world;
this one starts from an empty service, as ``./run`` leaves it, and finds its own way: the
stateful phase follows the schema's links (collab/api/schema_links.py) from what it creates
to the operations on it. What no generator can draw, the test makes and gives it (the hooks
put it in the stateful phase's requests): a git origin to register as a repository, with
branches to open pull requests between; a webhook receiver on 127.0.0.1; a second user of the
workspace, to add to a project and whose JWT manages keys (an API key, the run's credential,
cannot). The worker runs the syncs a repository's pull requests need, and the deliveries.

The NDJSON report is read back to hold that links are followed and that the operations under a
create are reached with a real resource (an answer that found it: ``FOUND``), but for those
listed, with the reason, in ``UNREACHABLE``. Whether a link leads to what it names is checked by
schemathesis itself (ensure_resource_availability, use_after_free) and, link by link, by
tests/api/test_schema_promises.py.
"""

import json
import os
import re
import secrets
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import httpx
import pytest
import requests

from tests import liveserver
from tests.fuzz import steering
from tests.liveserver import ROOT, asgi_server, celery_worker, http_get, manage

CONFIG = Path(__file__).with_name("schemathesis.toml")
# Ten examples per operation in the examples and fuzzing phases (the coverage phase draws its own
# cases, the stateful phase has its bound in the config): every check and every phase in about
# two minutes of one core, half the time 25 took, so that the lane beside the suite ends first.
EXAMPLES = os.environ.get("COLLAB_FUZZ_EXAMPLES", "10")
SEED = os.environ.get("COLLAB_FUZZ_SEED", "1")

# Its lane runs for minutes on purpose (./test): a ceiling of its own, above the suite's.
pytestmark = [
    pytest.mark.slow(seconds=140),
    pytest.mark.live,
    pytest.mark.fuzz,
    pytest.mark.timeout(1200),
]

# The second user: their JWT manages keys (tests/fuzz/schemathesis.toml), and projects add them.
KEY_KEEPER = "keeper@example.test"
# The pull requests the stateful phase opens (tests/fuzz/hooks.py): branches of the origin
# fixture (tests/conftest.py) that main does not contain, into main.
PULLS = "feature:main conflict:main docs:main"
# The creates given what no generator can draw (the JWT, the steering): each, steered as the
# hooks steer it, must make something (a push notification, signed, is accepted: 202), or what
# it leads to goes unreached. Whether the stateful phase draws one is the seed's affair; the
# test makes each once itself after the run, on the same server, and checks its answer.
STEERED = {
    "POST /v1/api-keys": 201,
    steering.MEMBERS: 201,
    steering.REPOSITORIES: 201,
    steering.WEBHOOKS: 201,
    steering.PULLS: 201,
    steering.PUSH: 202,
}
# Operations a create links to that the run cannot reach with a real resource, with the reason:
# none since the test gives the run what it could not draw.
UNREACHABLE: dict[str, str] = {}
# What the stateful phase must at least do. Its steps are drawn at random, and what a server
# answers (its identifiers, and how soon the worker got to a sync or an export) changes the
# draws that follow. With this seed and bound, before a workspace's exports added six links to
# the schema, it followed 64 links and reached 56 of the 64 operations that have a create;
# since, the same draws spread over more rules: 53 links and 49 of 68 operations on a quiet
# machine, 49 links beside the whole suite on a slow one. (50 scenarios instead of 40 drew
# worse, 47 and 46: more is not more here.) With 10 examples per operation instead of 25: 54
# links and 45 operations, alone; beside the whole suite on a slow machine loaded further,
# 42 operations (the worker's syncs and exports answer later, and the draws follow). Since the
# hooks wait for what the worker does that an answer shows (a sync, an export, the fan-out a
# webhook's deliveries list), the run is the same every time: 54 links, 122 scenarios and
# 2,122 calls on two runs in a row (before, the same seed gave 52, 37, 36 or 33 links, by how
# soon the worker came to an export or a fan-out). The floors hold what the phase is for, links
# followed from creates to the operations on them (a broken link or schema would leave a
# handful).
LINKS_FOLLOWED_AT_LEAST = 40
REACHED_AT_LEAST = 36
# Answers that say the operation found what its path names: any success, and the refusals
# made on the state or the body of a resource that exists (a 400 or a 404 may come before).
FOUND = {409, 412, 422}


def embedded_env(data_dir: Path) -> dict[str, str]:
    """The environment of ``./run``, in a data directory of the test's own. The limiter is on
    (so every answer carries its headers) with budgets no run reaches; an event stream ends
    after a quarter of a second, as a client with a short read timeout would leave it; a JWT
    outlives the run (its timeout)."""
    return liveserver.embedded_env(
        data_dir,
        RATE_LIMIT_ENABLED="1",
        RATE_LIMIT_STANDARD="1000000",
        RATE_LIMIT_ANONYMOUS="1000000",
        EVENT_STREAM_MAX_SECONDS="0.25",
        JWT_ACCESS_TOKEN_MINUTES="30",
    )


def test_every_check_every_phase_finds_nothing(tmp_path, origin, receiver):
    env = embedded_env(tmp_path / "data")
    manage(env, "migrate", "--noinput", "-v0")
    announced = manage(env, "bootstrap", "--port", "8000")
    key = re.search(r"clb_\w+", announced)
    assert key, announced
    # One argument, not two: a drawn password may begin with "-", which argparse takes for an
    # option of its own when it stands apart.
    password = secrets.token_urlsafe(18)
    keeper = manage(
        env,
        "create_user",
        "--email",
        KEY_KEEPER,
        f"--password={password}",
        "--workspace",
        "Default",
    )
    member = re.search(r"\(id (\d+)\)", keeper)
    assert member, keeper
    report_path = tmp_path / "report.ndjson"
    # A worker without beat (./run's has one): no operation is reached through a periodic
    # task, and they would only add to the run's time.
    with asgi_server(env, tmp_path, workers=2) as port, celery_worker(env, tmp_path, beat=False):
        status, document = http_get(port, "/v1/schema?format=json")
        assert status == 200
        signed_in = httpx.post(
            f"http://127.0.0.1:{port}/v1/auth/login",
            json={"email": KEY_KEEPER, "password": password},
        )
        assert signed_in.status_code == 200, signed_in.text
        token = signed_in.json()["data"]["access_token"]
        given = {
            "COLLAB_FUZZ_ACCESS_TOKEN": token,
            "COLLAB_FUZZ_ORIGIN": str(origin.path),
            "COLLAB_FUZZ_PULLS": PULLS,
            "COLLAB_FUZZ_RECEIVER": receiver.url,
            "COLLAB_FUZZ_MEMBER": member.group(1),
        }
        run = subprocess.run(  # noqa: S603 - our own command, fixed arguments
            [
                str(Path(sys.executable).with_name("st")),
                "--config-file",
                str(CONFIG),
                "--no-color",
                "run",
                f"http://127.0.0.1:{port}/v1/schema",
                "--header",
                f"Authorization: Bearer {key.group()}",
                "--checks",
                "all",
                "--max-examples",
                EXAMPLES,
                "--seed",
                SEED,
                "--report",
                "ndjson",
                "--report-ndjson-path",
                str(report_path),
            ],
            cwd=tmp_path,  # where schemathesis keeps its cache of the run
            env={**env, "PYTHONPATH": str(ROOT), **given},
            capture_output=True,
            text=True,
            timeout=1100,
        )
        made = steered_creates(port, key.group(), token, steering.Steering.from_environ(given))
    report = run.stdout + run.stderr
    summary = report[report.find("SUMMARY") :] if "SUMMARY" in report else report[-5000:]
    assert run.returncode == 0, report[-20000:]
    assert re.search(r"\b0 failures\b|passed", summary), summary
    assert "Stateful" in report and "Fuzzing" in report and "Coverage" in report

    assert made == STEERED
    calls = stateful_calls(report_path)
    created = link_targets(json.loads(document), methods={"post"})
    assert set(UNREACHABLE) <= created, set(UNREACHABLE) - created
    followed = {link for steps in calls.values() for _status, link in steps if link}
    assert len(followed) >= LINKS_FOLLOWED_AT_LEAST, sorted(followed)
    reached = {
        operation
        for operation in created - set(UNREACHABLE)
        if any(status in FOUND or status < 400 for status, _link in calls.get(operation, []))
    }
    unreached = sorted(created - set(UNREACHABLE) - reached)
    assert len(reached) >= REACHED_AT_LEAST, unreached


def steered_creates(port: int, key: str, token: str, steer: steering.Steering) -> dict[str, int]:
    """Each steered create made once, its body steered as the hooks steer the stateful phase's:
    the status of each, by "METHOD /path"."""
    made: dict[str, int] = {}
    api = requests.Session()
    api.headers["Authorization"] = f"Bearer {key}"
    base = f"http://127.0.0.1:{port}/v1"

    def create(label: str, path: str, body: dict, **kwargs) -> dict:
        steer.body(label, body)
        answer = api.post(base + path, json=body, timeout=30, **kwargs)
        made[label] = answer.status_code
        return answer.json().get("data") or {}

    workspace = api.get(f"{base}/workspaces", timeout=30).json()["data"][0]["id"]
    answer = api.post(f"{base}/projects", json={"name": "Steered", "workspace_id": workspace})
    project = answer.json()["data"]["id"]
    create(
        "POST /v1/api-keys",
        "/api-keys",
        {"name": "steered", "scopes": ["issues:read"]},
        headers={"Authorization": f"Bearer {token}"},
    )
    create(steering.MEMBERS, f"/projects/{project}/members", {})
    create(steering.WEBHOOKS, f"/projects/{project}/webhooks", {})
    repository = create(
        steering.REPOSITORIES, f"/projects/{project}/repositories", {"name": "steered"}
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # its first sync, as a client waits for it
        shown = api.get(f"{base}/repositories/{repository['id']}", timeout=30).json()["data"]
        if shown["sync_status"] in {"synced", "failed"}:
            break
        time.sleep(0.1)
    assert shown["sync_status"] == "synced", shown
    create(steering.PULLS, f"/repositories/{repository['id']}/pulls", {"title": "Steered"})
    push = {"ref": "refs/heads/main"}
    answer = requests.post(
        f"{base}/repositories/{repository['id']}/push",
        json=push,
        headers={
            "X-Hub-Signature-256": steering.push_signature(repository["webhook_secret"], push)
        },
        timeout=30,
    )
    made[steering.PUSH] = answer.status_code
    return made


def link_targets(document: dict, methods: set[str]) -> set[str]:
    """The operations the answers of ``methods`` link to, as "METHOD /path"."""
    labels = {
        operation["operationId"]: f"{method.upper()} {path}"
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }
    return {
        labels[link["operationId"]]
        for item in document["paths"].values()
        for method, operation in item.items()
        if method in methods
        for response in operation["responses"].values()
        for link in response.get("links", {}).values()
    }


def stateful_calls(report: Path) -> dict[str, list[tuple[int, str | None]]]:
    """Each call of the stateful phase, by operation: its status, and the link whose values
    it took (None if drawn at random)."""
    calls: dict[str, list[tuple[int, str | None]]] = defaultdict(list)
    with report.open() as events:
        for line in events:
            if '"ScenarioFinished"' not in line or '"stateful"' not in line:
                continue
            event = json.loads(line)["ScenarioFinished"]
            recorder = event["recorder"]
            if event["phase"] != "stateful" or "cases" not in recorder:
                continue
            for case_id, case in recorder["cases"].items():
                response = (recorder["interactions"].get(case_id) or {}).get("response")
                if response is not None:
                    value = case["value"]
                    label = f"{value['method']} {value['path']}"
                    calls[label].append((response["status_code"], _link_taken(case)))
    return calls


def _link_taken(case: dict) -> str | None:
    """The link a case took every value of (schemathesis leaves some out at times, to
    explore), or None."""
    transition = case.get("transition")
    if not transition or not case.get("is_transition_applied"):
        return None
    for place, parameters in transition["parameters"].items():
        for name, extracted in parameters.items():
            if case["value"].get(place, {}).get(name) != extracted["value"]:
                return None
    return transition["id"]
