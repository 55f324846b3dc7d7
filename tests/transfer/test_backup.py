"""Backups of the whole service (transfer.backup) on a data folder of the test's own: a SQLite
file, real git mirrors fetched from a real origin, the key files. What a backup holds, that it
is one snapshot while a writer goes on, and every refusal of a restore, before it writes.
The live drill (a running service backed up and restored) is tests/transfer/test_backup_drill.py.
"""

import json
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest

from gitintegration import git
from tests.gitorigin import git as git_in
from tests.liveserver import embedded_env, manage_run
from transfer.backup import (
    FORMAT,
    MANIFEST,
    BackupError,
    Layout,
    backup_create,
    backup_restore,
    backup_verify,
)

KEYS = {"secret_key": "the-installation-secret\n", "webhook_encryption_key": "a-fernet-key\n"}


def quiet(line: str) -> None:
    pass


def layout_in(folder: Path) -> Layout:
    return Layout(database=folder / "collab.sqlite3", git_storage=folder / "git", data_dir=folder)


def refs(mirror: Path) -> str:
    return git_in("for-each-ref", "--format=%(refname) %(objectname)", cwd=mirror)


@pytest.fixture
def installation(tmp_path, settings, origin) -> Layout:
    """A data folder as the embedded default keeps one: its database (WAL, as the service
    opens it) knowing three repositories, of which the first is fetched from ``origin``, the
    second was never fetched and the third's origin is empty; and both key files."""
    layout = layout_in(tmp_path / "data")
    layout.data_dir.mkdir()
    settings.GIT_STORAGE_DIR = layout.git_storage
    for name, value in KEYS.items():
        (layout.data_dir / name).write_text(value)
    with closing(sqlite3.connect(layout.database)) as db, db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE gitintegration_repository (id integer PRIMARY KEY)")
        db.execute("CREATE TABLE note (id integer PRIMARY KEY, body text NOT NULL)")
        db.execute("CREATE TABLE tally (note_id integer NOT NULL, total integer NOT NULL)")
        db.executemany("INSERT INTO gitintegration_repository VALUES (?)", [(1,), (2,), (3,)])
        db.executemany("INSERT INTO note (body) VALUES (?)", [("x" * 400,)] * 2000)
    with git.mirror_lock(1):
        git.mirror_fetch(repository_id=1, url=origin.url)
    empty = tmp_path / "empty.git"
    git_in("init", "--bare", "--quiet", str(empty), cwd=tmp_path)
    with git.mirror_lock(3):
        git.mirror_fetch(repository_id=3, url=empty.as_uri())
    return layout


@pytest.fixture
def made(installation, tmp_path) -> Path:
    output = tmp_path / "backup"
    backup_create(layout=installation, output=output, progress=quiet)
    return output


def test_a_backup_holds_the_database_the_repositories_the_keys_and_their_checksums(
    installation, made
):
    manifest = json.loads((made / MANIFEST).read_text())
    assert manifest["kind"] == "collab-backup"
    assert manifest["format"] == FORMAT
    assert manifest["repositories"] == [
        {"id": 1, "member": "git/1.bundle", "head": "refs/heads/main"},
        {"id": 2, "member": None, "head": None},
        {"id": 3, "member": None, "head": None},
    ]
    assert manifest["keys"] == ["keys/secret_key", "keys/webhook_encryption_key"]
    assert sorted(manifest["members"]) == [
        "database.sqlite3",
        "git/1.bundle",
        "keys/secret_key",
        "keys/webhook_encryption_key",
    ]
    assert backup_verify(source=made) == manifest
    # The database is one file, readable without the WAL it was copied from.
    assert not list(made.glob("*-wal"))
    with closing(sqlite3.connect(made / "database.sqlite3")) as db:
        assert db.execute("SELECT count(*) FROM note").fetchone() == (2000,)
    assert made.stat().st_mode & 0o077 == 0, "a backup holds secrets: its owner's alone"
    assert (made / "database.sqlite3").stat().st_mode & 0o077 == 0


