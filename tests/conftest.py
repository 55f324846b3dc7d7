"""Fixed personas and API clients shared by every test module.

The world: workspace "Acme" with an owner, an admin, a developer and a viewer, and one
private project on which the owner and the developer sit. An outsider owns another
workspace ("Globex") with its own project.
"""

import copy
import fcntl
import gc
import os
import shutil
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import AccessToken

from accounts.models import Role
from collab.api.scopes import ALL_SCOPES
from tests import lanes, templatedb
from tests.factories import (
    MembershipFactory,
    ProjectFactory,
    ProjectMemberFactory,
    UserFactory,
    WorkspaceFactory,
    make_api_key,
)
from tests.gitorigin import Origin


@pytest.hookimpl(trylast=True)  # after -m, -k and --deselect: the tests that will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slowest tests start first (by ``@pytest.mark.slow(seconds=...)``): a two-minute
    test started last is the run's wall time. A module's tests stay together (its
    module-scoped fixtures are built once), modules ordered by their slowest test. Under
    ``-n N``, the live tests are dealt to lanes (tests/lanes.py)."""
    slowest: dict[str, float] = {}
    for item in items:
        slowest[lanes.module(item)] = max(slowest.get(lanes.module(item), 0.0), lanes.seconds(item))
    items.sort(key=lambda item: (-slowest[lanes.module(item)], -lanes.seconds(item)))
    lanes.write(config, items)
    config.stash[_transactional_modules] = {
        lanes.module(item) for item in items if _transactional(item)
    }


_transactional_modules = pytest.StashKey[set[str]]()
TRANSACTIONAL_FIXTURES = {"transactional_db", "live_server", "django_db_reset_sequences"}
TRANSACTIONAL_KWARGS = ("transaction", "reset_sequences", "serialized_rollback")


def _transactional(item: pytest.Item) -> bool:
    """Whether the test commits for real (``transaction=True``): its tables are emptied after
    it, so no module-wide transaction may be open around it."""
    marker = item.get_closest_marker("django_db")
    if marker is not None and any(marker.kwargs.get(name) for name in TRANSACTIONAL_KWARGS):
        return True
    return bool(TRANSACTIONAL_FIXTURES & set(getattr(item, "fixturenames", ())))


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (modules, schemas, the app registry: most of a worker's heap,
    kept to the end) is left out of the collector's passes, as the servers do at start
    (collab/serving.py): a full collection walked it all again, about 4% of a worker's CPU."""
    gc.collect()
    gc.freeze()


