"""The git command, run as a subprocess: the one place the service touches repositories.

Every call passes an argument list (never a shell), a timeout, no terminal prompt and a
restricted set of transports (``GIT_ALLOW_PROTOCOL``), so a clone URL cannot run a program
(``ext::``) or wait forever for a password. Mirrors are bare repositories under
``GIT_STORAGE_DIR``, one per registered repository, and a file lock serialises the operations
on one mirror (a sync from beat and a merge from a request, say).

Every command that talks to a remote (fetch, ls-remote, push) checks the remote's host with
the private-address guard right before it runs and makes git connect to the checked address
(``remote_pin``), so the name cannot resolve elsewhere between the check and git's own lookup.

Only git's own formatted output is read here (``for-each-ref``, ``log --format``): no git
object is parsed by hand.
"""

import fcntl
import os
import re
import shlex
import shutil
import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings

from collab import netguard

FIELD = "\x1f"


class GitError(Exception):
    """git failed; the message is git's own, without the URL's credentials."""


class MergeConflict(GitError):
    pass


class RemoteRefused(GitError):
    """The remote's host is refused by the private-address guard; git was not run."""


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
        "GIT_SSH_COMMAND": _ssh_command(),
        "LC_ALL": "C",
    }
    return env


def _ssh_command() -> str:
    # No prompt for ssh host keys or passphrases either (unless the operator set their own).
    return os.environ.get(
        "GIT_SSH_COMMAND", "ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new"
    )


# Remotes ----------------------------------------------------------------------------------

DEFAULT_PORTS = {"https": 443, "ssh": 22, "git": 9418}
# git's own test for "scheme://" (transport.c is_url): a letter or digit, then these.
_URL_SCHEME = re.compile(r"(?P<scheme>[A-Za-z0-9][A-Za-z0-9+.-]*)://")
# "name::address", which git hands to the remote helper git-remote-<name> (ext::, fd::).
_FOREIGN = re.compile(r"[A-Za-z0-9][A-Za-z0-9+.-]*::")
# "git@host:owner/repo.git": ssh in scp form, no scheme.
SCP_LIKE = re.compile(
    r"(?:(?P<user>[A-Za-z0-9._~-]+)@)?(?P<host>[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]):(?!//)"
)
# The characters an authority may hold (RFC 3986) and no others: a backslash, a space or a
# second "@" is read one way by Python and another by curl or git, and the guard must judge the
# host git will connect to. ssh and git URLs are percent-decoded by git before it splits them,
# so "%" is refused there ("a%2fb@host" is host "a" to git).
_AUTHORITY = re.compile(r"[A-Za-z0-9._~!$&'()*+,;=:@\[\]%-]*")
UNSUPPORTED = "Use an https://, ssh:// or git:// URL (or user@host:path for ssh)."


@dataclass(frozen=True)
class Remote:
    """Where git connects for a network URL: ``scheme`` (https, ssh or git), ``host`` (as
    written, without brackets), ``port``, and whether a password is in the URL."""

    scheme: str
    host: str
    port: int
    has_password: bool = False