def test_a_restore_brings_back_the_same_database_repositories_and_keys(
    installation, made, tmp_path, settings
):
    target = layout_in(tmp_path / "restored")
    settings.GIT_STORAGE_DIR = target.git_storage
    backup_restore(layout=target, source=made, force=False, progress=quiet)

    with closing(sqlite3.connect(target.database)) as db:
        assert db.execute("SELECT count(*), sum(length(body)) FROM note").fetchone() == (
            2000,
            800000,
        )
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    original, restored = installation.git_storage / "1.git", target.git_storage / "1.git"
    assert refs(restored) == refs(original)
    assert git_in("symbolic-ref", "HEAD", cwd=restored) == "refs/heads/main"
    git_in("fsck", "--no-progress", cwd=restored)
    # Not fetched, or empty at the origin: their next sync makes them, as on the original.
    assert not (target.git_storage / "2.git").exists()
    assert not (target.git_storage / "3.git").exists()
    for name, value in KEYS.items():
        assert (target.data_dir / name).read_text() == value
        assert (target.data_dir / name).stat().st_mode & 0o077 == 0


def test_the_copy_is_one_snapshot_while_a_writer_goes_on(installation, tmp_path):
    """A writer adds a note and its tally in one transaction, without pause, through the whole
    backup: the copy holds whole transactions only, and the writer never waited for it (the
    backup API alone would start over at every write and never finish)."""
    stop = threading.Event()
    written: list[int] = []

    def write() -> None:
        with closing(sqlite3.connect(installation.database, timeout=30)) as db:
            while not stop.is_set():
                with db:
                    note = db.execute("INSERT INTO note (body) VALUES ('during')").lastrowid
                    db.execute("INSERT INTO tally VALUES (?, 1)", (note,))
                written.append(note)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        while len(written) < 20:
            threading.Event().wait(0.01)
        before = len(written)
        backup_create(layout=installation, output=tmp_path / "during", progress=quiet)
        during = len(written) - before
    finally:
        stop.set()
        writer.join()
    assert during > 0, "the writer was meant to write while the backup ran"
    with closing(sqlite3.connect(tmp_path / "during" / "database.sqlite3")) as db:
        notes = db.execute("SELECT count(*) FROM note WHERE body = 'during'").fetchone()[0]
        tallies = db.execute("SELECT count(*) FROM tally").fetchone()[0]
        orphans = db.execute(
            "SELECT count(*) FROM note WHERE body = 'during' "
            "AND id NOT IN (SELECT note_id FROM tally)"
        ).fetchone()[0]
    assert notes == tallies and orphans == 0
    assert before <= notes <= len(written)


def test_a_backup_refuses_a_folder_that_holds_something(installation, tmp_path):
    output = tmp_path / "occupied"
    output.mkdir()
    (output / "notes.txt").write_text("mine")
    with pytest.raises(BackupError, match="already exists and is not an empty folder"):
        backup_create(layout=installation, output=output, progress=quiet)
    assert [p.name for p in output.iterdir()] == ["notes.txt"]


def test_a_failed_backup_leaves_no_backup_behind(installation, tmp_path):
    (installation.git_storage / "1.git" / "HEAD").write_text("ref: refs/heads/main\n")
    (installation.git_storage / "1.git" / "objects").rename(tmp_path / "objects-gone")
    with pytest.raises(BackupError, match="git could not bundle repository 1"):
        backup_create(layout=installation, output=tmp_path / "torn", progress=quiet)
    assert sorted(p.name for p in tmp_path.iterdir() if "torn" in p.name) == []


def restore_refused(made: Path, tmp_path: Path, settings, message: str) -> Layout:
    """The restore into a new data folder fails with ``message`` and writes nothing there."""
    target = layout_in(tmp_path / "restored")
    settings.GIT_STORAGE_DIR = target.git_storage
    with pytest.raises(BackupError, match=message):
        backup_restore(layout=target, source=made, force=False, progress=quiet)
    assert not target.data_dir.exists()
    return target


