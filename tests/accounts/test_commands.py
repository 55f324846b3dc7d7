"""The operator commands (docs/operations/commands.md): each success path, each error path, and one
real ``manage.py`` run to prove what a shell script sees."""

import os
import re
import subprocess
import sys
from datetime import timedelta
from io import StringIO
from urllib.parse import quote

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import keys, services
from accounts.models import ApiKey, Membership, Role, User, Workspace
from collab.api.exceptions import ValidationFailed
from events.models import Event
from projects.models import Project, ProjectMember
from tests.conftest import BLANK_PASSWORDS, assert_error, assert_ok, bearer
from tests.factories import PASSWORD, UserFactory, WorkspaceFactory, make_api_key

KEY_PATTERN = re.compile(r"clb_[0-9A-Za-z]{36}")
STRONG_PASSWORD = "plum-orbit-lantern-42"


def run(name: str, *args, **options) -> tuple[str, str]:
    stdout, stderr = StringIO(), StringIO()
    call_command(name, *args, stdout=stdout, stderr=stderr, **options)
    return stdout.getvalue(), stderr.getvalue()


# create_user ------------------------------------------------------------------------------


def test_create_user_with_a_new_workspace_makes_them_its_owner(db):
    out, _ = run(
        "create_user",
        "--email",
        " Ada@Example.COM ",
        "--password",
        STRONG_PASSWORD,
        "--name",
        "Ada",
        "--workspace",
        "Analytical",
    )
    user = User.objects.get(email="ada@example.com")
    assert user.name == "Ada"
    assert user.check_password(STRONG_PASSWORD)
    assert user.status == User.Status.ACTIVE and not user.is_staff
    workspace = Workspace.objects.get(name="Analytical")
    assert Membership.objects.get(workspace=workspace, user=user).role == Role.OWNER
    assert "ada@example.com" in out and "new workspace 'Analytical'" in out
    assert Event.objects.filter(type="workspace.created", workspace_id=workspace.pk).exists()


def test_create_user_in_an_existing_workspace_defaults_to_developer(db):
    workspace = WorkspaceFactory(name="Acme")
    run(
        "create_user", "--email", "dev@x.test", "--password", STRONG_PASSWORD, "--workspace", "Acme"
    )
    run(
        "create_user",
        "--email",
        "boss@x.test",
        "--password",
        STRONG_PASSWORD,
        "--workspace",
        "Acme",
        "--role",
        "admin",
    )
    roles = dict(Membership.objects.filter(workspace=workspace).values_list("user__email", "role"))
    assert roles == {"dev@x.test": Role.DEVELOPER, "boss@x.test": Role.ADMIN}
    assert Workspace.objects.filter(name="Acme").count() == 1


def test_create_user_without_workspace_and_as_superuser(db):
    run("create_user", "--email", "root@x.test", "--password", STRONG_PASSWORD, "--superuser")
    user = User.objects.get(email="root@x.test")
    assert user.is_staff and user.is_superuser
    assert not user.memberships.exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--email", "taken@x.test", "--password", STRONG_PASSWORD], "already exists"),
        (["--email", "TAKEN@x.test", "--password", STRONG_PASSWORD], "already exists"),
        (["--email", "new@x.test", "--password", "short"], "too short"),
        (["--email", "new@x.test", "--password", "password123"], "too common"),
        (["--email", "new@x.test", "--password", "84736251940"], "entirely numeric"),
        (["--email", "new@x.test", "--password", " " * 12], "blank"),
        (["--email", "new@x.test", "--password", "\t \u3000 \t  \u00a0 "], "blank"),
        (["--email", "not-an-email", "--password", STRONG_PASSWORD], "not a valid email"),
        (
            ["--email", "new@x.test", "--password", STRONG_PASSWORD, "--workspace", "W"]
            + ["--role", "emperor"],
            "Unknown role 'emperor'",
        ),
        (["--email", "new@x.test", "--password", STRONG_PASSWORD, "--role", "admin"], "--role"),
        (["--email", "new@x.test", "--password", STRONG_PASSWORD, "--name", "n" * 151], "long"),
        (["--email", "new@x.test"], "--password"),
    ],
)
def test_create_user_rejects_bad_input(db, arguments, message):
    UserFactory(email="taken@x.test")
    with pytest.raises(CommandError, match=message):
        run("create_user", *arguments)
    assert not User.objects.filter(email="new@x.test").exists()
    assert not Workspace.objects.filter(name="W").exists()


# create_api_key ---------------------------------------------------------------------------


