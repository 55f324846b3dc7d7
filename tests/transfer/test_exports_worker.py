"""The worker's side of exports over HTTP: the task builds a real archive with the exporter and
keeps it in the exports storage, a failure is recorded as such, a second run does nothing, and
the sweep purges what expired and queues again what a dead worker left."""

import hashlib
import io
import tarfile
from datetime import timedelta

import orjson
import pytest
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.models import Workspace
from events.models import Event
from tests.conftest import assert_error, assert_ok
from tests.factories import ExportFactory, WorkspaceFactory, completed_export, make_issue
from transfer import services
from transfer.archive import FORMAT, MANIFEST
from transfer.models import Export
from transfer.tasks import export_build, exports_sweep


def _ask(client, workspace, capture, **body) -> dict:
    """POST an export and run what its commit queues (the build, eagerly, as a worker would)."""
    with capture(execute=True):
        response = client.post(f"/v1/workspaces/{workspace.pk}/exports", body, format="json")
    return assert_ok(response, 202)["data"]


def _archive(content: bytes) -> tuple[dict, dict[str, bytes]]:
    with tarfile.open(fileobj=io.BytesIO(content), mode="r:gz") as archive:
        files = {info.name: archive.extractfile(info).read() for info in archive if info.isfile()}
    return orjson.loads(files[MANIFEST]), files


def test_the_task_builds_an_archive_that_downloads(
    api, world, exports_storage, django_capture_on_commit_callbacks
):
    make_issue(world.project, world.owner, title="Exported issue")
    asked = _ask(api.owner, world.acme, django_capture_on_commit_callbacks)
    assert asked["status"] == "pending"

    export = Export.objects.get(pk=asked["id"])
    assert export.status == Export.Status.COMPLETED
    assert export.lease_until is None
    data = assert_ok(api.owner.get(f"/v1/workspaces/{world.acme.pk}/exports/{export.pk}"))["data"]
    assert data["status"] == "completed" and data["error"] is None
    assert data["completed_at"] is not None
    assert export.expires_at == export.completed_at + timedelta(days=7)
    stored = exports_storage / export.file_name
    assert stored.is_file() and stored.stat().st_size == data["size"]
    assert export.file_name.startswith(f"workspace-{world.acme.pk}/export-{export.pk}-")

    response = api.admin.get(f"/v1/workspaces/{world.acme.pk}/exports/{export.pk}/download")
    assert response.status_code == 200
    content = b"".join(response.streaming_content)
    assert response["Content-Type"] == "application/gzip"
    assert hashlib.sha256(content).hexdigest() == data["sha256"]
    manifest, files = _archive(content)
    assert manifest["format"] == FORMAT
    assert manifest["workspace"]["id"] == world.acme.pk
    assert manifest["include_events"] is False and "events" not in manifest["counts"]
    titles = [orjson.loads(line)["title"] for line in files["issues.jsonl"].splitlines()]
    assert titles == ["Exported issue"]

    # One event, in the transaction that completed it: the export as the API shows it.
    event = Event.objects.get(type__startswith="export.")
    assert event.type == "export.completed"
    assert event.workspace_id == world.acme.pk
    assert event.project_id is None
    assert event.actor_id == world.owner.pk
    assert event.data == {"export": data}


def test_the_event_log_goes_in_when_asked(api, world, django_capture_on_commit_callbacks):
    make_issue(world.project, world.owner, title="Logged")
    asked = _ask(api.owner, world.acme, django_capture_on_commit_callbacks, include_events=True)
    export = Export.objects.get(pk=asked["id"])
    assert export.status == Export.Status.COMPLETED
    with services.export_open(export=export) as archive:
        manifest, files = _archive(archive.read())
    assert manifest["include_events"] is True
    assert manifest["counts"]["events"] >= 1
    assert b"issue.created" in files["events.jsonl"]


def test_a_failure_is_recorded_with_its_reason_and_event(
    api, world, exports_storage, django_capture_on_commit_callbacks
):
    # The store cannot be written: a file stands where its folder should be.
    exports_storage.parent.mkdir(parents=True, exist_ok=True)
    exports_storage.write_text("not a folder")
    asked = _ask(api.owner, world.acme, django_capture_on_commit_callbacks)

    export = Export.objects.get(pk=asked["id"])
    assert export.status == Export.Status.FAILED
    assert export.file_name is None and export.size is None and export.sha256 is None
    assert export.lease_until is None
    data = assert_ok(api.owner.get(f"/v1/workspaces/{world.acme.pk}/exports/{export.pk}"))["data"]
    assert data["status"] == "failed"
    assert "could not be built" in data["error"]
    assert str(exports_storage) not in data["error"], "paths stay in the server's log"
    assert data["completed_at"] is not None
    # A failed export is purged after the retention too.
    assert export.expires_at == export.completed_at + timedelta(days=7)
    event = Event.objects.get(type__startswith="export.")
    assert event.type == "export.failed"
    assert event.data == {"export": data}
    assert event.actor_id == world.owner.pk
    download = api.owner.get(f"/v1/workspaces/{world.acme.pk}/exports/{export.pk}/download")
    assert_error(download, 409, "CONFLICT")


def test_a_second_run_does_nothing(world):
    export = ExportFactory(workspace=world.acme, created_by=world.owner)
    assert export_build(export_id=export.pk) == "completed"
    export.refresh_from_db()
    before = (export.file_name, export.completed_at, export.sha256)
    assert export_build(export_id=export.pk) is None
    export.refresh_from_db()
    assert (export.file_name, export.completed_at, export.sha256) == before
    assert Event.objects.filter(type="export.completed").count() == 1
    assert export_build(export_id=export.pk + 1000) is None  # gone: nothing to do