def test_a_damaged_member_is_refused_before_anything_is_written(made, tmp_path, settings):
    with (made / "database.sqlite3").open("r+b") as handle:
        handle.seek(5000)
        byte = handle.read(1)
        handle.seek(5000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    restore_refused(made, tmp_path, settings, "database.sqlite3 does not match its checksum")


def test_a_damaged_bundle_is_refused(made, tmp_path, settings):
    with (made / "git" / "1.bundle").open("ab") as handle:
        handle.write(b"\0")
    restore_refused(made, tmp_path, settings, "git/1.bundle does not match its checksum")


def test_a_missing_member_is_refused(made, tmp_path, settings):
    (made / "keys" / "secret_key").unlink()
    restore_refused(made, tmp_path, settings, "keys/secret_key is missing")


def test_a_member_without_a_checksum_is_refused(made, tmp_path, settings):
    manifest = json.loads((made / MANIFEST).read_text())
    del manifest["members"]["git/1.bundle"]
    (made / MANIFEST).write_text(json.dumps(manifest))
    restore_refused(made, tmp_path, settings, "names git/1.bundle but gives no checksum")


def test_a_member_outside_the_backup_is_refused(made, tmp_path, settings):
    manifest = json.loads((made / MANIFEST).read_text())
    manifest["keys"].append("../secret_key")
    manifest["members"]["../secret_key"] = {"sha256": "0" * 64, "size": 1}
    (made / MANIFEST).write_text(json.dumps(manifest))
    restore_refused(made, tmp_path, settings, "a member outside the backup")


def test_a_newer_format_is_refused(made, tmp_path, settings):
    manifest = json.loads((made / MANIFEST).read_text())
    manifest["format"] = FORMAT + 1
    (made / MANIFEST).write_text(json.dumps(manifest))
    restore_refused(made, tmp_path, settings, f"in format {FORMAT + 1}.*reads format {FORMAT}")


def test_a_backup_of_a_newer_collab_is_refused(made, tmp_path, settings):
    manifest = json.loads((made / MANIFEST).read_text())
    manifest["collab_version"] = "99.0.0"
    (made / MANIFEST).write_text(json.dumps(manifest))
    restore_refused(made, tmp_path, settings, "made by Collab 99.0.0; this is Collab")


@pytest.mark.parametrize("text", [None, "{not json", '{"kind": "something else"}'])
def test_a_folder_without_a_manifest_of_a_backup_is_refused(made, tmp_path, settings, text):
    if text is None:
        (made / MANIFEST).unlink()
    else:
        (made / MANIFEST).write_text(text)
    restore_refused(made, tmp_path, settings, "manifest")


def test_an_installation_is_replaced_only_with_force(installation, made, tmp_path, settings):
    with closing(sqlite3.connect(installation.database, isolation_level=None)) as db:
        db.execute("INSERT INTO note (body) VALUES ('after the backup')")
        db.execute("INSERT INTO gitintegration_repository VALUES (4)")
    stale = installation.git_storage / "4.git"
    git_in("init", "--bare", "--quiet", str(stale), cwd=installation.data_dir)
    with pytest.raises(BackupError, match="already holds an installation"):
        backup_restore(layout=installation, source=made, force=False, progress=quiet)
    assert stale.exists()

    backup_restore(layout=installation, source=made, force=True, progress=quiet)
    with closing(sqlite3.connect(installation.database)) as db:
        assert db.execute("SELECT count(*) FROM note").fetchone() == (2000,)
        assert db.execute("SELECT max(id) FROM gitintegration_repository").fetchone() == (3,)
    # Its id is free again in the restored database: its mirror must not wait for it.
    assert not stale.exists()
    assert (installation.git_storage / "1.git" / "HEAD").is_file()


@pytest.mark.slow(seconds=15)
@pytest.mark.parametrize("command", [["backup", "--output", "out"], ["restore", "out"]])
def test_on_postgresql_the_commands_refuse_and_name_the_recipe(command, tmp_path):
    env = embedded_env(tmp_path / "data", DATABASE_URL="postgres://collab@127.0.0.1:9/collab")
    done = manage_run(env, *command[:-1], str(tmp_path / command[-1]))
    assert done.returncode == 1
    assert "CommandError: backup and restore cover the embedded default (SQLite)" in done.stderr
    assert "pg_dump" in done.stderr
    assert "docs/operations/backups-and-moving-data.md" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
