"""A page's examples run as a reader would run them: its bash blocks in one bash session, its
python blocks in one Python namespace, each session in a process of its own.

Bash: the page's bash blocks, in order, are split into steps, each ending after the commands
that a shown output follows (see tests/docs/shapes.py), and written into one script run by
``bash`` with ``set -euo pipefail``. Each step is a brace group whose standard output and error
go to files of its own, so the test reads what each step printed; ``curl`` is a function that
adds ``-w`` writing the HTTP status to standard error (``%{stderr}``), so a step's statuses are
known too (an example that passes ``-w`` itself keeps its own, and shows no status). Before each
step the script records its number, so a failure names the step, by page and line, that did not
finish. A curl answering an error (4xx, 5xx) fails its step unless the step's shown output says
an error is meant: a status shown, or ``"success": false``.

Python: tests/docs/pyrunner.py execs the blocks in order, compiled under the page's name and
line numbers, so a traceback points into the page.

Both run from the repository's root, with ``.venv/bin`` first on the PATH, the environment of
the data folder the live server uses (so ``.venv/bin/python manage.py ...`` acts on it), and
``COLLAB_URL`` and ``COLLAB_API_KEY``; ``http://127.0.0.1:8000`` in the blocks becomes the live
server's address. The bash session runs first, then the python blocks: a python example may use
what a shell example of the page made (a user created by command), not the other way round.
"""

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from tests.docs.blocks import Block
from tests.docs.shapes import Shown, ShownSyntaxError, check, parse_shown, take_shown

ADDRESS = "http://127.0.0.1:8000"  # the server of ./run, as the pages write it
STATUS = re.compile(r"@@collab-docs-status (\d{3})")
# The HTTP status of every curl, on standard error (curl's -w `%{stderr}`, curl 7.63 and later).
CURL = "curl() { command curl -w '%{stderr}\\n@@collab-docs-status %{http_code}\\n' \"$@\"; }"
TAIL = 3000  # characters of output a failure quotes


@dataclass
class Step:
    block: Block
    line: int  # the page's line of its first line
    text: str
    shown: Shown | None

    @property
    def where(self) -> str:
        return f"{self.block.file}:{self.line}"


@dataclass
class Session:
    """What a page's examples run with: the live server and the data folder's environment."""

    url: str
    key: str
    env: dict[str, str]
    root: Path
    timeout: float = 240

    def environment(self) -> dict[str, str]:
        bins = [str(self.root / ".venv" / "bin"), str(Path(sys.executable).parent)]
        return {
            **self.env,
            "COLLAB_URL": self.url,
            "COLLAB_API_KEY": self.key,
            "PATH": os.pathsep.join([*bins, self.env.get("PATH", os.defpath)]),
        }


def split_steps(block: Block) -> list[Step]:
    """The block's steps: each ends with a shown output, the last one maybe with none."""
    lines = block.text.splitlines()
    steps: list[Step] = []
    start, index = 0, 0
    while index < len(lines):
        try:
            taken = take_shown(lines, index)
        except ShownSyntaxError as error:
            raise ShownSyntaxError(f"{block.file}:{block.line_of(index)}: {error}") from None
        if taken is None:
            index += 1
            continue
        text, status, after = taken
        where = f"{block.file}:{block.line_of(index)}"
        commands = "\n".join(lines[start:index])
        if not commands.strip() or all(
            not line.strip() or line.lstrip().startswith("#") for line in lines[start:index]
        ):
            raise ShownSyntaxError(f"{where}: output shown after no command")
        try:
            shape = parse_shown(text)
        except ShownSyntaxError as error:
            raise ShownSyntaxError(f"{where}: the shown output is not JSON: {error}") from None
        shown = Shown(block.line_of(index), status, shape, text)
        steps.append(Step(block, block.line_of(start), commands, shown))
        start = index = after
    rest = lines[start:]
    if any(line.strip() for line in rest):
        steps.append(Step(block, block.line_of(start), "\n".join(rest), None))
    return steps


def localize(text: str, url: str) -> str:
    return text.replace(ADDRESS, url)


