"""The git command, run as a subprocess: the one place the service touches repositories.

Every call passes an argument list (never a shell), a timeout, no terminal prompt and a
restricted set of transports (``GIT_ALLOW_PROTOCOL``), so a clone URL cannot run a program
(``ext::``) or wait forever for a password. Mirrors are bare repositories under
``GIT_STORAGE_DIR``, one per registered repository, and a file lock serialises the operations
on one mirror (a sync from beat and a merge from a request, say).

Only git's own formatted output is read here (``for-each-ref``, ``log --format``): no git
object is parsed by hand.
"""

import fcntl
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings

FIELD = "\x1f"


class GitError(Exception):
    """git failed; the message is git's own, without the URL's credentials."""


class MergeConflict(GitError):
    pass


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    author_name: str
    author_email: str
    authored_at: datetime
    committed_at: datetime
    message: str


def _env(*, local_allowed: bool) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        # The server user's git configuration and keys stay in use: that is where operators
        # put the credentials for private repositories and for pushing merges.
        "HOME": os.environ.get("HOME", str(storage_dir())),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ALLOW_PROTOCOL": "https:ssh:git" + (":file" if local_allowed else ""),
        # No prompt for ssh host keys or passphrases either (unless the operator set their own).
        "GIT_SSH_COMMAND": os.environ.get(
            "GIT_SSH_COMMAND", "ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new"
        ),
        "LC_ALL": "C",
    }
    return env


