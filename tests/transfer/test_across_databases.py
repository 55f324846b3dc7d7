"""An archive made on PostgreSQL imports into SQLite, and one made on SQLite into PostgreSQL.

``archives/made-on-<database>.tar.gz`` are exports of the ``full`` workspace (tests/transfer/
conftest.py, with credentials and events) made once on each database; each lane of the suite
imports both, so between them the two lanes cross both ways. Written again with
``COLLAB_WRITE_TRANSFER_ARCHIVES=1 .venv/bin/pytest tests/transfer/test_across_databases.py``
(on each database) when the format changes.
"""

import os
import shutil
from pathlib import Path

import pytest
from django.db import connection

from accounts.models import User
from gitintegration import git
from gitintegration.models import Repository
from issues.models import Issue, IssueSequence
from notifications.models import Webhook
from tests.factories import PASSWORD
from tests.transfer.archives import manifest, normalized
from transfer.archive import FORMAT_VERSION
from transfer.exporting import workspace_export
from transfer.importing import workspace_import

ARCHIVES = Path(__file__).with_name("archives")
MADE_ON = ("postgresql", "sqlite")


@pytest.mark.skipif(
    not os.environ.get("COLLAB_WRITE_TRANSFER_ARCHIVES"), reason="writes the fixture archives"
)
def test_write_the_archive_of_this_database(full, tmp_path):
    path = tmp_path / "made.tar.gz"
    workspace_export(
        workspace_id=full.workspace.pk, path=path, include_credentials=True, include_events=True
    )
    shutil.copyfile(path, ARCHIVES / f"made-on-{connection.vendor}.tar.gz")


def imported_and_exported_again(archive: Path, folder: Path):
    """The workspace ``archive`` imports as, and the records of the archive and of that
    workspace's export, modulo ids."""
    copy = workspace_import(path=archive)
    again = folder / "again.tar.gz"
    workspace_export(
        workspace_id=copy.pk, path=again, include_credentials=True, include_events=True
    )
    return copy, normalized(archive), normalized(again)


# Fields an archive of an older format lacks, and the value its records get: (format it came
# in, record type, field, value).
ADDED = [(3, "users", "kind", "person")]


def as_then(records: dict[str, list[dict]], version: int) -> dict[str, list[dict]]:
    """``records`` of this Collab's export as an archive of format ``version`` would hold them:
    without what came later (service accounts, users' kind), each such field the value an
    import of that archive gives it."""
    then = {name: [dict(record) for record in rows] for name, rows in records.items()}
    if version < 3:
        assert then["service_accounts"] == []
    for since, name, field, value in ADDED:
        if version < since:
            for record in then.get(name, []):
                assert record.pop(field) == value, (name, field)
    return then


@pytest.mark.parametrize("made_on", MADE_ON)
def test_an_archive_of_format_1_imports(db, made_on, tmp_path, git_storage):
    """Made before webhooks named their workspace (format 2): its webhooks are its
    workspace's project's, and everything else is read as before."""
    archive = ARCHIVES / f"format-1-made-on-{made_on}.tar.gz"
    assert manifest(archive)["format_version"] == 1
    copy, first, second = imported_and_exported_again(archive, tmp_path)
    second = as_then(second, 1)
    for kind in first:
        if kind != "webhooks":
            assert second[kind] == first[kind], kind
    webhook = Webhook.objects.get(workspace=copy)
    assert webhook.project.workspace_id == copy.pk
    assert [{**hook, "workspace_id": None} for hook in second["webhooks"]] == [
        {**hook, "workspace_id": None} for hook in first["webhooks"]
    ]


@pytest.mark.parametrize("made_on", MADE_ON)
def test_an_archive_of_format_2_imports(db, made_on, tmp_path, git_storage):
    """Made before service accounts (format 3): its people are people, and everything else
    is read as before."""
    archive = ARCHIVES / f"format-2-made-on-{made_on}.tar.gz"
    assert manifest(archive)["format_version"] == 2
    _copy, first, second = imported_and_exported_again(archive, tmp_path)
    assert as_then(second, 2) == first


@pytest.mark.parametrize("made_on", MADE_ON)
def test_an_archive_of_either_database_imports_and_exports_the_same(
    db, made_on, tmp_path, git_storage
):
    archive = ARCHIVES / f"made-on-{made_on}.tar.gz"
    assert manifest(archive)["database"] == made_on
    assert manifest(archive)["format_version"] == FORMAT_VERSION
    copy, first, second = imported_and_exported_again(archive, tmp_path)
    assert first["service_accounts"]  # the format's newest member is in it
    for kind in first:
        assert second[kind] == first[kind], kind
    # The hashes came with the credentials: the people sign in as before.
    assert User.objects.get(email="owner@acme.test").check_password(PASSWORD)
    numbers = Issue.objects.filter(project__workspace=copy).values_list("number", flat=True)
    assert sorted(numbers) == [1, 2]
    assert IssueSequence.objects.get(project__workspace=copy).last_number == 3
    repository = Repository.objects.get(project__workspace=copy)
    assert set(git.branches(git.mirror_path(repository.pk))) == {
        "main",
        "feature",
        "conflict",
        "docs",
    }
