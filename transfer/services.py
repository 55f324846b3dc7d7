"""Exports over HTTP: asked for by a request, built by a worker, kept in the "exports"
storage until they expire.

The archive itself is the exporter's (``transfer.exporting.workspace_export``); this module
owns the record around it: its claim by one worker (a conditional UPDATE with a lease), the
file handed to the storage, the status change and its event in one transaction, and the
purge.
"""

import hashlib
import logging
import secrets
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from celery import current_app
from django.conf import settings
from django.core.files import File
from django.core.files.storage import Storage, storages
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import User, Workspace
from collab.api.exceptions import Conflict, foreign_key_violation
from events.services import event_record

from .models import Export
from .records import export_record

logger = logging.getLogger("collab.transfer")

STORAGE_ALIAS = "exports"
BUILD_TASK = "transfer.tasks.export_build"
# The first bytes of each kind of archive the exporter may write: its Content-Type and the
# suffix of its name.
_KINDS = (
    (b"\x1f\x8b", "application/gzip", ".tar.gz"),
    (b"\x28\xb5\x2f\xfd", "application/zstd", ".tar.zst"),
)
_TAR = ("application/x-tar", ".tar")
IN_PROGRESS = (Export.Status.PENDING, Export.Status.RUNNING)
_CHUNK = 1024 * 1024


def export_storage() -> Storage:
    return storages[STORAGE_ALIAS]


def export_lease() -> timedelta:
    """How long a worker holds an export it builds: past the task's hard time limit, after
    which no build of it can still be running."""
    return timedelta(seconds=settings.EXPORT_TIME_LIMIT_SECONDS + 120)


def export_request(*, workspace: Workspace, actor: User, include_events: bool = False) -> Export:
    """A new pending export of ``workspace``; its build is queued once this commits. While
    another of the workspace is pending or running, ``Conflict`` (its id in the details)."""
    try:
        with transaction.atomic():
            export = Export.objects.create(
                workspace=workspace, created_by=actor, include_events=include_events
            )
            _queue_build(export.pk)
    except IntegrityError as exc:
        if foreign_key_violation(exc):
            raise  # the workspace was deleted meanwhile: a 404
        building = (
            Export.objects.filter(workspace=workspace, status__in=IN_PROGRESS)
            .values_list("pk", flat=True)
            .first()
        )
        raise Conflict(
            "An export of this workspace is already being built: download it once completed.",
            details={"export_id": building},
        ) from None
    return export


def _queue_build(export_id: int) -> None:
    # By name: the tasks module imports this one.
    build = current_app.tasks[BUILD_TASK]
    transaction.on_commit(lambda: build.delay(export_id=export_id))


def export_build(*, export_id: int) -> Export | None:
    """Build the archive of a pending export (or of one whose worker's lease lapsed) and keep
    it in the exports storage: completed, or failed with the reason. None when another worker
    holds it, or it is already finished or gone."""
    now = timezone.now()
    claimed = (
        Export.objects.filter(pk=export_id)
        .filter(
            Q(status=Export.Status.PENDING) | Q(status=Export.Status.RUNNING, lease_until__lt=now)
        )
        .update(status=Export.Status.RUNNING, started_at=now, lease_until=now + export_lease())
    )
    if not claimed:
        return None
    export = Export.objects.get(pk=export_id)
    try:
        file_name, size, digest, content_type = _archive_store(export)
    except Exception as exc:
        # Whatever went wrong (the exporter, the disk, the store, the time limit), the export
        # is finished as failed, and the asker told: it never stays running for good.
        logger.exception("Export %s of workspace %s failed", export.pk, export.workspace_id)
        return _export_fail(export_id=export.pk, reason=_reason(exc))
    return _export_complete(
        export_id=export.pk,
        file_name=file_name,
        size=size,
        sha256=digest,
        content_type=content_type,
    )


def _archive_store(export: Export) -> tuple[str, int, str, str]:
    """Build the archive into a temporary folder, then save it in the exports storage: its
    name there, size, SHA-256 and Content-Type."""
    from .exporting import workspace_export

    with tempfile.TemporaryDirectory(prefix="collab-export-", dir=settings.EXPORT_TEMP_DIR) as tmp:
        path = Path(tmp) / "workspace.tar.gz"
        workspace_export(
            workspace_id=export.workspace_id,
            path=path,
            include_events=export.include_events,
        )
        digest = hashlib.sha256()
        with path.open("rb") as archive:
            head = archive.read(4)
            archive.seek(0)
            while chunk := archive.read(_CHUNK):
                digest.update(chunk)
        content_type, suffix = next(
            ((kind, ending) for magic, kind, ending in _KINDS if head.startswith(magic)), _TAR
        )
        # A name of its own per build: a build taken over after a lapsed lease never writes
        # over the file another may still be writing.
        name = f"workspace-{export.workspace_id}/export-{export.pk}-{secrets.token_hex(8)}{suffix}"
        with path.open("rb") as archive:
            stored = export_storage().save(name, File(archive, name=name))
        return stored, path.stat().st_size, digest.hexdigest(), content_type


