"""The workspace archive: one tar.gz holding ``manifest.json``, a JSON Lines member per record
type and a ``git bundle`` per repository.

The manifest comes first, so a reader sees the format before anything else, and it holds the
SHA-256 of every other member; the members are therefore written to a folder beside the
output first (on disk, never in memory) and packed once all are known. A reader unpacks into a
folder of its own, hashing as it goes, and trusts nothing it has not checked against the
manifest.

Format versions: a reader takes every version up to its own and refuses a newer one with a
message that says so; a new field that older readers may ignore does not bump the version.
"""

import hashlib
import re
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import orjson

FORMAT = "collab-workspace"
# 2: webhooks carry workspace_id, and a workspace's own webhook has no project_id. An archive
# of format 1 still imports (its webhooks are its workspace's: transfer.kinds).
# 3: service_accounts.jsonl (a reader of 2 would import their users and drop what makes them
# service accounts: it refuses the archive instead). An archive of 1 or 2 has none.
FORMAT_VERSION = 3
MANIFEST = "manifest.json"
# Members other than the manifest: flat names only, never a path that leaves the folder.
_RECORDS_NAME = re.compile(r"[a-z_]{1,64}\.jsonl")
_BUNDLE_NAME = re.compile(r"repositories/[0-9]{1,19}\.bundle")
# The gzip level: 1 packs an export of text about as small as 6 does, several times faster.
COMPRESSLEVEL = 1
_CHUNK = 1 << 20


class ArchiveError(Exception):
    """An archive that cannot be read as it is: the member and the line at fault, when known."""

    def __init__(self, message: str, *, member: str | None = None, line: int | None = None):
        self.message = message
        self.member = member
        self.line = line
        where = member or ""
        if line is not None:
            where += f", line {line}"
        super().__init__(f"{where}: {message}" if where else message)


def dumps(record: dict[str, Any]) -> bytes:
    """One JSON Lines record (datetimes as RFC 3339, keys in the order given)."""
    return orjson.dumps(record) + b"\n"


class _HashedFile:
    """A member being written: its bytes go to the file and the hash, never to memory."""

    def __init__(self, handle: IO[bytes]):
        self.handle = handle
        self.sha256 = hashlib.sha256()
        self.size = 0
        self.records = 0

    def write(self, data: bytes) -> None:
        self.handle.write(data)
        self.sha256.update(data)
        self.size += len(data)

    def record(self, record: dict[str, Any]) -> None:
        self.write(dumps(record))
        self.records += 1