def remote_parse(url: str) -> Remote | None:
    """The network remote git would contact for ``url``, or None for a local path or a
    ``file://`` URL (which ``GIT_ALLOW_PROTOCOL`` governs).

    Follows git's own reading (transport.c, connect.c): a "scheme://" URL by its scheme,
    case-sensitive as git is; anything else is a local path when it has no ":" or a "/" before
    the first ":", else ssh in scp form. Raises ``ValueError`` (with a message fit for the
    user) for every form git would send elsewhere or could read differently from this parser.
    """
    if _FOREIGN.match(url):
        raise ValueError(UNSUPPORTED)
    scheme_match = _URL_SCHEME.match(url)
    if scheme_match is None:
        colon, slash = url.find(":"), url.find("/")
        if colon < 0 or 0 <= slash < colon:
            return None
        scp = SCP_LIKE.match(url)
        if scp is None:
            raise ValueError(UNSUPPORTED)
        return Remote("ssh", scp.group("host").strip("[]"), DEFAULT_PORTS["ssh"])
    scheme = scheme_match.group("scheme")
    if scheme == "file":
        return None
    if scheme not in DEFAULT_PORTS:
        raise ValueError(UNSUPPORTED)
    parts = urlsplit(url)
    authority = parts.netloc
    allowed = _AUTHORITY.fullmatch(authority) and authority.count("@") <= 1
    if not allowed or (scheme != "https" and "%" in authority):
        raise ValueError("The URL's user or host holds characters that are not accepted.")
    if scheme == "git" and "@" in authority:
        raise ValueError("git:// URLs take no user name.")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        raise ValueError("The URL's host or port is not valid.") from None
    if not host:
        raise ValueError("The URL names no host.")
    return Remote(scheme, host, port or DEFAULT_PORTS[scheme], has_password=bool(parts.password))


@dataclass(frozen=True)
class Pinned:
    """How to run git so that it connects to checked addresses only: the URL to give it,
    ``-c`` options to put before the subcommand, and environment variables to add."""

    url: str
    config: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


def remote_pin(url: str) -> Pinned:
    """Check ``url``'s host with the private-address guard now and pin git to the addresses
    checked; raises ``RemoteRefused`` when the guard refuses (nothing is run then).

    - https: ``http.curloptResolve`` gives curl the checked addresses for the name (TLS still
      verifies the name), and redirects are not followed (they would lead to a host nobody
      checked); an IP literal is replaced by its standard form.
    - ssh: the ssh command connects to the checked address (``HostName``) while host keys stay
      filed under the name (``HostKeyAlias``), added to the operator's ``GIT_SSH_COMMAND``.
    - git://: the checked address replaces the host in the URL (the protocol has no TLS, and
      only a daemon serving virtual hosts looks at the name).
    - local paths and ``file://``: returned as they are (``GIT_ALLOW_PROTOCOL`` decides).

    With ``WEBHOOK_ALLOW_PRIVATE_NETWORKS`` the guard lets every address pass, and git is
    pinned all the same.
    """
    try:
        remote = remote_parse(url)
    except ValueError as exc:
        raise RemoteRefused(str(exc)) from None
    if remote is None:
        return Pinned(url)
    try:
        is_literal = netguard.literal(remote.host) is not None
        addresses = netguard.resolve(remote.host, remote.port)
    except netguard.UnsafeAddress as exc:
        raise RemoteRefused(str(exc)) from None
    return _pinned(url, remote, addresses, is_literal=is_literal)


def _pinned(url: str, remote: Remote, addresses: list[str], *, is_literal: bool) -> Pinned:
    # ``addresses``: what the guard checked, in the resolver's order of preference.
    first = addresses[0]
    if remote.scheme == "ssh":
        alias = remote.host if remote.port == 22 else f"[{remote.host}]:{remote.port}"
        options = ["-o", f"HostName={first}", "-o", f"HostKeyAlias={alias}"]
        command = f"{_ssh_command()} {shlex.join(options)}"
        return Pinned(url, env={"GIT_SSH_COMMAND": command})
    if remote.scheme == "git" or is_literal:
        return Pinned(_with_host(url, first))
    # curl versions differ on whether a final dot belongs to the name they look up: both
    # spellings are given, so that none of them resolves the name itself.
    listed = ",".join(f"[{address}]" if ":" in address else address for address in addresses)
    names = dict.fromkeys([remote.host.lower(), remote.host.lower().rstrip(".")])
    config = [f"http.curloptResolve={name}:{remote.port}:{listed}" for name in names]
    config.append("http.followRedirects=false")
    return Pinned(url, config=tuple(arg for item in config for arg in ("-c", item)))


