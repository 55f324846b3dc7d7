"""/v1/workspaces/:id/exports through the API, as the personas see it: the status, the whole
envelope and the rows after. The worker's side (the archive, failures, the purge) is in
test_exports_worker.py."""

import hashlib
import io
import re
import tarfile

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from events.models import Event
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import ExportFactory, completed_export
from tests.openapi import inlined
from transfer.models import Export

RECORD_FIELDS = {
    "id",
    "workspace_id",
    "status",
    "created_at",
    "completed_at",
    "size",
    "expires_at",
    "error",
    "include_events",
    "sha256",
    "created_by_id",
}
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def exports_path(workspace, *rest) -> str:
    return "/".join([f"/v1/workspaces/{workspace.pk}/exports", *map(str, rest)])


@pytest.mark.parametrize("persona", ["owner", "admin"])
def test_owners_and_admins_ask_for_an_export(
    api, world, persona, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as queued:
        response = getattr(api, persona).post(
            exports_path(world.acme), {"include_events": True}, format="json"
        )
    assert response.status_code == 202, response.content
    body = response.json()
    assert body == {"success": True, "data": body["data"]}
    data = body["data"]
    assert set(data) == RECORD_FIELDS
    export = Export.objects.get()
    assert data["id"] == export.pk
    assert response["Location"] == exports_path(world.acme, export.pk)
    assert data["workspace_id"] == world.acme.pk
    assert data["status"] == "pending"
    assert ISO_Z.match(data["created_at"])
    assert data["completed_at"] is None
    assert data["size"] is None
    assert data["expires_at"] is None
    assert data["error"] is None
    assert data["sha256"] is None
    assert data["include_events"] is True
    assert data["created_by_id"] == getattr(world, persona).pk
    assert export.status == Export.Status.PENDING
    assert export.include_events is True
    assert export.created_by == getattr(world, persona)
    # The build is queued once the request's transaction commits, and nothing is told yet.
    assert len(queued) == 1
    assert not Event.objects.filter(type__startswith="export.").exists()


@pytest.mark.parametrize("status", ["pending", "running"])
def test_one_export_at_a_time_per_workspace(api, world, status):
    building = ExportFactory(workspace=world.acme, created_by=world.owner, status=status)
    completed_export(world.acme, world.owner)
    response = api.admin.post(exports_path(world.acme))
    error = assert_error(response, 409, "CONFLICT")
    assert error["details"] == {"export_id": building.pk}
    assert Export.objects.filter(workspace=world.acme).count() == 2
    # Another workspace is not held up by it, and once it finished the next may be asked.
    assert api.outsider.post(exports_path(world.globex)).status_code == 202
    Export.objects.filter(pk=building.pk).update(status="failed")
    assert api.admin.post(exports_path(world.acme)).status_code == 202


def test_an_empty_body_asks_for_an_export_without_the_event_log(api, world):
    response = api.owner.post(exports_path(world.acme))
    assert response.status_code == 202, response.content
    assert response.json()["data"]["include_events"] is False
    assert Export.objects.get().include_events is False


def test_a_bad_body_is_a_validation_error_and_makes_nothing(api, world):
    response = api.owner.post(exports_path(world.acme), {"include_events": "yes"}, format="json")
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert "include_events" in error["details"]
    assert not Export.objects.exists()


def _every_route(workspace, export_id) -> list[tuple[str, str]]:
    return [
        ("get", exports_path(workspace)),
        ("post", exports_path(workspace)),
        ("get", exports_path(workspace, export_id)),
        ("get", exports_path(workspace, export_id, "download")),
    ]


@pytest.mark.parametrize("persona", ["developer", "viewer"])
def test_below_owner_or_admin_is_forbidden_everywhere(api, world, persona):
    export = completed_export(world.acme, world.owner)
    for method, path in _every_route(world.acme, export.pk):
        response = getattr(getattr(api, persona), method)(path)
        error = assert_error(response, 403, "FORBIDDEN")
        assert error["details"]["required_ability"] == "manage", path
    assert Export.objects.count() == 1


def test_another_workspace_is_404_everywhere(api, world):
    export = completed_export(world.acme, world.owner)
    for method, path in _every_route(world.acme, export.pk):
        error = assert_error(getattr(api.outsider, method)(path), 404, "NOT_FOUND")
        assert error["details"] == {}, path
    # Nor can Acme's owner reach Acme's export under Globex's path, or Globex's under Acme's.
    theirs = completed_export(world.globex, world.outsider)
    for method, path in _every_route(world.globex, export.pk)[2:]:
        assert_error(getattr(api.owner, method)(path), 404, "NOT_FOUND")
    for method, path in _every_route(world.acme, theirs.pk)[2:]:
        assert_error(getattr(api.owner, method)(path), 404, "NOT_FOUND")
    assert Export.objects.count() == 2


def test_a_key_without_projects_admin_is_forbidden(world):
    export = completed_export(world.acme, world.owner)
    client = client_for(world.owner, ["projects:write", "users:write", "issues:admin"])
    for method, path in _every_route(world.acme, export.pk):
        error = assert_error(getattr(client, method)(path), 403, "FORBIDDEN")
        assert error["details"] == {"required_scope": "projects:admin"}, path
    only = client_for(world.owner, ["projects:admin"])
    assert_ok(only.get(exports_path(world.acme, export.pk)))


def test_anonymous_is_401(world):
    from rest_framework.test import APIClient

    response = APIClient().get(exports_path(world.acme))
    assert_error(response, 401, "UNAUTHORIZED")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_the_list_is_the_workspaces_newest_first_in_pages(api, world):
    older = ExportFactory(workspace=world.acme, created_by=world.owner, status="failed")
    done = completed_export(world.acme, world.admin)
    newest = ExportFactory(workspace=world.acme, created_by=world.admin)
    ExportFactory(workspace=world.globex, created_by=world.outsider)
    body = assert_ok(api.owner.get(exports_path(world.acme)))
    assert [row["id"] for row in body["data"]] == [newest.pk, done.pk, older.pk]
    assert all(set(row) == RECORD_FIELDS for row in body["data"])
    assert body["meta"]["total"] == body["meta"]["total_count"] == 3
    assert body["meta"]["page"] == 1
    page = api.admin.get(exports_path(world.acme) + "?per_page=2&page=2")
    body = assert_ok(page)
    assert [row["id"] for row in body["data"]] == [older.pk]
    assert 'rel="prev"' in page["Link"]
    first = assert_ok(api.owner.get(exports_path(world.acme) + "?per_page=2"))
    following = api.owner.get(
        exports_path(world.acme), {"per_page": 2, "cursor": first["meta"]["next_cursor"]}
    )
    assert [row["id"] for row in assert_ok(following)["data"]] == [older.pk]


def test_the_lists_query_count_does_not_grow_with_the_page(api, world):
    def count(per_page: int) -> int:
        with CaptureQueriesContext(connection) as captured:
            body = assert_ok(api.owner.get(exports_path(world.acme) + f"?per_page={per_page}"))
        assert len(body["data"]) == per_page
        return len(captured)

    for _ in range(3):
        ExportFactory(workspace=world.acme, created_by=world.owner, status="failed")
    api.owner.get(exports_path(world.acme))  # the key's first use is written once, here
    small = count(3)
    for _ in range(20):
        completed_export(world.acme, world.admin)
    assert count(23) == small


def test_one_export_shows_its_state(api, world):
    export = completed_export(world.acme, world.owner)
    data = assert_ok(api.admin.get(exports_path(world.acme, export.pk)))["data"]
    assert data["status"] == "completed"
    assert data["size"] == export.size > 0
    assert data["sha256"] == export.sha256
    assert ISO_Z.match(data["completed_at"]) and ISO_Z.match(data["expires_at"])
    assert_error(api.owner.get(exports_path(world.acme, export.pk + 1000)), 404, "NOT_FOUND")


def test_the_download_streams_the_archive(api, world):
    members = {"manifest.json": b'{"format_version": 1}', "users.jsonl": b'{"id": 1}\n'}
    export = completed_export(world.acme, world.owner, members=members)
    response = api.owner.get(exports_path(world.acme, export.pk, "download"))
    assert response.status_code == 200
    assert response.streaming
    content = b"".join(response.streaming_content)
    assert response["Content-Type"] == "application/gzip"
    assert response["Content-Disposition"] == (
        f'attachment; filename="collab-workspace-{world.acme.pk}-export-{export.pk}.tar.gz"'
    )
    assert int(response["Content-Length"]) == len(content) == export.size
    assert hashlib.sha256(content).hexdigest() == export.sha256
    assert response["ETag"] == f'"{export.sha256}"'
    with tarfile.open(fileobj=io.BytesIO(content)) as archive:
        assert {name: archive.extractfile(name).read() for name in archive.getnames()} == members
    # A client that has it fetches nothing again.
    again = api.owner.get(
        exports_path(world.acme, export.pk, "download"), HTTP_IF_NONE_MATCH=response["ETag"]
    )
    assert again.status_code == 304
    assert again.content == b""
    head = api.admin.head(exports_path(world.acme, export.pk, "download"))
    assert head.status_code == 200 and head.content == b""
    assert head["Content-Length"] == str(export.size)


@pytest.mark.parametrize("status", ["pending", "running", "failed"])
def test_an_export_not_completed_cannot_be_downloaded(api, world, status):
    export = ExportFactory(workspace=world.acme, created_by=world.owner, status=status)
    response = api.owner.get(exports_path(world.acme, export.pk, "download"))
    error = assert_error(response, 409, "CONFLICT")
    assert error["details"] == {"status": status}
    assert status in error["message"]


def test_an_archive_gone_from_the_store_is_404(api, world, exports_storage):
    export = completed_export(world.acme, world.owner)
    (exports_storage / export.file_name).unlink()
    assert_error(api.owner.get(exports_path(world.acme, export.pk, "download")), 404, "NOT_FOUND")


def test_the_routes_are_in_the_schema(api):
    document = inlined(api.owner.get("/v1/schema", {"format": "json"}).json())
    exports = "/v1/workspaces/{workspace_id}/exports"
    paths = document["paths"]
    assert set(paths[exports]) >= {"get", "post"}
    assert "202" in paths[exports]["post"]["responses"]
    assert "get" in paths[exports + "/{export_id}"]
    download = paths[exports + "/{export_id}/download"]["get"]["responses"]
    assert "application/gzip" in download["200"]["content"]
    assert download["409"]["content"]["application/json"]