def test_create_api_key_prints_the_key_alone_last_and_it_authenticates(world):
    out, _ = run(
        "create_api_key",
        "--email",
        "dev@acme.test",
        "--name",
        "ci",
        "--scopes",
        "projects:read, issues:write",
        "--expires-in",
        "90d",
    )
    lines = out.splitlines()
    key = lines[-1]
    assert KEY_PATTERN.fullmatch(key)
    assert key not in "\n".join(lines[:-1]), "the summary must not repeat the key"
    api_key = ApiKey.objects.get(key_hash=keys.hash_key(key))
    assert api_key.user == world.developer
    assert api_key.name == "ci"
    assert api_key.prefix == key[:12] and api_key.prefix in out
    assert api_key.scopes == ["issues:write", "projects:read"]
    assert abs(api_key.expires_at - (timezone.now() + timedelta(days=90))) < timedelta(minutes=1)

    body = assert_ok(bearer(key).get("/v1/projects"))
    assert [p["name"] for p in body["data"]] == ["Rocket"]
    # Limited to its scopes: no projects:write.
    error = assert_error(
        bearer(key).post("/v1/projects", {"name": "X"}, format="json"), 403, "FORBIDDEN"
    )
    assert error["details"]["required_scope"] == "projects:write"


def test_create_api_key_all_scopes_never_expiring_and_quiet(world):
    out, _ = run(
        "create_api_key",
        "--email",
        "owner@acme.test",
        "--name",
        "forever",
        "--scopes",
        "all",
        "--expires-in",
        "never",
        verbosity=0,
    )
    assert KEY_PATTERN.fullmatch(out.strip())
    api_key = ApiKey.objects.get(name="forever")
    assert api_key.expires_at is None
    assert len(api_key.scopes) == 8


def test_create_api_key_defaults_to_one_year(world):
    run("create_api_key", "--email", "owner@acme.test", "--name", "k", "--scopes", "users:read")
    expires_at = ApiKey.objects.get(name="k").expires_at
    assert abs(expires_at - (timezone.now() + timedelta(days=365))) < timedelta(minutes=1)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"--email": "nobody@acme.test"}, "No user has the email address 'nobody@acme.test'"),
        ({"--scopes": "projects:read,projects:destroy"}, "Unknown scope.*projects:destroy"),
        ({"--scopes": " , "}, "at least one scope"),
        ({"--expires-in": "90x"}, "--expires-in: '90x' is not a duration"),
        ({"--expires-in": "0d"}, "is not a duration"),
        ({"--expires-in": "100y"}, "at most"),
        ({"--name": "  "}, "--name must not be empty"),
        ({"--name": "n" * 101}, "--name is too long"),
    ],
)
def test_create_api_key_rejects_bad_input(world, overrides, message):
    options = {
        "--email": "dev@acme.test",
        "--name": "ci",
        "--scopes": "projects:read",
        "--expires-in": "90d",
        **overrides,
    }
    arguments = [part for pair in options.items() for part in pair]
    with pytest.raises(CommandError, match=message):
        run("create_api_key", *arguments)
    assert not ApiKey.objects.exists()


def test_create_api_key_without_expiry_where_the_operator_forbids_it(world, settings):
    settings.API_KEY_ALLOW_NO_EXPIRY = False
    with pytest.raises(CommandError, match="without expiry are not allowed"):
        run(
            "create_api_key",
            *["--email", "dev@acme.test", "--name", "k", "--scopes", "projects:read"],
            *["--expires-in", "never"],
        )


def test_create_api_key_warns_about_an_inactive_owner(world):
    world.developer.status = User.Status.SUSPENDED
    world.developer.save()
    out, err = run(
        "create_api_key", "--email", "dev@acme.test", "--name", "k", "--scopes", "projects:read"
    )
    assert KEY_PATTERN.fullmatch(out.splitlines()[-1])
    assert "suspended" in err