def _with_host(url: str, address: str) -> str:
    """``url`` with its host replaced by ``address``, user and port kept."""
    parts = urlsplit(url)
    start = url.index("://") + 3
    end = start + len(parts.netloc)
    userinfo, port = url[start:end].rpartition("@")[0], parts.port
    host = f"[{address}]" if ":" in address else address
    netloc = (f"{userinfo}@" if userinfo else "") + host + (f":{port}" if port else "")
    return url[:start] + netloc + url[end:]


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
    config: Sequence[str] = (),
) -> subprocess.CompletedProcess:
    """Run ``git [config] args``; ``config`` holds options for git itself ("-c", "k=v")."""
    env = _env(local_allowed=settings.GIT_ALLOW_LOCAL_REPOSITORIES)
    env.update(extra_env or {})
    executable = shutil.which("git", path=env["PATH"])
    if executable is None:
        raise GitError("git is not installed on this server.")
    try:
        result = subprocess.run(  # noqa: S603 - an argument list, never a shell
            [executable, *config, *args],
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
    """Exclusive use of one repository while the block runs: across the nodes of a cluster
    (a Redis lock, when ``REDIS_URL`` is set) and, on this node, of its mirror (a file lock).

    Each node keeps a mirror of its own, a cache of the origin; the cluster lock serialises
    what reaches the origin and the database (a sync on one worker, a merge on a web node), so
    two merges of one repository from two nodes run one after the other and the second finds
    the pull request merged. A lock that outlives its lease (a node that died holding it)
    lapses; pushes use ``--force-with-lease`` anyway, so the origin is never rewritten.

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
    with _cluster_lock(repository_id):
        lock_path = storage_dir() / f"{repository_id}.lock"
        with open(lock_path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            held[repository_id] = 1
            try:
                yield
            finally:
                held[repository_id] = 0


class RepositoryBusy(GitError):
    """Another node held the repository for longer than a git command may run."""


@contextmanager
def _cluster_lock(repository_id: int) -> Iterator[None]:
    if not settings.REDIS_URL:
        yield  # the embedded default: one machine, the file lock is the whole story
        return
    # Held at most as long as the longest git command (a fetch of history), plus a margin;
    # waited for as long.
    lease = settings.GIT_TIMEOUT_SECONDS * 4 + 30
    lock = _redis().lock(
        f"collab:git:repository:{repository_id}", timeout=lease, blocking_timeout=lease
    )
    if not lock.acquire():
        raise RepositoryBusy("The repository is busy on another node; try again.")
    try:
        yield
    finally:
        import redis

        # A lease that lapsed (another node took the lock since) is no error to release.
        with suppress(redis.exceptions.LockError):
            lock.release()


_redis_client = None


def _redis():
    global _redis_client
    if _redis_client is None:
        import redis

        _redis_client = redis.Redis.from_url(settings.REDIS_URL)
    return _redis_client


def mirror_fetch(*, repository_id: int, url: str) -> Path:
    """Create or update the bare mirror of ``url``: every branch, pruned, and HEAD as the
    origin has it. Call under ``mirror_lock``."""
    path = mirror_path(repository_id)
    remote = remote_pin(url)
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
            remote.url,
            "+refs/heads/*:refs/heads/*",
        ],
        cwd=path,
        config=remote.config,
        extra_env=remote.env,
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
    remote = remote_pin(url)
    result = run(
        ["ls-remote", "--symref", "--", remote.url, "HEAD"],
        check=False,
        config=remote.config,
        extra_env=remote.env,
    )
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
    remote = remote_pin(url)
    run(
        [
            "push",
            "--porcelain",
            "--quiet",
            f"--force-with-lease={ref}:{expected_sha}",
            "--",
            remote.url,
            f"{new_sha}:{ref}",
        ],
        cwd=path,
        config=remote.config,
        extra_env=remote.env,
    )
    run(["update-ref", ref, new_sha, expected_sha], cwd=path)
