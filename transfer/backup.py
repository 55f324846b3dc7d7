"""Backups of the whole service on its embedded default (SQLite), and their restore.

A backup is a folder: the database, copied with SQLite's online backup API while the service
runs and writes; a git bundle of each repository's mirror; the installation's own key files
(``SECRET_KEY`` and the webhook encryption key, when they are files in the data folder); and
``manifest.json`` with the format, the Collab version, the times, what is in it and the SHA-256
of every member.

Consistency: the database is copied inside one read transaction of its own. In WAL mode a
reader holds its snapshot while writers go on, so the copy is the database as it was at one
instant, however long the copy takes, and the writers never wait for it. The repositories are
bundled after that, one at a time under the lock a sync takes (``mirror_lock``), so no bundle
is torn by a fetch; only the repositories the copied database knows are kept. A mirror may then
be newer than the database's record of it, never older: the next sync reconciles the two, as
after any sync that a restart interrupted.

On PostgreSQL the database is backed up with ``pg_dump`` (the documented recipe); the commands
refuse there rather than copy only the half of the service they can see.
"""

import hashlib
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings

from collab import __version__
from gitintegration import git

# The layout of a backup folder. A restore refuses a format newer than the one it knows.
FORMAT = 1
KIND = "collab-backup"
MANIFEST = "manifest.json"
DATABASE_MEMBER = "database.sqlite3"
# The key files the embedded default makes in its data folder (collab/settings/local.py), with
# the settings they hold: a value from the environment wins over the file.
KEY_FILES = {"secret_key": "SECRET_KEY", "webhook_encryption_key": "WEBHOOK_ENCRYPTION_KEYS"}
RECIPE = "docs/operations/backups-and-moving-data.md, section 'Backups of the whole service'"
# Pages copied per step of the online backup (4 KiB each by default): progress is reported
# between steps.
PAGES_PER_STEP = 1024
# Bundling or restoring one repository may take long on a large history.
GIT_TIMEOUT_SECONDS = 3600

Progress = Callable[[str], None]


class BackupError(Exception):
    """A backup or restore that cannot go on; the message says why and what to do."""


@dataclass(frozen=True)
class Layout:
    """Where one installation keeps its state."""

    database: Path
    git_storage: Path
    data_dir: Path


def layout_current() -> Layout:
    """This installation's layout, from its settings; refuses anything but a SQLite file."""
    database = settings.DATABASES["default"]
    if database["ENGINE"] != "django.db.backends.sqlite3":
        raise BackupError(
            "backup and restore cover the embedded default (SQLite); this service runs on "
            f"{database['ENGINE'].rsplit('.', 1)[-1]}. Back it up with pg_dump and keep "
            f"GIT_STORAGE_DIR, SECRET_KEY and WEBHOOK_ENCRYPTION_KEYS with it: see {RECIPE}."
        )
    name = str(database["NAME"])
    if not name or name == ":memory:" or "mode=memory" in name:
        raise BackupError("The database is in memory: there is no file to back up.")
    return Layout(
        database=Path(name),
        git_storage=Path(settings.GIT_STORAGE_DIR),
        data_dir=Path(settings.DATA_DIR),
    )


# Backup ------------------------------------------------------------------------------------


def backup_create(*, layout: Layout, output: Path, progress: Progress) -> dict[str, Any]:
    """Back up the installation at ``layout`` into the new folder ``output``: its manifest.

    The folder is built beside ``output`` and renamed into place at the end, so a backup that
    fails leaves nothing that looks like a backup.
    """
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise BackupError(f"{output} already exists and is not an empty folder.")
    if not layout.database.is_file():
        raise BackupError(f"There is no database at {layout.database}: nothing to back up.")
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.parent / f".{output.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    # The folder holds the installation's secrets: its owner's alone.
    partial.mkdir(mode=0o700)
    try:
        manifest = _backup_into(layout=layout, folder=partial, progress=progress)
        if output.exists():
            output.rmdir()
        partial.rename(output)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return manifest


