"""``workspace_export``: a workspace, as one snapshot, into an archive (``transfer.archive``).

Every record type of ``transfer.kinds`` is read by one query in id order through a
server-side cursor, a page at a time, each page written out before the next is read, so
memory stays flat whatever the size (keyset pages would sort a joined scope once per page). All
pages are read in one transaction: on PostgreSQL REPEATABLE READ and READ ONLY, one snapshot
that writes made meanwhile neither tear nor wait for (a snapshot takes no locks); on SQLite a
read transaction sees one state of the database file until it ends. The people are exported
last: everyone a record names (an author, an actor, a former member), not only the members.
"""

import itertools
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.db import connection, transaction
from django.db.models import QuerySet

from collab import __version__
from gitintegration import git
from notifications.crypto import secret_decrypt

from .archive import FORMAT, FORMAT_VERSION, ArchiveWriter
from .kinds import KINDS, USERS, Kind

logger = logging.getLogger(__name__)

PAGE_SIZE = 5_000
Progress = Callable[[int], None]


class WorkspaceNotFound(LookupError):
    pass


@contextmanager
def _snapshot() -> Iterator[None]:
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


Page = list[dict[str, Any]]


def _pages(queryset: QuerySet[Any, Any], fields: list[str], pk: str) -> Iterator[Page]:
    """The rows in pages, from one query: on PostgreSQL a server-side cursor (a named cursor
    of the snapshot's transaction), elsewhere the driver's cursor, read a page at a time."""
    rows = queryset.order_by(pk).values(*fields).iterator(chunk_size=PAGE_SIZE)
    while page := list(itertools.islice(rows, PAGE_SIZE)):
        yield page


def _queryset(kind: Kind, workspace_id: int, user_ids: set[int]) -> QuerySet[Any, Any]:
    manager = kind.model._default_manager
    if kind.name == USERS:
        return manager.filter(pk__in=sorted(user_ids))
    return manager.filter(**{kind.scope: workspace_id})


def _export_kind(
    writer: ArchiveWriter,
    kind: Kind,
    *,
    workspace_id: int,
    credentials: bool,
    user_ids: set[int],
    progress: Progress | None,
) -> int:
    fields = kind.fields(credentials=credentials)
    pk = kind.model._meta.pk.attname
    people = [name for name, target in kind.refs.items() if target == USERS]
    # A webhook's secret is encrypted with this instance's key: an export with credentials
    # carries it in clear, for the importing instance to encrypt with its own.
    encrypted = credentials and kind.name == "webhooks"
    read = [*fields, "secret_encrypted"] if encrypted else fields
    written = 0
    with writer.member(kind.member) as out:
        queryset = _queryset(kind, workspace_id, user_ids)
        if kind.name == USERS:
            # Few, but named by every other record: read in slices of the id list.
            pages: Iterator[Page] = (
                list(queryset.filter(pk__in=chunk).order_by(pk).values(*read))
                for chunk in _chunks(sorted(user_ids), PAGE_SIZE)
            )
        else:
            pages = _pages(queryset, read, pk)
        for rows in pages:
            for row in rows:
                for name in people:
                    if row[name] is not None:
                        user_ids.add(row[name])
                if encrypted:
                    row["secret"] = secret_decrypt(row.pop("secret_encrypted"))
                out.record(row)
            written += len(rows)
            if progress is not None:
                progress(len(rows))
    return written


def _chunks(values: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _bundles(writer: ArchiveWriter, repository_ids: list[int]) -> dict[str, str | None]:
    """A ``git bundle`` of every ref of each repository's mirror (none for a mirror never
    fetched, or empty)."""
    bundles: dict[str, str | None] = {}
    for repository_id in repository_ids:
        mirror = git.mirror_path(repository_id)
        name = f"repositories/{repository_id}.bundle"
        has_refs = (mirror / "HEAD").exists() and git.run(
            ["for-each-ref", "--count=1"], cwd=mirror
        ).stdout.strip()
        if not has_refs:
            bundles[str(repository_id)] = None
            continue
        target = writer.folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        git.run(["bundle", "create", "--quiet", str(target), "--all"], cwd=mirror)
        writer.adopt(name)
        bundles[str(repository_id)] = name
    return bundles


def workspace_export(
    *,
    workspace_id: int,
    path: Path,
    include_credentials: bool = False,
    include_events: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Write the workspace's archive to ``path``; returns its manifest.

    ``progress(n)`` is called with the number of records just written. Raises
    ``WorkspaceNotFound`` for an unknown workspace; ``path`` is written whole or not at all.
    """
    started = time.monotonic()
    writer = ArchiveWriter(path)
    try:
        with _snapshot():
            from accounts.models import Workspace

            workspace = (
                Workspace.objects.filter(pk=workspace_id).values("id", "name", "slug").first()
            )
            if workspace is None:
                raise WorkspaceNotFound(f"No workspace with id {workspace_id}.")
            exported_at = datetime.now(UTC)
            user_ids: set[int] = set()
            counts: dict[str, int] = {}
            for kind in (*KINDS[1:], KINDS[0]):  # the people last: everyone the rest names
                if kind.events and not include_events:
                    continue
                counts[kind.name] = _export_kind(
                    writer,
                    kind,
                    workspace_id=workspace_id,
                    credentials=include_credentials,
                    user_ids=user_ids,
                    progress=progress,
                )
            repository_ids = _repository_ids(workspace_id)
        bundles = _bundles(writer, repository_ids)
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "collab_version": __version__,
            "exported_at": exported_at.isoformat().replace("+00:00", "Z"),
            "workspace": workspace,
            "include_credentials": include_credentials,
            "include_events": include_events,
            "database": connection.vendor,
            "counts": counts,
            "repositories": bundles,
        }
        manifest["seconds"] = round(time.monotonic() - started, 3)
        writer.close(manifest)
    except BaseException:
        writer.discard()
        raise
    logger.info(
        "workspace %s exported to %s: %s records in %.1f s",
        workspace_id,
        path.name,
        sum(counts.values()),
        manifest["seconds"],
    )
    return {**manifest, "members": writer.members}


def _repository_ids(workspace_id: int) -> list[int]:
    from gitintegration.models import Repository

    return list(
        Repository.objects.filter(project__workspace_id=workspace_id)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
