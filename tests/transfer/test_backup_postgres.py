"""The PostgreSQL recipe of docs/operations/backups-and-moving-data.md, run as written: its
backup block against the live test database and a git storage with a mirror, its restore block
into a scratch database and a new git storage; the data and the refs come back."""

import subprocess
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from gitintegration import git
from issues import services as issue_services
from tests.docs.blocks import parse
from tests.factories import ProjectFactory, RepositoryFactory, UserFactory
from tests.gitorigin import git as git_in
from tests.liveserver import ROOT, database_url

PAGE = "docs/operations/backups-and-moving-data.md"
MARKER = "tests/transfer/test_backup_postgres.py runs this recipe"

pytestmark = [pytest.mark.slow(seconds=25), pytest.mark.django_db(transaction=True)]


def recipe() -> tuple[str, str]:
    """The page's backup block and restore block."""
    page = parse((ROOT / PAGE).read_text(encoding="utf-8"), PAGE)
    blocks = [block.text for block in page.blocks if block.not_run and MARKER in block.not_run]
    assert len(blocks) == 2, f"{PAGE} should hold the backup and the restore of the recipe"
    backup, restore = blocks
    assert "pg_dump --format=custom" in backup and "pg_restore" in restore
    return backup, restore


@pytest.fixture
def scratch():
    """A new, empty database beside the test database: the restore's target."""
    if connection.vendor != "postgresql":
        pytest.skip("the recipe is PostgreSQL's (DATABASE_URL)")
    name = f"{connection.settings_dict['NAME']}_restored"
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
        cursor.execute(f'CREATE DATABASE "{name}"')
    yield name
    connection.close()
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_the_documented_recipe_brings_the_database_and_the_mirrors_back(
    tmp_path, settings, origin, scratch
):
    owner = UserFactory(email="keeper@acme.test")
    project = ProjectFactory()
    issue = issue_services.issue_create(project=project, actor=owner, title="Kept across")
    repository = RepositoryFactory(project=project, clone_url=origin.url)
    settings.GIT_STORAGE_DIR = tmp_path / "git-one"
    with git.mirror_lock(repository.pk):
        mirror = git.mirror_fetch(repository_id=repository.pk, url=origin.url)

    backup, restore = recipe()
    source = database_url()
    restored = source.rsplit("/", 1)[0] + f"/{scratch}"
    script = "\n".join(
        [
            "set -euo pipefail",
            backup.replace("/var/backups/collab", str(tmp_path / "backups")),
            'export DATABASE_URL="$RESTORED_URL" GIT_STORAGE_DIR="$RESTORED_GIT"',
            restore,
        ]
    )
    done = subprocess.run(  # noqa: S603 - bash with the page's own blocks
        ["bash", "-c", script],  # noqa: S607
        cwd=ROOT,
        env={
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "DJANGO_SETTINGS_MODULE": "collab.settings.test",
            "DATABASE_URL": source,
            "GIT_STORAGE_DIR": str(settings.GIT_STORAGE_DIR),
            "RESTORED_URL": restored,
            "RESTORED_GIT": str(tmp_path / "git-two"),
        },
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    [dump] = list((tmp_path / "backups").glob("*/collab.dump"))
    assert dump.stat().st_size > 0

    with psycopg.connect(restored) as db:
        assert db.execute(
            "SELECT title, number FROM issues_issue WHERE id = %s", [issue.pk]
        ).fetchone() == ("Kept across", issue.number)
        assert db.execute(
            "SELECT email FROM accounts_user WHERE id = %s", [owner.pk]
        ).fetchone() == ("keeper@acme.test",)
        assert db.execute(
            "SELECT clone_url FROM gitintegration_repository WHERE id = %s", [repository.pk]
        ).fetchone() == (origin.url,)
    copy = tmp_path / "git-two" / f"{repository.pk}.git"
    refs = ["for-each-ref", "--format=%(refname) %(objectname)"]
    assert git_in(*refs, cwd=copy) == git_in(*refs, cwd=Path(mirror))