def test_a_running_export_is_left_to_its_worker_until_its_lease_lapses(world, exports_storage):
    now = timezone.now()
    export = ExportFactory(
        workspace=world.acme,
        created_by=world.owner,
        status=Export.Status.RUNNING,
        started_at=now,
        lease_until=now + timedelta(minutes=5),
    )
    assert export_build(export_id=export.pk) is None
    export.refresh_from_db()
    assert export.status == Export.Status.RUNNING
    assert not exports_storage.exists() or not any(exports_storage.rglob("*.tar.gz"))
    # Its worker died: once the lease lapsed, another takes it over and finishes it.
    Export.objects.filter(pk=export.pk).update(lease_until=now - timedelta(seconds=1))
    assert export_build(export_id=export.pk) == "completed"
    assert len(list(exports_storage.rglob("*.tar.gz"))) == 1


def test_the_lease_outlasts_the_tasks_time_limit():
    route = settings.CELERY_TASK_ROUTES["transfer.tasks.export_build"]
    assert route == {"queue": "exports"}
    limits = settings.CELERY_TASK_ANNOTATIONS["transfer.tasks.export_build"]
    assert limits["soft_time_limit"] == settings.EXPORT_TIME_LIMIT_SECONDS
    assert services.export_lease().total_seconds() > limits["time_limit"]


@pytest.mark.parametrize("how", ["admin", "orm"])
def test_a_deleted_workspace_takes_its_archives_along(
    world, exports_storage, browser, django_capture_on_commit_callbacks, how
):
    """However a workspace goes (the admin's delete page, a cascade in code), its exports'
    archives leave the store once the deletion commits; another workspace's stay."""
    gone = [completed_export(world.acme, world.owner) for _ in range(2)]
    kept = completed_export(world.globex, world.outsider)
    with django_capture_on_commit_callbacks(execute=True):
        if how == "admin":
            page = f"/admin/accounts/workspace/{world.acme.pk}/delete/"
            assert browser.post(page, {"post": "yes"}).status_code == 302
        else:
            Workspace.objects.filter(pk=world.acme.pk).delete()
    assert not Workspace.objects.filter(pk=world.acme.pk).exists()
    assert not Export.objects.filter(pk__in=[export.pk for export in gone]).exists()
    assert [(exports_storage / export.file_name).exists() for export in gone] == [False, False]
    assert (exports_storage / kept.file_name).is_file()


def test_an_export_deletion_rolled_back_keeps_its_archive(world, exports_storage):
    export = completed_export(world.acme, world.owner)
    pk, archive = export.pk, exports_storage / export.file_name
    with pytest.raises(RuntimeError), transaction.atomic():
        export.delete()
        raise RuntimeError("the deletion fails after the row went")
    assert Export.objects.filter(pk=pk).exists()
    assert archive.is_file()


def test_the_sweep_purges_expired_exports_file_and_row(world, exports_storage):
    now = timezone.now()
    expired = completed_export(world.acme, world.owner, expires_at=now - timedelta(seconds=1))
    kept = completed_export(world.acme, world.owner, expires_at=now + timedelta(days=1))
    failed = ExportFactory(
        workspace=world.acme,
        created_by=world.owner,
        status=Export.Status.FAILED,
        error="It failed.",
        expires_at=now - timedelta(days=1),
    )
    pending = ExportFactory(workspace=world.acme, created_by=world.owner)
    expired_file = exports_storage / expired.file_name
    assert expired_file.is_file()

    assert services.exports_purge() == 2
    assert not expired_file.exists()
    assert (exports_storage / kept.file_name).is_file()
    assert set(Export.objects.values_list("pk", flat=True)) == {kept.pk, pending.pk}
    assert not Export.objects.filter(pk__in=[expired.pk, failed.pk]).exists()
    assert services.exports_purge() == 0


def test_the_sweep_is_beats_and_queues_again_what_a_dead_worker_left(world, exports_storage):
    entry = settings.CELERY_BEAT_SCHEDULE["exports-sweep"]
    assert entry["task"] == "transfer.tasks.exports_sweep"
    assert settings.CELERY_TASK_ROUTES[entry["task"]] == {"queue": "exports"}
    now = timezone.now()
    grace = timedelta(seconds=settings.EXPORT_SWEEP_GRACE_SECONDS)
    # Each in a workspace of its own: a workspace builds one export at a time.
    lost = ExportFactory(workspace=world.acme, created_by=world.owner, created_at=now - 2 * grace)
    queued = ExportFactory(workspace=world.globex, created_by=world.outsider)
    held = ExportFactory(
        workspace=WorkspaceFactory(),
        created_by=world.owner,
        status=Export.Status.RUNNING,
        created_at=now - 2 * grace,
        lease_until=now + timedelta(minutes=5),
    )
    abandoned = ExportFactory(
        workspace=WorkspaceFactory(),
        created_by=world.owner,
        status=Export.Status.RUNNING,
        created_at=now - 2 * grace,
        lease_until=now - timedelta(seconds=1),
    )
    expired = completed_export(world.acme, world.owner, expires_at=now - timedelta(seconds=1))

    # The tests run tasks eagerly: what the sweep queues is built here and now.
    assert exports_sweep() == {"purged": 1, "requeued": 2}
    statuses = dict(Export.objects.values_list("pk", "status"))
    assert statuses == {
        lost.pk: "completed",
        queued.pk: "pending",
        held.pk: "running",
        abandoned.pk: "completed",
    }
    assert expired.pk not in statuses


def test_the_record_shows_no_empty_string(api, world):
    export = ExportFactory(workspace=world.acme, created_by=None)
    data = assert_ok(api.owner.get(f"/v1/workspaces/{world.acme.pk}/exports/{export.pk}"))["data"]
    assert "" not in data.values()
    assert data["include_events"] is False and data["created_by_id"] is None