class ArchiveWriter:
    """Members written one by one into a working folder beside ``path``, then packed."""

    def __init__(self, path: Path):
        self.path = path
        self.folder = Path(tempfile.mkdtemp(prefix=".export-", dir=path.parent))
        self.members: dict[str, dict[str, Any]] = {}

    @contextmanager
    def member(self, name: str) -> Iterator[_HashedFile]:
        if not (_RECORDS_NAME.fullmatch(name) or _BUNDLE_NAME.fullmatch(name)):
            raise ValueError(f"Not a member name: {name!r}")
        target = self.folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as handle:
            hashed = _HashedFile(handle)
            yield hashed
        self.members[name] = {"sha256": hashed.sha256.hexdigest(), "size": hashed.size}
        if name.endswith(".jsonl"):
            self.members[name]["records"] = hashed.records

    def adopt(self, name: str) -> None:
        """A member another program wrote into the folder (a git bundle), hashed in place."""
        if not _BUNDLE_NAME.fullmatch(name):
            raise ValueError(f"Not a bundle's name: {name!r}")
        digest, size = hashlib.sha256(), 0
        with (self.folder / name).open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
        self.members[name] = {"sha256": digest.hexdigest(), "size": size}

    def close(self, manifest: dict[str, Any]) -> None:
        """Pack the manifest (given the members' checksums) and the members into ``path``."""
        manifest = {**manifest, "members": dict(sorted(self.members.items()))}
        manifest_path = self.folder / MANIFEST
        manifest_path.write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
        partial = self.path.with_name(f".{self.path.name}.partial")
        with tarfile.open(
            partial, "w:gz", compresslevel=COMPRESSLEVEL, format=tarfile.PAX_FORMAT
        ) as tar:
            tar.add(manifest_path, arcname=MANIFEST, recursive=False)
            for name in sorted(self.members):
                tar.add(self.folder / name, arcname=name, recursive=False)
        partial.replace(self.path)
        self.discard()

    def discard(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class ArchiveReader:
    """An archive unpacked into a working folder and checked against its manifest.

    ``open()`` raises ``ArchiveError`` for anything short of a whole, known, matching archive:
    not a tar.gz, a member the manifest does not list (or lists and is missing), a checksum
    that differs, a format this reader does not know or a newer version of it.
    """

    def __init__(self, path: Path, *, folder: Path):
        self.path = path
        self.folder = folder
        self.manifest: dict[str, Any] = {}

    def open(self) -> dict[str, Any]:
        hashes: dict[str, str] = {}
        member_name: str | None = None
        try:
            with tarfile.open(self.path, "r:*") as tar:
                for info in tar:
                    member_name = info.name
                    if info.isdir():
                        continue
                    if not info.isfile() or not (
                        info.name == MANIFEST
                        or _RECORDS_NAME.fullmatch(info.name)
                        or _BUNDLE_NAME.fullmatch(info.name)
                    ):
                        raise ArchiveError("not a member of a workspace archive", member=info.name)
                    if info.name in hashes:
                        raise ArchiveError("the member appears twice", member=info.name)
                    source = tar.extractfile(info)
                    assert source is not None  # a regular file, checked above
                    target = self.folder / info.name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    digest = hashlib.sha256()
                    with target.open("wb") as out:
                        while chunk := source.read(_CHUNK):
                            digest.update(chunk)
                            out.write(chunk)
                    hashes[info.name] = digest.hexdigest()
        except FileNotFoundError:
            raise ArchiveError(f"no such file: {self.path}") from None
        except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
            raise ArchiveError(f"the archive is damaged ({exc})", member=member_name) from None
        self.manifest = self._manifest(hashes)
        return self.manifest

    def _manifest(self, hashes: dict[str, str]) -> dict[str, Any]:
        if MANIFEST not in hashes:
            raise ArchiveError("the archive has no manifest", member=MANIFEST)
        try:
            manifest = orjson.loads((self.folder / MANIFEST).read_bytes())
        except orjson.JSONDecodeError as exc:
            raise ArchiveError(f"not JSON ({exc})", member=MANIFEST) from None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ArchiveError("not a Collab workspace archive", member=MANIFEST)
        version = manifest.get("format_version")
        if not isinstance(version, int) or version < 1:
            raise ArchiveError(f"format_version {version!r} is not a version", member=MANIFEST)
        if version > FORMAT_VERSION:
            raise ArchiveError(
                f"the archive is in format version {version}, newer than this Collab reads "
                f"(up to {FORMAT_VERSION}); import it with a Collab at least as new as the "
                f"one that made it ({manifest.get('collab_version', 'unknown')})",
                member=MANIFEST,
            )
        members = manifest.get("members")
        if not isinstance(members, dict):
            raise ArchiveError("the manifest lists no members", member=MANIFEST)
        for name, digest in hashes.items():
            if name == MANIFEST:
                continue
            listed = members.get(name)
            if not isinstance(listed, dict):
                raise ArchiveError("the manifest does not list this member", member=name)
            if listed.get("sha256") != digest:
                raise ArchiveError(
                    f"SHA-256 {digest} differs from the manifest's {listed.get('sha256')}",
                    member=name,
                )
        for name in members:
            if name not in hashes:
                raise ArchiveError("listed in the manifest but missing", member=name)
        return manifest

    def has(self, name: str) -> bool:
        return name in self.manifest.get("members", {})

    def file(self, name: str) -> Path:
        return self.folder / name

    def records(self, name: str) -> Iterator[tuple[int, dict[str, Any]]]:
        """(line number, record) of a JSON Lines member; nothing when the archive lacks it."""
        if not self.has(name):
            return
        with self.file(name).open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise ArchiveError(f"not JSON ({exc})", member=name, line=number) from None
                if not isinstance(record, dict):
                    raise ArchiveError("a record is a JSON object", member=name, line=number)
                yield number, record
