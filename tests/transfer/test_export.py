"""``workspace_export`` and ``manage.py export_workspace``: what the archive holds."""

import io
import subprocess
import tarfile

import orjson
import pytest
from django.core.management import CommandError, call_command

from transfer.archive import FORMAT, FORMAT_VERSION, MANIFEST
from transfer.exporting import WorkspaceNotFound, workspace_export


def members(path):
    with tarfile.open(path, "r:gz") as tar:
        names = tar.getnames()
        contents = {info.name: tar.extractfile(info).read() for info in tar if info.isfile()}
    return names, contents


def records(contents, name):
    return [orjson.loads(line) for line in contents[f"{name}.jsonl"].splitlines()]


def test_the_archive_holds_every_record_type_and_a_bundle(full, world, tmp_path):
    path = tmp_path / "acme.tar.gz"
    written = []
    manifest = workspace_export(workspace_id=full.workspace.pk, path=path, progress=written.append)
    names, contents = members(path)
    assert names[0] == MANIFEST
    stored = orjson.loads(contents[MANIFEST])
    assert stored["format"] == FORMAT and stored["format_version"] == FORMAT_VERSION
    assert stored["workspace"] == {"id": world.acme.pk, "name": "Acme", "slug": "acme"}
    assert stored["counts"] == manifest["counts"]
    assert sum(written) == sum(manifest["counts"].values())
    for name, entry in stored["members"].items():
        import hashlib

        assert hashlib.sha256(contents[name]).hexdigest() == entry["sha256"]
    assert set(stored["members"]) == set(names) - {MANIFEST}
    counts = stored["counts"]
    assert counts["issues"] == 2 and counts["pull_requests"] == 2 and counts["reviews"] == 1
    assert counts["comments"] == 2 and counts["comment_revisions"] == 1
    assert counts["mentions"] == 2 and counts["invitations"] == 1 and counts["webhooks"] == 2
    assert counts["github_links"] == 2
    assert "events" not in counts
    # The people named anywhere: the members, the invitee; never the other workspace's. And
    # the workspace's service account, with what makes it one.
    people = [user for user in records(contents, "users") if user["kind"] == "person"]
    [robot] = [user for user in records(contents, "users") if user["kind"] == "service"]
    assert robot["name"] == "Release bot"
    [account] = records(contents, "service_accounts")
    assert account["user_id"] == robot["id"] and counts["service_accounts"] == 1
    emails = {user["email"] for user in people}
    assert emails == {
        "owner@acme.test",
        "admin@acme.test",
        "dev@acme.test",
        "viewer@acme.test",
        "newcomer@example.test",
    }
    assert all("password" not in user for user in records(contents, "users"))
    assert all("secret" not in hook for hook in records(contents, "webhooks"))
    assert all("webhook_secret" not in repo for repo in records(contents, "repositories"))
    assert [seq["last_number"] for seq in records(contents, "issue_sequences")] == [3]
    bundle = stored["repositories"][str(full.repository.pk)]
    assert bundle == f"repositories/{full.repository.pk}.bundle"
    (tmp_path / "b.bundle").write_bytes(contents[bundle])
    heads = subprocess.run(
        ["git", "bundle", "list-heads", str(tmp_path / "b.bundle")],  # noqa: S607
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert full.merged.merge_commit_sha in heads and "refs/heads/docs" in heads


def test_credentials_and_events_only_when_asked(full, tmp_path):
    path = tmp_path / "acme.tar.gz"
    manifest = workspace_export(
        workspace_id=full.workspace.pk, path=path, include_credentials=True, include_events=True
    )
    _names, contents = members(path)
    assert manifest["counts"]["events"] > 10
    assert all(user["password"] for user in records(contents, "users"))
    assert [hook["secret"] for hook in records(contents, "webhooks")] == ["factory-secret"] * 2
    assert all(len(repo["webhook_secret"]) == 40 for repo in records(contents, "repositories"))
    kinds = {event["type"] for event in records(contents, "events")}
    assert {"issue.created", "pull_request.merged", "comment.created"} <= kinds


def test_an_unknown_workspace_writes_nothing(db, tmp_path):
    with pytest.raises(WorkspaceNotFound):
        workspace_export(workspace_id=999_999, path=tmp_path / "x.tar.gz")
    assert list(tmp_path.iterdir()) == []


def test_the_command_shows_progress_and_refuses_bad_input(full, tmp_path):
    out, err = io.StringIO(), io.StringIO()
    path = tmp_path / "out.tar.gz"
    call_command(
        "export_workspace", str(full.workspace.pk), output=str(path), stdout=out, stderr=err
    )
    assert path.exists() and "Exported workspace" in out.getvalue()
    assert "record" in err.getvalue()  # the bar
    for args, message in [
        (["abc", "--output", str(path)], "is a number"),
        (["999999", "--output", str(path)], "No workspace with id 999999"),
        ([str(full.workspace.pk), "--output", str(tmp_path)], "is a folder"),
        ([str(full.workspace.pk), "--output", str(tmp_path / "no" / "x.tgz")], "does not exist"),
    ]:
        with pytest.raises(CommandError, match=message):
            call_command("export_workspace", *args, stdout=io.StringIO(), stderr=io.StringIO())


def test_one_snapshot_that_writes_neither_tear_nor_wait_for(transactional_db, tmp_path):
    """On PostgreSQL: an issue created and committed while the export is under way (here, from
    its first progress report) is not in the archive, and its writer did not wait."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the snapshot's isolation level is PostgreSQL's")
    import threading
    import time

    from django.db import connections

    from accounts.models import Role
    from tests.factories import (
        MembershipFactory,
        ProjectFactory,
        UserFactory,
        WorkspaceFactory,
        make_issue,
    )

    workspace = WorkspaceFactory()
    owner = UserFactory()
    MembershipFactory(workspace=workspace, user=owner, role=Role.OWNER)
    project = ProjectFactory(workspace=workspace, created_by=owner)
    for number in range(3):
        make_issue(project, owner, title=f"Before {number}")
    finished: list[float] = []

    def write():
        started = time.monotonic()
        make_issue(project, owner, title="During the export")
        finished.append(time.monotonic() - started)
        connections.close_all()

    def progress(count):
        if not finished:
            writer = threading.Thread(target=write)
            writer.start()
            writer.join(timeout=10)
            assert finished, "the write waited on the export"

    path = tmp_path / "snapshot.tar.gz"
    manifest = workspace_export(workspace_id=workspace.pk, path=path, progress=progress)
    _names, contents = members(path)
    titles = sorted(issue["title"] for issue in records(contents, "issues"))
    assert titles == ["Before 0", "Before 1", "Before 2"]
    assert manifest["counts"]["issue_history"] == 3  # the three "created" rows, not the fourth
    assert [seq["last_number"] for seq in records(contents, "issue_sequences")] == [3]
    from issues.models import Issue

    assert Issue.objects.filter(project=project).count() == 4