def _reason(exc: Exception) -> str:
    # The details (paths, hosts) go to the log; the asker gets what kind of failure it was.
    from celery.exceptions import SoftTimeLimitExceeded

    if isinstance(exc, SoftTimeLimitExceeded):
        return (
            "The export took longer than EXPORT_TIME_LIMIT_SECONDS "
            f"({settings.EXPORT_TIME_LIMIT_SECONDS} s)."
        )
    return f"The archive could not be built ({type(exc).__name__}); the server's log says why."


def _finish(export: Export, now: datetime) -> None:
    export.completed_at = now
    export.lease_until = None
    export.expires_at = now + timedelta(days=settings.EXPORT_RETENTION_DAYS)


def _export_complete(
    *, export_id: int, file_name: str, size: int, sha256: str, content_type: str
) -> Export | None:
    with transaction.atomic():
        export = Export.objects.select_for_update().filter(pk=export_id).first()
        if export is None or export.status != Export.Status.RUNNING:
            # Deleted meanwhile (its workspace went), or finished by another build: this
            # build's file is nobody's.
            transaction.on_commit(lambda: _file_delete(file_name))
            return export
        export.status = Export.Status.COMPLETED
        export.file_name = file_name
        export.size = size
        export.sha256 = sha256
        export.content_type = content_type
        export.error = None
        _finish(export, timezone.now())
        export.save()
        _export_event("export.completed", export)
    return export


def _export_fail(*, export_id: int, reason: str) -> Export | None:
    with transaction.atomic():
        export = Export.objects.select_for_update().filter(pk=export_id).first()
        if export is None or export.status != Export.Status.RUNNING:
            return export
        export.status = Export.Status.FAILED
        export.error = reason
        _finish(export, timezone.now())
        export.save()
        _export_event("export.failed", export)
    return export


def _export_event(kind: str, export: Export) -> None:
    event_record(
        type=kind,
        workspace_id=export.workspace_id,
        actor=export.created_by_id,
        data={"export": export_record(export)},
    )


def export_open(*, export: Export) -> "File[bytes]":
    """The completed export's archive, opened for reading from the exports storage."""
    if export.file_name is None:
        raise FileNotFoundError(f"Export {export.pk} has no archive.")
    return export_storage().open(export.file_name, "rb")


def _file_delete(file_name: str | None) -> None:
    if file_name:
        export_storage().delete(file_name)


def export_deleted(*, instance: Export, using: str, **kwargs: object) -> None:
    """``post_delete`` of an export, however it went (its workspace deleted in the admin, its
    row purged): its archive leaves the store once the deletion commits. A deletion rolled
    back keeps both; a store that fails then is logged, and the commit stands."""
    file_name = instance.file_name
    if file_name:
        transaction.on_commit(lambda: _file_delete(file_name), using=using, robust=True)


def exports_purge(*, now: datetime | None = None) -> int:
    """Delete the exports past ``expires_at``: each file, then its row. Answers how many."""
    now = now or timezone.now()
    purged = 0
    for export_id, file_name in list(
        Export.objects.filter(expires_at__lt=now).values_list("pk", "file_name")
    ):
        # The file first: a failure here leaves the row, and the next purge tries again.
        _file_delete(file_name)
        purged += Export.objects.filter(pk=export_id, expires_at__lt=now).delete()[0]
    return purged


def exports_requeue(*, now: datetime | None = None) -> list[int]:
    """Queue the build again of exports whose task was lost: pending for longer than
    EXPORT_SWEEP_GRACE_SECONDS, or running past their lease (a worker killed mid-build)."""
    now = now or timezone.now()
    grace = now - timedelta(seconds=settings.EXPORT_SWEEP_GRACE_SECONDS)
    left = list(
        Export.objects.filter(
            Q(status=Export.Status.PENDING, created_at__lt=grace)
            | Q(status=Export.Status.RUNNING, lease_until__lt=now)
        ).values_list("pk", flat=True)
    )
    build = current_app.tasks[BUILD_TASK]
    for export_id in left:
        build.delay(export_id=export_id)
    if left:
        logger.warning("Builds of exports %s were left undone; queued again", left)
    return left


def exports_sweep() -> dict[str, int]:
    """Beat's upkeep of exports: the expired purged, the lost queued again."""
    purged = exports_purge()
    requeued = exports_requeue()
    return {"purged": purged, "requeued": len(requeued)}
