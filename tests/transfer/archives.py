"""Reading archives in tests: their members, and their records "modulo ids" (every id and
reference replaced by what it names: a person's email, another record's rank in its type),
so that two archives of the same data compare equal whatever ids each instance gave."""

import subprocess
import tarfile
from pathlib import Path

import orjson

from transfer.archive import MANIFEST
from transfer.kinds import KINDS, USERS, history_value_remap

# Columns an import sets anew by design: a new slug, a sync asked for, new invitation emails.
VARYING = {
    "workspace": {"slug"},
    "repositories": {"sync_status", "sync_error", "last_synced_at", "updated_at"},
    "invitations": {"email_status", "email_error", "email_attempts", "email_queued_at"},
    # Marked sent by the import: the instance that recorded them sent them.
    "events": {"dispatched_at", "traceparent"},
}


def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {info.name: tar.extractfile(info).read() for info in tar if info.isfile()}


def manifest(path: Path) -> dict:
    return orjson.loads(members(path)[MANIFEST])


def records(contents: dict[str, bytes], name: str) -> list[dict]:
    return [orjson.loads(line) for line in contents.get(f"{name}.jsonl", b"").splitlines()]


def normalized(path: Path) -> dict[str, list[dict]]:
    """Every record type's records with ids replaced by what they name."""
    contents = members(path)
    keys: dict[str, dict[int, object]] = {}
    for kind in KINDS:
        rows = records(contents, kind.name)
        pk = kind.model._meta.pk.attname
        if kind.name == USERS:
            keys[kind.name] = {row[pk]: _user_key(row) for row in rows}
        elif kind.own_id:
            ordered = sorted(row[pk] for row in rows)
            keys[kind.name] = {old: f"{kind.name}#{rank}" for rank, old in enumerate(ordered)}

    def lookup(kind: str, old: int):
        return keys.get(kind, {}).get(old, f"{kind}:unknown")

    result = {}
    for kind in KINDS:
        rows = []
        for row in records(contents, kind.name):
            row = dict(row)
            if kind.own_id:
                row[kind.model._meta.pk.attname] = lookup(
                    kind.name, row[kind.model._meta.pk.attname]
                )
            for column, target in kind.refs.items():
                if row.get(column) is not None:
                    row[column] = lookup(target, row[column])
            if kind.name == "issue_history":
                for column in ("old_value", "new_value"):
                    row[column] = history_value_remap(row["field"], row[column], lookup)
            for column in VARYING.get(kind.name, ()):
                row.pop(column, None)
            if kind.name == USERS and row.get("kind") == "service":
                # Its address and handle are the instance's own choosing (a copy beside the
                # original gets others): it is named by its name.
                row.pop("email")
                row.pop("handle")
            rows.append(row)
        result[kind.name] = sorted(rows, key=lambda r: orjson.dumps(r, option=orjson.OPT_SORT_KEYS))
    return result


def _user_key(row: dict) -> str:
    """What a user is named by: a person by their email, a service account by its name."""
    if row.get("kind") == "service":
        return f"service account {row['name']}"
    return row["email"]


def bundle_state(bundle: Path, where: Path) -> tuple[str, str]:
    """(refs, objects) of a bundle, unpacked into a bare repository at ``where``."""

    def git(*args, cwd=where):
        return subprocess.run(  # noqa: S603
            ["git", *args],  # noqa: S607
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    git("init", "--bare", "--quiet", str(where), cwd=bundle.parent)
    git("fetch", "--quiet", str(bundle), "+refs/*:refs/*")
    refs = git("for-each-ref", "--format=%(refname) %(objectname)")
    objects = "".join(sorted(git("rev-list", "--objects", "--all").splitlines(keepends=True)))
    return refs, objects