def pytest_configure(config: pytest.Config) -> None:
    lanes.configure(config)
    templatedb.start(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    lanes.unconfigure(config)
    templatedb.finish(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    lanes.configure_node(node)
    templatedb.configure_node(node)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, request):
    """The worker's database, a copy of the migrated template where there is one
    (tests/templatedb.py)."""
    templatedb.use(request.config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    return lanes.make_scheduler(config, log)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, whose drop at the end no lingering session can hold
    up: a thread that outlived its test (a delivery pool's sender, a live server's handler)
    may still hold a connection, and PostgreSQL's DROP DATABASE then waits for it and fails."""
    yield
    from django.db import connection

    if connection.vendor == "postgresql":
        with django_db_blocker.unblock(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )


@pytest.fixture(scope="session", autouse=True)
def quick_transactional_teardown():
    """Transactional tests end with their tables emptied by DELETE (tests/dbflush.py)."""
    from tests import dbflush

    dbflush.install()
    yield
    dbflush.uninstall()


@pytest.fixture(scope="session", autouse=True)
def redis_clean_slate():
    """Each xdist worker owns one Redis database (collab.settings.test): empty it at the start,
    so tasks, counters and cache entries an earlier run left behind cannot reach this one."""
    if settings.REDIS_URL:
        import redis

        client = redis.Redis.from_url(settings.REDIS_URL)
        try:
            client.flushdb()
        finally:
            client.close()


@pytest.fixture(autouse=True)
def fanout_unmarked():
    """No test inherits the mark of a coalesced fan-out queued by the one before it and never
    run there (its broker stubbed, or its worker stopped): in production the mark lapses after
    notifications.fanout.FANOUT_QUEUED_SECONDS; a test would wait that long for its events."""
    from notifications.fanout import _fanout_unmark

    _fanout_unmark()


@pytest.fixture
def exports_storage(settings, tmp_path):
    """The "exports" storage in a folder of this test's own: the archives it makes are its
    own, and gone after it. Its path is the answer."""
    location = tmp_path / "exports"
    for name, value in exports_settings(location).items():
        setattr(settings, name, value)
    return location


def exports_settings(location) -> dict:
    """The settings that put the "exports" storage in ``location``."""
    return {
        "EXPORT_DIR": location,
        "STORAGES": {
            **settings.STORAGES,
            "exports": {
                **settings.STORAGES["exports"],
                "OPTIONS": {
                    **settings.STORAGES["exports"].get("OPTIONS", {}),
                    "location": location,
                },
            },
        },
    }


@dataclass
class World:
    acme: object
    globex: object
    owner: object
    admin: object
    developer: object
    viewer: object
    outsider: object
    project: object
    other_project: object


@pytest.fixture
def world(shared_world, db) -> World:
    """The world of the test: a copy of its module's (``shared_world``), or, in a module that
    cannot share one, built for the test."""
    if shared_world is None:
        return world_build()
    return copy.deepcopy(shared_world)


@pytest.fixture(scope="module")
def shared_world(request) -> World | None:
    """The world built once for the module (``world_once``) when the module's tests may share
    it: none of them commits for real (``transaction=True`` empties every table, which a
    module-wide transaction cannot be open around). Each test's writes roll back with its own
    transaction, a savepoint inside the module's. ``None`` otherwise, and for a module marked
    ``own_world`` (a test that needs rows made at its own time, not the module's)."""
    transactional = request.config.stash.get(_transactional_modules, None)
    module = request.node.nodeid.split("::", 1)[0]
    if (
        transactional is None
        or module in transactional
        or request.node.get_closest_marker("own_world")
    ):
        return None
    return request.getfixturevalue("world_once")


@pytest.fixture(scope="module")
def module_db(django_db_setup, django_db_blocker):
    """A transaction around a module's tests, rolled back after the last of them: what a
    module-scoped fixture writes under ``module_db.unblock()`` is there for each test, whose own
    transaction (pytest-django's ``db``) is a savepoint inside it, rolled back after the test.
    Django's ``setUpTestData``, for a pytest module. Not for a module with ``transaction=True``
    tests (they empty every table)."""
    outer = transaction.atomic()
    # As TestCase marks its own: a service's durable atomic block nests in it, as in a test's.
    outer._from_testcase = True
    with django_db_blocker.unblock():
        outer.__enter__()
    yield django_db_blocker
    with django_db_blocker.unblock():
        transaction.set_rollback(True)
        outer.__exit__(None, None, None)


@pytest.fixture(scope="module")
def world_once(module_db) -> World:
    """The world, built once for a module (``module_db``): what ``world`` gives a copy of in a
    module that may share it (``shared_world``)."""
    with module_db.unblock():
        return world_build()


@pytest.fixture
def world_of_module(world_once, db) -> World:
    """``world_once``, as a test's own: the rows are the module's (each test's writes roll
    back), the instances a copy, so that what a test sets on one never reaches the next."""
    return copy.deepcopy(world_once)


def world_build() -> World:
    acme = WorkspaceFactory(name="Acme", slug="acme")
    globex = WorkspaceFactory(name="Globex", slug="globex")
    owner = UserFactory(email="owner@acme.test", name="Olive Owner")
    admin = UserFactory(email="admin@acme.test", name="Adam Admin")
    developer = UserFactory(email="dev@acme.test", name="Dana Developer")
    viewer = UserFactory(email="viewer@acme.test", name="Vic Viewer")
    outsider = UserFactory(email="outsider@globex.test", name="Otto Outsider")
    MembershipFactory(workspace=acme, user=owner, role=Role.OWNER)
    MembershipFactory(workspace=acme, user=admin, role=Role.ADMIN)
    MembershipFactory(workspace=acme, user=developer, role=Role.DEVELOPER)
    MembershipFactory(workspace=acme, user=viewer, role=Role.VIEWER)
    MembershipFactory(workspace=globex, user=outsider, role=Role.OWNER)
    project = ProjectFactory(workspace=acme, name="Rocket", created_by=owner)
    for user in (owner, developer, viewer):
        ProjectMemberFactory(project=project, user=user)
    other_project = ProjectFactory(workspace=globex, name="Secret", created_by=outsider)
    ProjectMemberFactory(project=other_project, user=outsider)
    return World(acme, globex, owner, admin, developer, viewer, outsider, project, other_project)


@pytest.fixture
def root(admin_user):
    """The superuser the admin pages are used by (pytest-django's ``admin_user``)."""
    return admin_user


@pytest.fixture
def browser(admin_client):
    """A Django test client logged in as ``root`` (pytest-django's ``admin_client``)."""
    return admin_client


@pytest.fixture
def receiver():
    """A webhook receiver on 127.0.0.1 answering 200 (or the statuses it is told to)."""
    from tests.notifications.receiver import start_receiver

    receiver, server = start_receiver()
    yield receiver
    server.shutdown()
    server.server_close()


def client_for(user=None, scopes=ALL_SCOPES, **key_options) -> APIClient:
    """An API client authenticated with a fresh API key of ``user`` (anonymous if None)."""
    client = APIClient()
    if user is not None:
        key = make_api_key(user, scopes, **key_options)
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def bearer(credential: str, **extra) -> APIClient:
    """An API client sending ``credential`` (an API key or a token) as its Bearer header."""
    client = APIClient(**extra)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {credential}")
    return client


def jwt_client(user, *, expired: bool = False) -> APIClient:
    """An API client with a fresh access token of ``user`` (one an hour expired if asked)."""
    token = AccessToken.for_user(user)
    if expired:
        token.set_exp(from_time=timezone.now() - timedelta(hours=1))
    return bearer(str(token))


@pytest.fixture
def api(world):
    """``api.owner``, ``api.developer`` ...: full-scope key clients of each persona."""

    class Clients:
        anonymous = APIClient()
        owner = client_for(world.owner)
        admin = client_for(world.admin)
        developer = client_for(world.developer)
        viewer = client_for(world.viewer)
        outsider = client_for(world.outsider)

    return Clients


def assert_error(response, status: int, code: str):
    """The contract's error envelope, with the given status and code."""
    assert response.status_code == status, response.content
    body = response.json()
    assert body["success"] is False
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert isinstance(body["error"]["details"], dict)
    return body["error"]


def assert_ok(response, status: int = 200):
    assert response.status_code == status, response.content
    body = response.json()
    assert body["success"] is True
    assert "data" in body
    return body


# Passwords of whitespace alone: long enough, not common, not numeric, and refused everywhere a
# password is set (accounts.passwords.NotBlankValidator).
BLANK_PASSWORDS = [" " * 8, " " * 24, "\t" * 10, " \t \u00a0 \u3000  \u2003 "]


# The embedded default's database, in its data folder (collab.settings.base).
DATABASE_FILE = "collab.sqlite3"


@pytest.fixture(scope="session")
def embedded_database(tmp_path_factory):
    """Gives a data folder of the embedded default (``./run``: SQLite) the database that
    ``manage.py migrate`` leaves in a new one, migrated once per run, whatever the workers (a
    copy: several seconds of a core less per test that starts such a stack). Call it with the
    folder."""
    from tests.liveserver import embedded_env, manage

    # Under xdist, the workers' temporary folders share a parent (this run's): the first worker
    # that needs the database migrates it there, under a lock, and the others copy it.
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    migrated = shared / "embedded-migrated"
    with open(shared / "embedded-migrated.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (migrated / "migrated").exists():
            shutil.rmtree(migrated, ignore_errors=True)
            migrated.mkdir()
            manage(embedded_env(migrated), "migrate", "--noinput", "-v0")
            (migrated / "migrated").touch()

    def put(data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(migrated / DATABASE_FILE, data_dir / DATABASE_FILE)

    return put


@pytest.fixture(scope="session")
def built_origin(tmp_path_factory) -> Origin:
    """The origin's history, made once per run (about 30 git commands); tests get a copy."""
    origin = Origin(tmp_path_factory.mktemp("origin"))
    origin.commit("main", {"README.md": "# Rocket\n"}, "Initial commit")
    second = origin.commit("main", {"app.txt": "line one\nline two\n"}, "Add the app")
    origin.commit(
        "feature", {"feature.txt": "a feature\n"}, "Add the feature, fixes #1", start=second
    )
    origin.commit("conflict", {"app.txt": "LINE ONE (theirs)\nline two\n"}, "Shout", start=second)
    origin.commit("main", {"app.txt": "line one (ours)\nline two\n"}, "Refine the app")
    origin.commit("docs", {"docs.txt": "docs\n"}, "Write the docs", start="main")
    return origin


@pytest.fixture
def origin(built_origin, tmp_path) -> Origin:
    """A test's own copy of the built origin: it may commit, push and rewrite at will."""
    return built_origin.copy_to(tmp_path)
