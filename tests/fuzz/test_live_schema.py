"""Schemathesis as a client author runs it: the ``st`` command against a live server on the
embedded default (SQLite, no Redis), every check, every phase including the stateful one,
a fixed seed and 25 examples per operation. Any finding fails the test with schemathesis's
own report. What the schema cannot state is configured, with its reason, in
``tests/fuzz/schemathesis.toml``.

The in-process suite (tests/api/test_schemathesis.py) steers requests onto a known world;
this one starts from an empty service, as ``./run`` leaves it, and finds its own way.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests import liveserver
from tests.liveserver import ROOT, asgi_server, manage

CONFIG = Path(__file__).with_name("schemathesis.toml")
EXAMPLES = os.environ.get("COLLAB_FUZZ_EXAMPLES", "25")
SEED = os.environ.get("COLLAB_FUZZ_SEED", "1")

pytestmark = [pytest.mark.slow(seconds=140), pytest.mark.live, pytest.mark.fuzz]


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
    with asgi_server(env, tmp_path, workers=2) as port:
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