def _backup_into(*, layout: Layout, folder: Path, progress: Progress) -> dict[str, Any]:
    started = _now()
    pages = _database_copy(
        source=layout.database, target=folder / DATABASE_MEMBER, progress=progress
    )
    repository_ids = _repository_ids(folder / DATABASE_MEMBER)
    repositories = _repositories_bundle(
        storage=layout.git_storage, ids=repository_ids, folder=folder, progress=progress
    )
    keys = []
    for name in KEY_FILES:
        path = layout.data_dir / name
        if path.is_file():
            member = f"keys/{name}"
            (folder / "keys").mkdir(mode=0o700, exist_ok=True)
            shutil.copyfile(path, folder / member)
            os.chmod(folder / member, 0o600)
            keys.append(member)
    members = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        member = path.relative_to(folder).as_posix()
        progress(f"checksum: {member}")
        members[member] = {"sha256": _sha256(path), "size": path.stat().st_size}
    manifest = {
        "kind": KIND,
        "format": FORMAT,
        "collab_version": __version__,
        "started_at": started,
        "finished_at": _now(),
        "database": {"engine": "sqlite", "member": DATABASE_MEMBER, "pages": pages},
        "repositories": repositories,
        "keys": keys,
        # Secrets this installation takes from its environment are not in its data folder,
        # so not in the backup either: whoever keeps the backup keeps those beside it.
        "secrets_from_environment": sorted(
            setting for setting in KEY_FILES.values() if os.environ.get(setting)
        ),
        "members": members,
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _database_copy(*, source: Path, target: Path, progress: Progress) -> int:
    """Copy ``source`` into ``target`` with the online backup API, in steps; its page count.

    The source connection opens a read transaction first and holds it through every step: the
    steps then all read one snapshot (WAL keeps it for a reader), where the backup API alone
    would start over whenever another connection writes between two steps, and under a steady
    stream of writes might never finish.
    """
    report = _pages_reporter(progress)
    with (
        closing(sqlite3.connect(source, timeout=30, isolation_level=None)) as reader,
        closing(sqlite3.connect(target, isolation_level=None)) as copy,
    ):
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM sqlite_master").fetchone()
        reader.backup(copy, pages=PAGES_PER_STEP, progress=report)
        pages = int(reader.execute("PRAGMA page_count").fetchone()[0])
        reader.execute("ROLLBACK")
        # One self-contained file: no WAL beside it to lose or to copy.
        copy.execute("PRAGMA journal_mode=DELETE").fetchone()
        check = copy.execute("PRAGMA quick_check").fetchone()[0]
    if check != "ok":
        raise BackupError(f"The copy of the database failed its check: {check}")
    os.chmod(target, 0o600)  # password hashes and key digests: the owner's alone
    return pages


def _repository_ids(database: Path) -> list[int]:
    with closing(sqlite3.connect(database)) as db:
        try:
            rows = db.execute("SELECT id FROM gitintegration_repository ORDER BY id").fetchall()
        except sqlite3.OperationalError:
            return []  # a database not migrated yet: no repositories
    return [int(row[0]) for row in rows]


def _repositories_bundle(
    *, storage: Path, ids: list[int], folder: Path, progress: Progress
) -> list[dict[str, Any]]:
    repositories = []
    for number, repository_id in enumerate(ids, start=1):
        progress(f"git: repository {number} of {len(ids)} (id {repository_id})")
        mirror = storage / f"{repository_id}.git"
        entry: dict[str, Any] = {"id": repository_id, "member": None, "head": None}
        repositories.append(entry)
        with git.mirror_lock(repository_id):
            if not (mirror / "HEAD").is_file():
                continue  # never fetched (still pending): its next sync makes it
            try:
                if not git.branch_names(mirror):
                    continue  # an empty origin: a bundle cannot be empty
                member = f"git/{repository_id}.bundle"
                (folder / "git").mkdir(exist_ok=True)
                git.run(
                    ["bundle", "create", "--quiet", str(folder / member), "--all"],
                    cwd=mirror,
                    timeout=GIT_TIMEOUT_SECONDS,
                )
                head = git.run(["symbolic-ref", "--quiet", "HEAD"], cwd=mirror, check=False)
            except git.GitError as error:
                raise BackupError(
                    f"git could not bundle repository {repository_id}: {error}"
                ) from None
            entry["member"] = member
            entry["head"] = head.stdout.strip() or None
    return repositories


# Restore -----------------------------------------------------------------------------------


def backup_verify(*, source: Path) -> dict[str, Any]:
    """The manifest of the backup in ``source``, once every member matches its checksum."""
    path = source / MANIFEST
    if not path.is_file():
        raise BackupError(
            f"{source} holds no {MANIFEST}: it is not a Collab backup, or one that did not finish."
        )
    try:
        manifest = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BackupError(f"{MANIFEST} is not valid JSON: {error}") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != KIND:
        raise BackupError(f"{MANIFEST} is not the manifest of a Collab backup.")
    version = manifest.get("format")
    if not isinstance(version, int) or version < 1:
        raise BackupError(f"{MANIFEST} has no valid format number.")
    if version > FORMAT:
        raise BackupError(
            f"The backup is in format {version}, made by Collab "
            f"{manifest.get('collab_version', '?')}; this Collab ({__version__}) reads format "
            f"{FORMAT} and older. Restore it with that version of Collab or a newer one."
        )
    made_by = manifest.get("collab_version")
    made = _version(made_by) if isinstance(made_by, str) else None
    if made is None:
        raise BackupError(f"{MANIFEST} does not say which version of Collab made it.")
    if made > (_version(__version__) or ()):
        raise BackupError(
            f"The backup was made by Collab {made_by}; this is Collab {__version__}, which may "
            f"not know its database's schema. Restore it with Collab {made_by} or a newer one."
        )
    members = manifest.get("members")
    if not isinstance(members, dict):
        raise BackupError(f"{MANIFEST} lists no members.")
    for member in _members_named(manifest):
        if member not in members:
            raise BackupError(f"{MANIFEST} names {member} but gives no checksum for it.")
    for member, expected in members.items():
        file = _member_path(source, member)
        if not file.is_file():
            raise BackupError(f"The member {member} is missing from the backup.")
        if not isinstance(expected, dict) or _sha256(file) != expected.get("sha256"):
            raise BackupError(
                f"The member {member} does not match its checksum in {MANIFEST}: "
                "the backup is damaged. Nothing was restored."
            )
    return manifest


def _members_named(manifest: dict[str, Any]) -> Iterator[str]:
    try:
        yield manifest["database"]["member"]
        for repository in manifest["repositories"]:
            if repository["member"] is not None:
                yield repository["member"]
        yield from manifest["keys"]
    except (KeyError, TypeError):
        raise BackupError(f"{MANIFEST} is incomplete (database, repositories, keys).") from None


def _member_path(source: Path, member: str) -> Path:
    relative = PurePosixPath(member)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise BackupError(f"{MANIFEST} names a member outside the backup: {member!r}")
    return source.joinpath(*relative.parts)


def backup_restore(
    *, layout: Layout, source: Path, force: bool, progress: Progress
) -> dict[str, Any]:
    """Restore the backup in ``source`` into the installation at ``layout``: its manifest.

    Everything is verified before anything is written. Into an empty data folder, or with
    ``force`` over an installation (which must be stopped). The key files and repositories go
    first and the database last: a restore cut short leaves no database behind, so the data
    folder still counts as empty and the restore can simply run again.
    """
    in_use = _installation_found(layout)
    if in_use and not force:
        raise BackupError(
            f"The data folder already holds an installation ({in_use}). Restore into an empty "
            "data folder, or stop the service and pass --force to replace it."
        )
    progress("verifying the checksums")
    manifest = backup_verify(source=source)
    layout.data_dir.mkdir(parents=True, exist_ok=True)
    for member in manifest["keys"]:
        name = PurePosixPath(member).name
        if name not in KEY_FILES:
            raise BackupError(f"{MANIFEST} names an unknown key file: {member}")
        progress(f"key: {name}")
        _file_replace(_member_path(source, member), layout.data_dir / name)
    _repositories_restore(layout=layout, source=source, manifest=manifest, progress=progress)
    _database_restore(
        source=_member_path(source, manifest["database"]["member"]),
        target=layout.database,
        progress=progress,
    )
    return manifest


def _installation_found(layout: Layout) -> str:
    """What shows that ``layout`` already holds an installation, or "" when it holds none.

    The key files alone do not count: the embedded default makes them as soon as any command
    starts, this restore included.
    """
    if layout.database.is_file():
        with closing(sqlite3.connect(layout.database, timeout=30)) as db:
            try:
                tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            except sqlite3.DatabaseError:
                return f"{layout.database} is not a SQLite database"
        if tables:
            return f"a database at {layout.database}"
    if layout.git_storage.is_dir() and any(layout.git_storage.glob("*.git")):
        return f"repositories in {layout.git_storage}"
    return ""


def _file_replace(source: Path, target: Path) -> None:
    temporary = target.with_name(f".{target.name}.{os.getpid()}.restoring")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle, source.open("rb") as original:
        shutil.copyfileobj(original, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, target)


def _repositories_restore(
    *, layout: Layout, source: Path, manifest: dict[str, Any], progress: Progress
) -> None:
    storage = layout.git_storage
    storage.mkdir(parents=True, exist_ok=True)
    # With --force, the replaced installation's mirrors go: one left behind would be taken
    # for the mirror of a repository registered later under the same id.
    for mirror in storage.glob("*.git"):
        shutil.rmtree(mirror)
    repositories = manifest["repositories"]
    for number, repository in enumerate(repositories, start=1):
        if repository["member"] is None:
            continue
        repository_id = int(repository["id"])
        progress(f"git: repository {number} of {len(repositories)} (id {repository_id})")
        bundle = _member_path(source, repository["member"])
        temporary = storage / f".{repository_id}.git.restoring"
        shutil.rmtree(temporary, ignore_errors=True)
        try:
            git.run(["init", "--bare", "--quiet", str(temporary)])
            git.run(
                ["fetch", "--quiet", "--no-tags", str(bundle.resolve()), "+refs/*:refs/*"],
                cwd=temporary,
                timeout=GIT_TIMEOUT_SECONDS,
                # A bundle is a local file: git's file transport, whatever remotes may use.
                extra_env={"GIT_ALLOW_PROTOCOL": "file"},
            )
            if repository["head"]:
                git.run(["symbolic-ref", "HEAD", repository["head"]], cwd=temporary)
        except git.GitError as error:
            raise BackupError(
                f"git could not restore repository {repository_id}: {error}"
            ) from None
        temporary.rename(storage / f"{repository_id}.git")


def _database_restore(*, source: Path, target: Path, progress: Progress) -> None:
    """Copy the backup's database over ``target`` with the backup API, which writes through
    SQLite itself: a WAL file left beside ``target`` is taken care of, never replayed over the
    restored pages."""
    target.parent.mkdir(parents=True, exist_ok=True)
    report = _pages_reporter(progress)
    with (
        closing(sqlite3.connect(source, isolation_level=None)) as backup,
        closing(sqlite3.connect(target, timeout=30, isolation_level=None)) as restored,
    ):
        backup.backup(restored, pages=PAGES_PER_STEP, progress=report)
        restored.execute("PRAGMA journal_mode=WAL").fetchone()
        check = restored.execute("PRAGMA quick_check").fetchone()[0]
    if check != "ok":
        raise BackupError(f"The restored database failed its check: {check}")


# Helpers -----------------------------------------------------------------------------------


def _pages_reporter(progress: Progress) -> Callable[[int, int, int], None]:
    """A progress callback for the backup API: at most one line a second, and the last."""
    last = 0.0

    def report(status: int, remaining: int, total: int) -> None:
        nonlocal last
        if time.monotonic() - last >= 1 or remaining == 0:
            last = time.monotonic()
            done = total - remaining
            percent = 100 * done // total if total else 100
            progress(f"database: {percent}% ({done} of {total} pages)")

    return report


def _version(text: str) -> tuple[int, ...] | None:
    """``1.2.0`` as ``(1, 2, 0)``; None for anything else."""
    parts = text.split(".")
    if not all(part.isdigit() for part in parts):
        return None
    return tuple(int(part) for part in parts)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
