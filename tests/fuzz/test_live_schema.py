"""Schemathesis as a client author runs it: the ``st`` command against a live server on the
embedded default (SQLite, no Redis), every check, every phase including the stateful one,
a fixed seed and 25 examples per operation (the stateful phase has its own bound, in the
config). Any finding fails the test with schemathesis's own report. What the schema cannot
state is configured, with its reason, in ``tests/fuzz/schemathesis.toml``.

The in-process suite (tests/api/test_schemathesis.py) steers requests onto a known world;
this one starts from an empty service, as ``./run`` leaves it, and finds its own way: the
stateful phase follows the schema's links (collab/api/schema_links.py) from what it creates
to the operations on it. Its NDJSON report is read back to hold that links are followed and
that the operations under a create are reached with a real resource (an answer that found
it: ``FOUND``), but for those listed, with the reason, in ``UNREACHABLE``. Whether a link
leads to what it names is checked by schemathesis itself (ensure_resource_availability,
use_after_free) and, link by link, by tests/api/test_schema_promises.py.
"""

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests import liveserver
from tests.liveserver import ROOT, asgi_server, http_get, manage

CONFIG = Path(__file__).with_name("schemathesis.toml")
EXAMPLES = os.environ.get("COLLAB_FUZZ_EXAMPLES", "25")
SEED = os.environ.get("COLLAB_FUZZ_SEED", "1")

pytestmark = [pytest.mark.slow(seconds=140), pytest.mark.live, pytest.mark.fuzz]

# Operations a create links to that no generated request can give a real resource here.
_REPOSITORY = (
    "a repository's clone URL must be a git remote this server can fetch, which no generated "
    "URL is (422): no repository, and so no pull request, exists to reach"
)
_WEBHOOK = (
    "a webhook's URL must name a host that resolves, which no generated URL does (422): no "
    "webhook, and so no delivery, exists to reach"
)
_KEYS = "key management refuses API keys, the run's credential (403)"
UNREACHABLE = {
    "GET /v1/api-keys/{id}": _KEYS,
    "DELETE /v1/api-keys/{id}": _KEYS,
    "DELETE /v1/projects/{id}/members/{user_id}": "adding a member takes another user of the "
    "workspace, and the run has one user, who created the project (and is its member already)",
    **dict.fromkeys(
        [
            "GET /v1/repositories/{id}",
            "DELETE /v1/repositories/{id}",
            "GET /v1/repositories/{id}/branches",
            "GET /v1/repositories/{id}/commits",
            "POST /v1/repositories/{id}/sync",
            "GET /v1/repositories/{repository_id}/pulls",
            "POST /v1/repositories/{repository_id}/pulls",
            "POST /v1/repositories/{repository_id}/push",
            "GET /v1/pulls/{id}",
            "PATCH /v1/pulls/{id}",
            "POST /v1/pulls/{id}/merge",
            "GET /v1/pulls/{pull_id}/comments",
            "POST /v1/pulls/{pull_id}/comments",
            "GET /v1/pulls/{pull_id}/reviews",
            "POST /v1/pulls/{pull_id}/reviews",
        ],
        _REPOSITORY,
    ),
    **dict.fromkeys(
        [
            "GET /v1/webhooks/{id}",
            "PATCH /v1/webhooks/{id}",
            "DELETE /v1/webhooks/{id}",
            "GET /v1/webhooks/{id}/deliveries",
            "POST /v1/webhooks/{id}/ping",
            "GET /v1/webhooks/{id}/deliveries/{delivery_id}",
            "POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver",
        ],
        _WEBHOOK,
    ),
}
# What the stateful phase must at least do. Its steps are drawn at random, and what a server
# answers (its identifiers, its timing) changes the draws that follow: with this seed and
# bound it followed 37 to 39 of the schema's links and reached 32 to 36 of the 39 operations
# that have a create and are not listed above; the floors leave room for that.
LINKS_FOLLOWED_AT_LEAST = 25
REACHED_AT_LEAST = 26
# Answers that say the operation found what its path names: any success, and the refusals
# made on the state or the body of a resource that exists (a 400 or a 404 may come before).
FOUND = {409, 412, 422}


def embedded_env(data_dir: Path) -> dict[str, str]:
    """The environment of ``./run``, in a data directory of the test's own. The limiter is on
    (so every answer carries its headers) with budgets no run reaches; an event stream ends
    after a quarter of a second, as a client with a short read timeout would leave it."""
    return liveserver.embedded_env(
        data_dir,
        RATE_LIMIT_ENABLED="1",
        RATE_LIMIT_STANDARD="1000000",
        RATE_LIMIT_ANONYMOUS="1000000",
        EVENT_STREAM_MAX_SECONDS="0.25",
    )


def test_every_check_every_phase_finds_nothing(tmp_path):
    env = embedded_env(tmp_path / "data")
    manage(env, "migrate", "--noinput", "-v0")
    announced = manage(env, "bootstrap", "--port", "8000")
    key = re.search(r"clb_\w+", announced)
    assert key, announced
    report_path = tmp_path / "report.ndjson"
    with asgi_server(env, tmp_path, workers=2) as port:
        status, document = http_get(port, "/v1/schema?format=json")
        assert status == 200
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
            env={**env, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=1100,
        )
    report = run.stdout + run.stderr
    summary = report[report.find("SUMMARY") :] if "SUMMARY" in report else report[-5000:]
    assert run.returncode == 0, report[-20000:]
    assert re.search(r"\b0 failures\b|passed", summary), summary
    assert "Stateful" in report and "Fuzzing" in report and "Coverage" in report

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