def storage_dir() -> Path:
    path = Path(settings.GIT_STORAGE_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def mirror_path(repository_id: int) -> Path:
    return storage_dir() / f"{repository_id}.git"


def run(
    args: list[str],
    *,
    cwd: Path | None = None,
    timeout: float | None = None,
    input: str | None = None,
    extra_env: dict[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess:
    env = _env(local_allowed=settings.GIT_ALLOW_LOCAL_REPOSITORIES)
    env.update(extra_env or {})
    executable = shutil.which("git", path=env["PATH"])
    if executable is None:
        raise GitError("git is not installed on this server.")
    try:
        result = subprocess.run(  # noqa: S603 - an argument list, never a shell
            [executable, *args],
            cwd=cwd,
            env=env,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout or settings.GIT_TIMEOUT_SECONDS,
        )
    except subprocess.TimeoutExpired:
        raise GitError(
            f"git {args[0]} took longer than {timeout or settings.GIT_TIMEOUT_SECONDS} s."
        ) from None
    except FileNotFoundError:
        # The working directory: a mirror that was never fetched, or was removed.
        raise GitError("The mirror has not been fetched.") from None
    if check and result.returncode != 0:
        raise GitError(_clean_message(result.stderr) or f"git {args[0]} failed.")
    return result


def _clean_message(stderr: str) -> str:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return "\n".join(lines[-5:])


_held = threading.local()


@contextmanager
def mirror_lock(repository_id: int) -> Iterator[None]:
    """Exclusive use of one mirror across processes and threads, while the block runs.

    Re-entrant within a thread: a merge holds the lock when its transaction commits, and a
    task run in-process at that commit (eager Celery) syncs the same mirror.
    """
    held = _held.__dict__.setdefault("counts", {})
    if held.get(repository_id):
        held[repository_id] += 1
        try:
            yield
        finally:
            held[repository_id] -= 1
        return
    lock_path = storage_dir() / f"{repository_id}.lock"
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        held[repository_id] = 1
        try:
            yield
        finally:
            held[repository_id] = 0
            fcntl.flock(handle, fcntl.LOCK_UN)


def mirror_fetch(*, repository_id: int, url: str) -> Path:
    """Create or update the bare mirror of ``url``: every branch, pruned, and HEAD as the
    origin has it. Call under ``mirror_lock``."""
    path = mirror_path(repository_id)
    if not (path / "HEAD").exists():
        run(["init", "--bare", "--quiet", str(path)])
    # The URL goes after "--" to git, so one starting with "-" can never be read as an option.
    run(
        [
            "fetch",
            "--prune",
            "--force",
            "--no-tags",
            "--quiet",
            "--",
            url,
            "+refs/heads/*:refs/heads/*",
        ],
        cwd=path,
    )
    default = remote_default_branch(url=url)
    names = branch_names(path)
    if default is None or default not in names:
        default = _fallback_default(names)
    if default:
        run(["symbolic-ref", "HEAD", f"refs/heads/{default}"], cwd=path)
    return path


def _fallback_default(names: set[str]) -> str | None:
    for name in ("main", "master"):
        if name in names:
            return name
    return min(names) if names else None


def remote_default_branch(*, url: str) -> str | None:
    result = run(["ls-remote", "--symref", "--", url, "HEAD"], check=False)
    for line in result.stdout.splitlines():
        if line.startswith("ref: ") and line.endswith("\tHEAD"):
            ref = line[len("ref: ") : -len("\tHEAD")]
            return ref.removeprefix("refs/heads/")
    return None


def default_branch(path: Path) -> str:
    result = run(["symbolic-ref", "--quiet", "HEAD"], cwd=path, check=False)
    return result.stdout.strip().removeprefix("refs/heads/") if result.returncode == 0 else ""


def branches(path: Path) -> dict[str, str]:
    """``{branch name: commit sha}`` of the mirror."""
    result = run(
        ["for-each-ref", "--format=%(refname:strip=2)%09%(objectname)", "refs/heads/"], cwd=path
    )
    pairs = (line.split("\t", 1) for line in result.stdout.splitlines() if line)
    return dict(pairs)


def branch_names(path: Path) -> set[str]:
    return set(branches(path))


def _parse_date(value: str) -> datetime:
    return datetime.fromisoformat(value).astimezone(UTC)


def commits_between(path: Path, *, tips: list[str], known: list[str]) -> list[CommitInfo]:
    """Commits reachable from ``tips`` and not from ``known``: what a sync has not seen yet."""
    if not tips:
        return []
    revisions = "\n".join([*tips, *(f"^{sha}" for sha in known)]) + "\n"
    result = run(
        [
            "log",
            "-z",
            "--ignore-missing",
            "--stdin",
            f"--format=%H{FIELD}%an{FIELD}%ae{FIELD}%aI{FIELD}%cI{FIELD}%B",
        ],
        cwd=path,
        input=revisions,
        timeout=settings.GIT_TIMEOUT_SECONDS * 4,
    )
    commits = []
    for record in result.stdout.split("\x00"):
        if not record.strip():
            continue
        sha, name, email, authored, committed, message = record.split(FIELD, 5)
        commits.append(
            CommitInfo(
                sha=sha.strip(),
                author_name=name,
                author_email=email,
                authored_at=_parse_date(authored),
                committed_at=_parse_date(committed),
                message=message.rstrip("\n"),
            )
        )
    return commits


def rev_list(path: Path, revision: str, *, skip: int = 0, limit: int | None = None) -> list[str]:
    args = ["rev-list", f"--skip={skip}"]
    if limit is not None:
        args.append(f"--max-count={limit}")
    result = run([*args, revision, "--"], cwd=path)
    return result.stdout.split()


def rev_count(path: Path, revision: str) -> int:
    return int(run(["rev-list", "--count", revision, "--"], cwd=path).stdout.strip() or 0)


def is_ancestor(path: Path, ancestor: str, descendant: str) -> bool:
    result = run(["merge-base", "--is-ancestor", ancestor, descendant], cwd=path, check=False)
    if result.returncode not in (0, 1):
        raise GitError(_clean_message(result.stderr) or "git merge-base failed.")
    return result.returncode == 0


def object_exists(path: Path, sha: str) -> bool:
    return run(["cat-file", "-e", f"{sha}^{{commit}}"], cwd=path, check=False).returncode == 0


def first_descendant(path: Path, ancestor: str, tip: str) -> str:
    """The earliest commit of ``tip``'s history that descends from ``ancestor`` (the merge
    commit that brought it in), or ``ancestor`` itself when ``tip`` is it (a fast-forward)."""
    shas = run(
        ["rev-list", "--ancestry-path", "--reverse", f"{ancestor}..{tip}", "--"], cwd=path
    ).stdout.split()
    return shas[0] if shas else ancestor


def messages_between(path: Path, base: str, head: str) -> list[str]:
    """Full messages of the commits in ``head`` that ``base`` lacks."""
    result = run(["log", "-z", "--format=%B", f"{base}..{head}", "--"], cwd=path)
    return [message for message in result.stdout.split("\x00") if message.strip()]


@dataclass(frozen=True)
class Identity:
    name: str
    email: str


def _identity_env(author: Identity, committer: Identity) -> dict[str, str]:
    return {
        "GIT_AUTHOR_NAME": author.name,
        "GIT_AUTHOR_EMAIL": author.email,
        "GIT_COMMITTER_NAME": committer.name,
        "GIT_COMMITTER_EMAIL": committer.email,
    }


def merge_commit_create(
    path: Path,
    *,
    base_sha: str,
    head_sha: str,
    method: str,
    message: str,
    author: Identity,
    committer: Identity,
) -> str:
    """The commit that ``base`` should point to after merging ``head`` by ``method``.

    Built with plumbing in the bare mirror (``merge-tree --write-tree``, ``commit-tree``):
    no working tree, and no ref moves here. Raises ``MergeConflict`` when the trees conflict
    or a fast-forward is impossible.
    """
    if method == "fast_forward":
        if not is_ancestor(path, base_sha, head_sha):
            raise MergeConflict("The base has commits the head lacks: no fast-forward possible.")
        return head_sha
    result = run(
        ["merge-tree", "--write-tree", "--name-only", base_sha, head_sha], cwd=path, check=False
    )
    if result.returncode == 1:
        # The tree's id, then the conflicted paths up to a blank line, then git's messages.
        lines = result.stdout.splitlines()[1:]
        files = sorted(set(lines[: lines.index("")] if "" in lines else lines))
        raise MergeConflict(
            "The head and the base conflict" + (f" in {', '.join(files[:20])}." if files else ".")
        )
    if result.returncode != 0:
        raise GitError(_clean_message(result.stderr) or "git merge-tree failed.")
    tree = result.stdout.splitlines()[0].strip()
    parents = ["-p", base_sha] + (["-p", head_sha] if method == "merge" else [])
    created = run(
        ["commit-tree", tree, *parents, "-F", "-"],
        cwd=path,
        input=message,
        extra_env=_identity_env(author, committer),
    )
    return created.stdout.strip()


def push_branch(path: Path, *, url: str, branch: str, new_sha: str, expected_sha: str) -> None:
    """Move ``branch`` at the origin from ``expected_sha`` to ``new_sha``, only if it still is
    at ``expected_sha`` there (a lease): a branch moved meanwhile raises ``GitError``."""
    ref = f"refs/heads/{branch}"
    run(
        [
            "push",
            "--porcelain",
            "--quiet",
            f"--force-with-lease={ref}:{expected_sha}",
            "--",
            url,
            f"{new_sha}:{ref}",
        ],
        cwd=path,
    )
    run(["update-ref", ref, new_sha, expected_sha], cwd=path)
