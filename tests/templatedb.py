"""Under ``pytest -n N`` on PostgreSQL, the workers' test databases are copies of one migrated
template instead of N migrations run at once.

Migrating the schema takes several seconds of one core, and each of N workers did it at the
same time on a machine with two. Here the controller starts one ``migrate`` into
``test_<name>_template`` as soon as it is configured, in a process of its own, while the workers
start and collect; each worker waits for it, then has Django create its database ``WITH
TEMPLATE`` (a file copy) and run ``migrate``, which finds every migration applied. When the
template cannot be built, the workers migrate as before. The controller drops the template at
the end.

Run as ``python -m tests.templatedb NAME MARKER``: migrate into the (empty) database NAME, then
write ``ok`` or ``failed`` to MARKER.
"""

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

KEY = "collab_template_db"
_state = pytest.StashKey[dict]()
WAIT_SECONDS = 300


def _server_settings() -> dict | None:
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] != "django.db.backends.postgresql":
        return None
    return database


def maintenance(database: dict):
    """A connection to the server of ``database`` (Django's settings of a PostgreSQL database)
    that is on none of its databases: for creating and dropping them."""
    import psycopg

    return psycopg.connect(
        dbname="postgres",
        host=database.get("HOST") or "127.0.0.1",
        port=database.get("PORT") or 5432,
        user=database.get("USER") or None,
        password=database.get("PASSWORD") or None,
        autocommit=True,
    )


def drop(database: dict, name: str) -> None:
    """Drop the database ``name`` on the server of ``database``, sessions on it or not."""
    with maintenance(database) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def create(database: dict, name: str, *, template: str | None = None) -> None:
    """Create the database ``name`` on the server of ``database``: empty, or a copy of
    ``template``."""
    copy = f' TEMPLATE "{template}"' if template else ""
    with maintenance(database) as connection:
        connection.execute(f'CREATE DATABASE "{name}"{copy}')


def template() -> str | None:
    """In a worker, the migrated template its own database was copied from, if any."""
    from django.conf import settings

    return settings.DATABASES["default"].get("TEST", {}).get("TEMPLATE")


def start(config: pytest.Config) -> None:
    """In the controller of ``-n N`` (N > 1): create the template database and start its
    migration, without waiting for it."""
    workers = config.getoption("numprocesses", None)
    if hasattr(config, "workerinput") or not workers or workers in (0, 1):
        return
    try:
        database = _server_settings()
    except Exception:  # noqa: BLE001 - no Django settings: nothing to template
        return
    if database is None:
        return
    name = f"test_{database['NAME']}_template"
    handle, marker = tempfile.mkstemp(prefix="collab-template-", suffix=".status")
    os.close(handle)
    os.unlink(marker)  # written by the migration when it ends
    try:
        drop(database, name)
        create(database, name)
    except Exception:  # noqa: BLE001 - the workers migrate as before
        return
    process = subprocess.Popen(  # noqa: S603 - this module, fixed arguments
        [sys.executable, "-m", "tests.templatedb", name, marker],
        cwd=Path(__file__).resolve().parent.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    config.stash[_state] = {"name": name, "marker": marker, "process": process}


def configure_node(node) -> None:
    """Tell each worker the template's name and where its status will be."""
    state = node.config.stash.get(_state, None)
    if state:
        node.workerinput[KEY] = {"name": state["name"], "marker": state["marker"]}


def finish(config: pytest.Config) -> None:
    """In the controller, at the end: the template's process and database go."""
    state = config.stash.get(_state, None)
    if not state:
        return
    state["process"].kill()
    state["process"].wait()
    Path(state["marker"]).unlink(missing_ok=True)
    with contextlib.suppress(Exception):  # the server went away first: nothing to drop
        drop(_server_settings(), state["name"])


def use(config: pytest.Config) -> None:
    """In a worker, before its database is created: wait for the template, and copy it when
    it was built."""
    given = getattr(config, "workerinput", {}).get(KEY)
    if not given:
        return
    marker = Path(given["marker"])
    deadline = time.monotonic() + WAIT_SECONDS
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    if not marker.exists() or marker.read_text() != "ok":
        return
    from django.conf import settings

    settings.DATABASES["default"].setdefault("TEST", {})["TEMPLATE"] = given["name"]


def build(name: str, marker: Path) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "collab.settings.test")
    status = "failed"
    try:
        import django
        from django.conf import settings

        settings.DATABASES["default"]["NAME"] = name
        settings.DATABASES.pop("replica", None)
        django.setup()
        from django.core.management import call_command
        from django.db import connections

        call_command("migrate", verbosity=0, interactive=False)
        connections.close_all()  # a template takes no copy while a session is on it
        status = "ok"
    finally:
        partial = marker.with_suffix(".partial")
        partial.write_text(status)
        partial.replace(marker)
    return 0


if __name__ == "__main__":
    sys.exit(build(sys.argv[1], Path(sys.argv[2])))