def bash_script(steps: list[Step], url: str, folder: Path) -> str:
    parts = ["set -euo pipefail", f"__docs={shlex.quote(str(folder))}", CURL]
    for number, step in enumerate(steps):
        parts.append(f"printf '%s\\n' {number} >\"$__docs/at\"")
        parts.append("{\n" + localize(step.text, url) + "\n}" + _into(number))
    parts.append("printf '%s\\n' done >\"$__docs/at\"")
    return "\n".join(parts) + "\n"


def _into(number: int) -> str:
    return f' >"$__docs/{number}.out" 2>"$__docs/{number}.err"'


def _run(command: list[str], session: Session, log: Path) -> tuple[int | None, str]:
    """The command in a process group of its own, killed whole once it ends or times out: its
    exit status (None on timeout) and what it printed."""
    with log.open("wb") as output:
        process = subprocess.Popen(  # noqa: S603 - bash or python on the test's own files
            command,
            cwd=session.root,
            env=session.environment(),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            status: int | None = process.wait(timeout=session.timeout)
        except subprocess.TimeoutExpired:
            status = None
        finally:
            # Whatever it left running too, in its group or in sessions of their own (the
            # processes honcho starts, say).
            for pid in [-process.pid, *_descendants(process.pid)]:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            process.wait()
    return status, log.read_text(errors="replace")


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid``, from Linux's /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        below = children.get(todo.pop(), [])
        found += below
        todo += below
    return found


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= TAIL else "[...]\n" + text[-TAIL:]


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def run_bash(blocks: list[Block], session: Session, folder: Path) -> list[str]:
    """Runs the page's bash blocks in one session: the problems found, each naming its line."""
    steps: list[Step] = []
    problems = []
    for block in blocks:
        try:
            steps += split_steps(block)
        except ShownSyntaxError as error:
            problems.append(str(error))
    if problems or not steps:
        return problems
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "page.sh"
    script.write_text(bash_script(steps, session.url, folder))
    status, printed = _run(["bash", str(script)], session, folder / "bash.log")
    at = _read(folder / "at").strip()
    finished = len(steps) if at == "done" else int(at or 0)
    for number, step in enumerate(steps[:finished]):
        output = _read(folder / f"{number}.out")
        statuses = [int(found) for found in STATUS.findall(_read(folder / f"{number}.err"))]
        failed = [answer for answer in statuses if answer >= 400]
        if failed and not (step.shown and step.shown.shows_error):
            problems.append(
                f"{step.where}: curl answered {', '.join(map(str, failed))} in this step, and "
                "no error is shown (show the one meant: # 404 {...}):\n"
                f"{step.text}\n--- its output:\n{_tail(output)}"
            )
        if step.shown is None:
            continue
        found = check(step.shown, output, statuses[-1] if statuses else None)
        if found:
            problems.append(
                f"{step.block.file}:{step.shown.line}: the answer does not have the shape shown:\n"
                + "\n".join(f"  - {problem}" for problem in found)
                + f"\n  shown: {step.shown.text}\n  answer: {_tail(output)}"
            )
    if status == 0 and finished == len(steps):
        return problems
    step = steps[min(finished, len(steps) - 1)]
    how = "did not finish in time" if status is None else f"stopped (exit status {status})"
    err = _read(folder / f"{finished}.err")
    problems.append(
        f"{step.where}: the bash session {how} in this step:\n{step.text}\n"
        f"--- its output:\n{_tail(_read(folder / f'{finished}.out'))}\n"
        f"--- its errors:\n{_tail(STATUS.sub('', err))}\n--- bash:\n{_tail(printed)}"
    )
    return problems


def run_python(blocks: list[Block], session: Session, folder: Path) -> list[str]:
    """Runs the page's python blocks in one namespace: the problems found, naming the block."""
    if not blocks:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    given = folder / "blocks.json"
    progress = folder / "progress"
    given.write_text(
        json.dumps(
            [
                {"file": b.file, "line": b.line, "text": localize(b.text, session.url)}
                for b in blocks
            ]
        )
    )
    command = [sys.executable, "-m", "tests.docs.pyrunner", str(given), str(progress)]
    status, printed = _run(command, session, folder / "python.log")
    done = len(_read(progress).splitlines())
    if status == 0 and done == len(blocks):
        return []
    block = blocks[min(done, len(blocks) - 1)]
    how = "did not finish in time" if status is None else f"failed (exit status {status})"
    return [f"{block.where}: the python block {how}:\n{block.text}\n--- output:\n{_tail(printed)}"]