def _subprocess_database_url() -> str:
    """A URL for the database this test runs in, so a child process sees the same rows."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        if connection.creation.is_in_memory_db(db["NAME"]):
            pytest.skip("an in-memory SQLite test database is invisible to a subprocess")
        return f"sqlite:///{db['NAME']}"
    auth = quote(db["USER"] or "", safe="")
    if db["PASSWORD"]:
        auth += ":" + quote(db["PASSWORD"], safe="")
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{auth}@{db['HOST']}{port}/{db['NAME']}"


def _manage(*arguments: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "collab.settings.test",
        "DATABASE_URL": _subprocess_database_url(),
    }
    return subprocess.run(
        [sys.executable, "manage.py", *arguments],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_manage_py_create_api_key_in_a_real_process():
    user = UserFactory(email="cli@example.com")
    workspace = WorkspaceFactory()
    Membership.objects.create(workspace=workspace, user=user, role=Role.OWNER)

    result = _manage(
        *["create_api_key", "--email", "cli@example.com", "--name", "from the shell"],
        *["--scopes", "projects:read", "--expires-in", "30d"],
    )

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) > 1, "a summary comes before the key"
    key = lines[-1]
    assert KEY_PATTERN.fullmatch(key), result.stdout
    assert key not in "\n".join(lines[:-1])
    assert ApiKey.objects.get(key_hash=keys.hash_key(key)).user == user
    assert_ok(bearer(key).get("/v1/projects"))

    failed = _manage(
        "create_api_key", "--email", "ghost@example.com", "--name", "x", "--scopes", "all"
    )
    assert failed.returncode != 0
    assert failed.stdout == ""
    assert "No user has the email address 'ghost@example.com'" in failed.stderr
    assert "Traceback" not in failed.stderr


# revoke_api_key ---------------------------------------------------------------------------


def test_revoke_api_key_by_full_key(world):
    key = make_api_key(world.developer, ["projects:read"], name="laptop")
    assert_ok(bearer(key).get("/v1/projects"))
    out, _ = run("revoke_api_key", key)
    assert "Revoked API key 'laptop'" in out and "dev@acme.test" in out
    assert ApiKey.objects.get(name="laptop").revoked_at is not None
    assert_error(bearer(key).get("/v1/projects"), 401, "UNAUTHORIZED")


@pytest.mark.parametrize("form", ["{prefix}", "{prefix}…", "  {prefix}...  "])
def test_revoke_api_key_by_display_prefix(world, form):
    key = make_api_key(world.developer, ["projects:read"], name="laptop")
    other = make_api_key(world.developer, ["projects:read"], name="desktop")
    run("revoke_api_key", form.format(prefix=key[:12]))
    assert ApiKey.objects.get(name="laptop").is_revoked
    assert not ApiKey.objects.get(name="desktop").is_revoked
    assert_ok(bearer(other).get("/v1/projects"))


def test_revoke_api_key_twice_says_so_and_keeps_the_first_date(world):
    key = make_api_key(world.developer, ["projects:read"])
    run("revoke_api_key", key)
    first = ApiKey.objects.get().revoked_at
    out, _ = run("revoke_api_key", key)
    assert "already revoked" in out
    assert ApiKey.objects.get().revoked_at == first


def test_revoke_api_key_refuses_an_ambiguous_prefix(world):
    key = make_api_key(world.developer, ["projects:read"], name="one")
    # A second key sharing the display prefix: rare, but the command must not guess.
    twin = keys.generate_key()
    ApiKey.objects.create(
        user=world.owner,
        name="two",
        prefix=key[:12],
        key_hash=keys.hash_key(twin),
        scopes=["projects:read"],
    )
    with pytest.raises(CommandError, match="ambiguous"):
        run("revoke_api_key", key[:12])
    assert not ApiKey.objects.filter(revoked_at__isnull=False).exists()
    run("revoke_api_key", key)  # the full key still picks exactly one
    assert list(ApiKey.objects.filter(revoked_at__isnull=False).values_list("name", flat=True)) == [
        "one"
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("clb_nothere", "Expected a full API key"),
        ("hello", "Expected a full API key"),
        ("clb_ABCDEFGH", "No API key has the prefix clb_ABCDEFGH"),
        ("<a well-formed key of no one>", "No API key matches this key"),
        ("clb_" + "a" * 36, "checksum"),
    ],
)
def test_revoke_api_key_rejects_unknown_or_malformed_keys(world, value, message):
    make_api_key(world.developer, ["projects:read"])
    if value.startswith("<"):
        # Generated here, not in the parameters: test ids must match across xdist workers.
        value = keys.generate_key()
    with pytest.raises(CommandError, match=message):
        run("revoke_api_key", value)
    assert not ApiKey.objects.filter(revoked_at__isnull=False).exists()


# set_tier ---------------------------------------------------------------------------------


def test_set_tier_changes_the_users_tier(world):
    out, _ = run("set_tier", "--email", "Dev@Acme.test", "--tier", "premium")
    assert "standard → premium" in out
    world.developer.refresh_from_db()
    assert world.developer.tier == User.Tier.PREMIUM
    out, _ = run("set_tier", "--email", "dev@acme.test", "--tier", "premium")
    assert "already" in out
    run("set_tier", "--email", "dev@acme.test", "--tier", "enterprise")
    world.developer.refresh_from_db()
    assert world.developer.tier == User.Tier.ENTERPRISE


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--email", "dev@acme.test", "--tier", "platinum"], "Unknown tier 'platinum'"),
        (["--email", "nobody@acme.test", "--tier", "premium"], "No user has the email"),
        (["--email", "dev@acme.test"], "--tier"),
    ],
)
def test_set_tier_rejects_bad_input(world, arguments, message):
    with pytest.raises(CommandError, match=message):
        run("set_tier", *arguments)
    world.developer.refresh_from_db()
    assert world.developer.tier == User.Tier.STANDARD


# seed_demo --------------------------------------------------------------------------------


def test_seed_demo_creates_a_workspace_with_people_and_projects(db):
    out, err = run("seed_demo", "--projects", "4", "--developers", "2", "--password", PASSWORD)
    demo = Workspace.objects.get(name="Demo")
    roles = sorted(Membership.objects.filter(workspace=demo).values_list("role", flat=True))
    assert roles == ["developer", "developer", "owner", "viewer"]
    projects = Project.objects.filter(workspace=demo)
    assert projects.count() == 4
    for project in projects:
        assert ProjectMember.objects.filter(project=project).count() == 3  # owner + 2 devs
    assert Event.objects.filter(type="project.created", workspace_id=demo.pk).count() == 4
    owner = User.objects.get(email="owner@demo.collab.localhost")
    assert owner.check_password(PASSWORD)
    assert PASSWORD in out
    assert "Seeding demo" in err and "100%" in err  # the progress bar


def test_seed_demo_runs_again_without_crashing_or_duplicating(db):
    run("seed_demo", "--projects", "3")
    users, events = User.objects.count(), Event.objects.count()
    out, _ = run("seed_demo", "--projects", "3")
    assert "passwords are unchanged" in out
    assert User.objects.count() == users
    assert Event.objects.count() == events
    assert Project.objects.count() == 3
    run("seed_demo", "--projects", "5", verbosity=0)
    assert Project.objects.count() == 5
    assert Workspace.objects.filter(name="Demo").count() == 1


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--projects", "-1"], "--projects"),
        (["--projects", "many"], "invalid int"),
        (["--developers", "1000"], "--developers"),
        (["--workspace", " "], "--workspace"),
    ],
)
def test_seed_demo_rejects_bad_input(db, arguments, message):
    with pytest.raises(CommandError, match=message):
        run("seed_demo", *arguments)
    assert not User.objects.exists()


# bootstrap --------------------------------------------------------------------------------


def test_bootstrap_first_start_prints_credentials_once(db):
    out, _ = run("bootstrap", "--port", "8123")

    admin = User.objects.get(email="admin@collab.localhost")
    assert admin.is_staff and admin.is_superuser
    password = re.search(r"Password\s+(\S+)", out).group(1)
    assert admin.check_password(password)
    key = KEY_PATTERN.search(out).group(0)
    assert "http://127.0.0.1:8123/admin/" in out
    assert f'curl -H "Authorization: Bearer {key}" http://127.0.0.1:8123/v1/projects' in out
    workspace = Workspace.objects.get(name="Default")
    assert Membership.objects.get(workspace=workspace, user=admin).role == Role.OWNER
    api_key = ApiKey.objects.get(user=admin)
    assert len(api_key.scopes) == 8 and api_key.expires_at is not None
    assert_ok(bearer(key).get("/v1/projects"))
    login = APIClient().post(
        "/v1/auth/login", {"email": "admin@collab.localhost", "password": password}, format="json"
    )
    assert_ok(login)

    again, _ = run("bootstrap", "--port", "8123")
    assert again.strip() == (
        "Collab is running at http://127.0.0.1:8123 — docs at http://127.0.0.1:8123/v1/docs"
    )
    assert password not in again and "clb_" not in again
    assert User.objects.count() == 1 and ApiKey.objects.count() == 1


def test_bootstrap_leaves_an_existing_database_alone(world):
    out, _ = run("bootstrap", "--port", "9000")
    assert out.startswith("Collab is running at http://127.0.0.1:9000")
    assert not User.objects.filter(email="admin@collab.localhost").exists()
    assert not ApiKey.objects.exists()


@pytest.mark.parametrize(("port", "message"), [("0", "--port"), ("70000", "--port"), ("x", "int")])
def test_bootstrap_rejects_a_bad_port(db, port, message):
    with pytest.raises(CommandError, match=message):
        run("bootstrap", "--port", port)
    assert not User.objects.exists()


@pytest.mark.parametrize("password", BLANK_PASSWORDS)
def test_the_user_create_service_refuses_a_password_of_whitespace(db, password):
    with pytest.raises(ValidationFailed) as refused:
        services.user_create(email="new@x.test", password=password)
    assert list(refused.value.details) == ["password"]
    assert not User.objects.filter(email="new@x.test").exists()
