"""Real git repositories in temporary folders, for every test that needs one.

An ``Origin`` is a bare repository (what a git server holds) with a working clone next to it
that makes commits and pushes them, as a developer would. The ``origin`` fixture
(tests/conftest.py) is a copy of one built once per run; its branches:

- ``main``: two commits (README, app.txt), then a third that changes app.txt's first line;
- ``feature``: from the second main commit, adds feature.txt ("Add the feature, fixes #1");
- ``conflict``: from the second main commit, changes app.txt's first line another way;
- ``docs``: from main's tip, adds docs.txt (so it can fast-forward main).
"""

import shutil
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Ada Author",
    "GIT_AUTHOR_EMAIL": "ada@example.test",
    "GIT_COMMITTER_NAME": "Ada Author",
    "GIT_COMMITTER_EMAIL": "ada@example.test",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


def git(*args: str, cwd: Path, env: dict | None = None) -> str:
    result = subprocess.run(  # noqa: S603
        ["git", *args],  # noqa: S607
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(cwd), **GIT_ENV, **(env or {})},
    )
    return result.stdout.strip()


class Origin:
    def __init__(self, root: Path, *, init: bool = True):
        self.path = root / "origin.git"
        self.work = root / "work"
        if init:
            git("init", "--bare", "--quiet", "-b", "main", str(self.path), cwd=root)
            git("clone", "--quiet", str(self.path), str(self.work), cwd=root)
            git("checkout", "--quiet", "-b", "main", cwd=self.work)

    def copy_to(self, root: Path) -> "Origin":
        """A copy of this origin and its working clone under ``root``, the clone pushing to the
        copy: the same commits (the same shas), for one command instead of a rebuild."""
        copy = Origin(root, init=False)
        shutil.copytree(self.path, copy.path, symlinks=True)
        shutil.copytree(self.work, copy.work, symlinks=True)
        git("remote", "set-url", "origin", str(copy.path), cwd=copy.work)
        return copy

    @property
    def url(self) -> str:
        return self.path.as_uri()

    def commit(self, branch: str, files: dict[str, str], message: str, *, start=None) -> str:
        """Commit ``files`` on ``branch`` (created from ``start`` when new) and push it."""
        if start is not None:
            git("checkout", "--quiet", "-B", branch, start, cwd=self.work)
        elif git("symbolic-ref", "--short", "HEAD", cwd=self.work) != branch:
            git("checkout", "--quiet", branch, cwd=self.work)
        for name, content in files.items():
            (self.work / name).write_text(content)
        git("add", "--all", cwd=self.work)
        git("commit", "--quiet", "-m", message, cwd=self.work)
        git("push", "--quiet", "origin", f"{branch}:{branch}", cwd=self.work)
        return self.sha(branch)

    def sha(self, branch: str) -> str:
        return git("rev-parse", f"refs/heads/{branch}", cwd=self.path)

    def branches(self) -> dict[str, str]:
        out = git("for-each-ref", "--format=%(refname:strip=2) %(objectname)", cwd=self.path)
        return dict(line.split(" ") for line in out.splitlines())

    def log(self, branch: str, *options: str) -> list[str]:
        return git("log", *options, "--format=%H", branch, cwd=self.path).split()

    def show(self, revision: str, format: str) -> str:
        return git("show", "--no-patch", f"--format={format}", revision, cwd=self.path)

    def file(self, branch: str, name: str) -> str:
        return git("show", f"{branch}:{name}", cwd=self.path)

    def parents(self, revision: str) -> list[str]:
        return self.show(revision, "%P").split()
