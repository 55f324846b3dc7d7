"""Every example of the docs runs against a live server, and its shown output is its answer's.

The convention (CONTRIBUTING.md): ``bash`` blocks (curl and shell; ``sh`` and ``shell`` too)
and ``python`` blocks (the client library) in README.md, docs/**/*.md and the root pages the
site includes are examples. One server serves the whole module, started as ``./run`` starts it
on its embedded default (SQLite, no Redis, in a data folder of its own; migrate, ``bootstrap``,
whose API key is ``COLLAB_API_KEY``; gunicorn with two uvicorn workers; a Celery worker with
beat, prefork with two processes). One test per page runs its bash blocks in one bash session
and its python blocks in one namespace (tests/docs/sessions.py), and checks each shown output
against the real answer (tests/docs/shapes.py): the keys shown at every level, ``"success"``,
the status when shown; values are not compared, and ``...`` elides. A failure names the page's
line. A block that cannot run is preceded by ``<!-- not-run: the reason -->``
(tests/docs/blocks.py), and a block of any other language may not hold ``curl `` or
``collab_client`` unless it too gives such a reason: no example escapes the test.
"""

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.blocks import Page, collect, parse
from tests.docs.sessions import Session, run_bash, run_python
from tests.liveserver import ROOT, Worker, asgi_server, embedded_env, free_port, manage

PAGES = collect(ROOT)
RUN = [page for page in PAGES if any(block.runs for block in page.blocks)]
SAMPLES = Path(__file__).with_name("samples")
LEAKS = ("curl ", "collab_client")


@pytest.fixture(scope="module")
def session(tmp_path_factory, embedded_database) -> Iterator[Session]:
    """The module's live server, as ``./run`` starts it, and what the examples run with."""
    if not (ROOT / ".venv" / "bin" / "python").exists():
        pytest.skip("the examples call .venv/bin/python: create it (./test does)")
    folder = tmp_path_factory.mktemp("docs-live")
    env = embedded_env(folder / "var")
    port = free_port()
    embedded_database(folder / "var")
    announced = manage(env, "bootstrap", "--port", str(port))
    key = re.search(r"clb_\w+", announced)
    assert key, announced
    worker = Worker(env, folder, pool="prefork", concurrency=2).start()
    try:
        with asgi_server(env, folder, workers=2, port=port):
            yield Session(f"http://127.0.0.1:{port}", key.group(), env, ROOT)
    finally:
        worker.kill()  # its queue and data folder go with the test: nothing to finish


def run_page(page: Page, session: Session, folder: Path) -> list[str]:
    bash = [block for block in page.blocks if block.runs and block.kind == "bash"]
    python = [block for block in page.blocks if block.runs and block.kind == "python"]
    return run_bash(bash, session, folder / "bash") + run_python(python, session, folder / "py")


@pytest.mark.slow(seconds=2)
@pytest.mark.live
@pytest.mark.parametrize("page", RUN, ids=[page.file for page in RUN])
def test_the_examples_of_the_page_run(page, session, tmp_path):
    problems = run_page(page, session, tmp_path)
    assert not problems, "\n\n".join(problems)


def test_every_runnable_block_runs_or_says_why():
    """A runnable block either runs (in its page's test above, which fails unless every block
    and step of the page ran to its end) or is marked not-run with a reason; a marker must sit
    on the line right before a fence, or it marks nothing."""
    problems = []
    for page in PAGES:
        for block in page.blocks:
            if block.not_run == "":
                problems.append(f"{block.where}: not-run needs a reason: <!-- not-run: why -->")
        for line in page.stray_markers:
            problems.append(f"{page.file}:{line}: a not-run marker not right before a fence")
    assert not problems, "\n".join(problems)


def test_no_example_hides_in_another_language():
    """A block of a language that never runs may not hold a curl command or use the client,
    unless it says why with a not-run marker (a transcript, a listing of files)."""
    problems = [
        f"{block.where}: a {block.language or 'plain'} block holds {leak.strip()!r}: "
        "write it as a bash or python example (marked not-run if it cannot run)"
        for page in PAGES
        for block in page.blocks
        if block.kind is None and block.not_run is None
        for leak in LEAKS
        if leak in block.text
    ]
    assert not problems, "\n".join(problems)


def sample(name: str) -> Page:
    path = SAMPLES / name
    return parse(path.read_text(), path.relative_to(ROOT).as_posix())


@pytest.mark.slow(seconds=2)
@pytest.mark.live
def test_a_sample_page_in_every_form_runs(session, tmp_path):
    assert run_page(sample("good.md"), session, tmp_path) == []


@pytest.mark.slow(seconds=2)
@pytest.mark.live
def test_drift_in_a_sample_page_is_reported_at_its_line(session, tmp_path):
    problems = run_page(sample("drift.md"), session, tmp_path)
    page = "tests/docs/samples/drift.md"
    assert len(problems) == 6, "\n\n".join(problems)
    missing, status, success, error, stopped, raised = problems
    assert missing.startswith(f"{page}:10: the answer does not have the shape shown")
    assert "data: no key 'colour'" in missing
    assert status.startswith(f"{page}:15:") and "shown status 201, got status 404" in status
    assert success.startswith(f"{page}:17:") and 'shown "success": false, got true' in success
    assert error.startswith(f"{page}:18: curl answered 404 in this step, and no error is shown")
    assert stopped.startswith(f"{page}:22: the bash session stopped (exit status 3)")
    assert "printed before the failure" in stopped
    assert raised.startswith(f"{page}:34: the python block failed")
    assert 'File "tests/docs/samples/drift.md", line 38' in raised
    assert "KeyError: 'colour'" in raised
