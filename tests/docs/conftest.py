"""The docs site, built once for the modules that read it."""

import os
import subprocess
import sys

import pytest

from tests.liveserver import ROOT


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "--site-dir", str(out)]
    done = subprocess.run(  # noqa: S603 - mkdocs on the repository's own docs
        command,
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return out
