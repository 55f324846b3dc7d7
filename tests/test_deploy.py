"""The deployment files (Dockerfile, docker-compose.yml) and the production settings.

No Docker engine runs where the suite runs, so the files are read as data: the compose file
with PyYAML, the Dockerfile instruction by instruction. What can run without Docker does:
the production settings under ``manage.py check --deploy``, built from the environment the
compose file gives the containers, and the health probe the image uses, against a real
gunicorn.
"""

import os
import re
import secrets
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
APP_SERVICES = ("web", "worker", "beat")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def dockerfile() -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` pairs, continuation lines joined, comments dropped."""
    text = (ROOT / "Dockerfile").read_text()
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    instructions = []
    for line in joined.splitlines():
        if line.strip():
            keyword, _, arguments = line.strip().partition(" ")
            instructions.append((keyword.upper(), arguments.strip()))
    return instructions


def _words(command) -> list[str]:
    """A compose ``command``/``test`` (list or string) as a flat list of words."""
    if isinstance(command, str):
        return shlex.split(command)
    return [word for part in command for word in shlex.split(part)]


def _interpolate(value: str, given: dict[str, str]) -> str:
    """Compose's ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?error}``, from ``given``."""

    def replace(match):
        name, operator, rest = match.group(1), match.group(2), match.group(3)
        if name in given:
            return given[name]
        if operator == ":?":
            raise KeyError(f"compose would refuse to start without {name}: {rest}")
        return rest if operator == ":-" else ""

    return re.sub(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}", replace, value)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _production_env(**overrides: str) -> dict[str, str]:
    """The test process's environment turned production: a real secret, no DEBUG."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in {"DEBUG", "DJANGO_SETTINGS_MODULE", "SECRET_KEY", "ALLOWED_HOSTS"}
        and not name.startswith("PYTEST_")
    }
    env.update(
        DJANGO_SETTINGS_MODULE="collab.settings.production",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="collab.example.com",
    )
    env.update(overrides)
    return env


def _manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(  # noqa: S603 - our own manage.py, fixed arguments
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


# docker-compose.yml ---------------------------------------------------------------------


def test_compose_has_the_five_services(compose):
    assert set(compose["services"]) == {"postgres", "redis", "web", "worker", "beat"}


def test_postgres_and_redis_have_health_checks(compose):
    postgres, redis = compose["services"]["postgres"], compose["services"]["redis"]
    assert postgres["image"] == "postgres:16"
    assert "pg_isready" in _words(postgres["healthcheck"]["test"])
    assert postgres["environment"]["POSTGRES_DB"] == "collab"
    assert redis["image"] == "redis:7"
    assert _words(redis["healthcheck"]["test"])[-2:] == ["redis-cli", "ping"]
    assert any("/var/lib/postgresql/data" in volume for volume in postgres["volumes"])


@pytest.mark.parametrize("name", APP_SERVICES)
def test_app_services_share_the_image_and_the_production_environment(compose, name):
    service = compose["services"][name]
    assert service["build"] == "."
    env = service["environment"]
    assert env["DJANGO_SETTINGS_MODULE"] == "collab.settings.production"
    assert re.fullmatch(
        r"postgres://[^@]+@postgres:5432/collab", _interpolate(env["DATABASE_URL"], {})
    )
    assert env["REDIS_URL"] == "redis://redis:6379/0"
    assert env["SECRET_KEY"].startswith("${SECRET_KEY:?"), "no default secret, ever"
    assert _interpolate(env["ALLOWED_HOSTS"], {})
    assert env["SECURE_SSL_REDIRECT"] == "0"
    for dependency in ("postgres", "redis"):
        assert service["depends_on"][dependency] == {"condition": "service_healthy"}


def test_web_worker_and_beat_share_the_git_mirrors(compose):
    for name in APP_SERVICES:
        assert "git-mirrors:/app/var/git" in compose["services"][name]["volumes"], name
    assert "git-mirrors" in compose["volumes"]
    # Created in the image, owned by the service's user, so the new volume is writable.
    assert "mkdir -p /app/var/git" in (ROOT / "Dockerfile").read_text()


def test_web_migrates_then_serves_gunicorn_and_is_probed_on_healthz(compose):
    web = compose["services"]["web"]
    words = _words(web["command"])
    script = " ".join(words)
    assert "migrate --noinput" in script and "gunicorn collab.asgi" in script
    assert "--worker-class collab.serving.UvicornWorker" in script
    assert script.index("migrate") < script.index("gunicorn"), "migrations run first"
    assert re.search(r"migrate --noinput\s*&&\s*exec gunicorn", script), "no serving if it fails"
    assert "--bind 0.0.0.0:8000" in script
    assert any(port.endswith(":8000") for port in web["ports"])
    assert _words(web["healthcheck"]["test"]) == ["CMD", "python", "scripts/healthcheck.py"]
    assert "/healthz" in (ROOT / "scripts" / "healthcheck.py").read_text()


@pytest.mark.parametrize("name", ["worker", "beat"])
def test_celery_services_run_the_collab_app_once_web_is_healthy(compose, name):
    service = compose["services"][name]
    assert _words(service["command"])[:4] == ["celery", "-A", "collab", name]
    assert service["depends_on"]["web"] == {"condition": "service_healthy"}
    # The image's HEALTHCHECK probes gunicorn, which these containers do not run.
    assert service["healthcheck"] != {} and "scripts/healthcheck.py" not in str(
        service["healthcheck"]
    )


def test_compose_refuses_to_start_without_a_secret(compose):
    env = compose["services"]["web"]["environment"]
    with pytest.raises(KeyError, match="SECRET_KEY"):
        _interpolate(env["SECRET_KEY"], {})


def test_compose_environment_configures_production_settings(compose):
    """The containers' environment, as compose would pass it, read by collab.settings."""
    given = {"SECRET_KEY": secrets.token_urlsafe(50)}
    compose_env = {
        name: _interpolate(str(value), given)
        for name, value in compose["services"]["web"]["environment"].items()
    }
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    env.pop("DEBUG", None)
    env.update(compose_env)
    code = (
        "import django, json; django.setup(); from django.conf import settings as s; "
        "print(json.dumps([s.DEBUG, s.SECURE_SSL_REDIRECT, s.ALLOWED_HOSTS, "
        "s.DATABASES['default']['HOST'], s.CACHES['default']['LOCATION'], s.CELERY_BROKER_URL]))"
    )
    result = subprocess.run(  # noqa: S603
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    debug, ssl_redirect, hosts, db_host, cache, broker = yaml.safe_load(result.stdout)
    assert (debug, ssl_redirect) == (False, False)
    assert hosts == ["localhost", "127.0.0.1"]
    assert db_host == "postgres"
    assert cache == broker == "redis://redis:6379/0"


# Dockerfile -----------------------------------------------------------------------------


def test_dockerfile_builds_from_python_slim_as_a_non_root_user(dockerfile):
    keywords = [keyword for keyword, _ in dockerfile]
    assert dockerfile[0] == ("FROM", "python:3.11-slim")
    users = [arguments for keyword, arguments in dockerfile if keyword == "USER"]
    assert users and users[-1] not in {"root", "0"}
    # Everything after the last USER runs unprivileged, the service included.
    assert keywords.index("USER") > max(i for i, k in enumerate(keywords) if k == "RUN")


def test_dockerfile_installs_requirements_and_collects_static_files(dockerfile):
    runs = [arguments for keyword, arguments in dockerfile if keyword == "RUN"]
    copies = [arguments for keyword, arguments in dockerfile if keyword == "COPY"]
    assert any(re.search(r"pip install (--requirement|-r) requirements\.txt", r) for r in runs)
    assert any("manage.py collectstatic --noinput" in run for run in runs)
    # requirements.txt is copied (and installed) before the code, for the layer cache.
    assert copies[0].split()[0] == "requirements.txt"
    env = " ".join(arguments for keyword, arguments in dockerfile if keyword == "ENV")
    assert "DJANGO_SETTINGS_MODULE=collab.settings.production" in env


def test_dockerfile_serves_gunicorn_and_checks_healthz(dockerfile):
    instructions = dict(dockerfile)
    assert "gunicorn collab.asgi" in instructions["CMD"]
    assert "collab.serving.UvicornWorker" in instructions["CMD"]
    assert "scripts/healthcheck.py" in instructions["HEALTHCHECK"]
    assert "--interval" in instructions["HEALTHCHECK"]
    assert instructions["EXPOSE"] == "8000"


def test_dockerignore_keeps_local_state_out_of_the_image():
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", "var"} <= set(ignored)


# Production settings --------------------------------------------------------------------


def test_production_settings_pass_the_deploy_checks():
    result = _manage("check", "--deploy", "--fail-level", "WARNING", env=_production_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_settings_refuse_to_start_without_a_secret_key():
    env = _production_env()
    del env["SECRET_KEY"]
    result = _manage("check", env=env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "SECRET_KEY" in result.stderr


@pytest.mark.slow
def test_the_image_health_probe_passes_against_gunicorn_with_production_settings():
    """What the HEALTHCHECK runs, against the server the image runs, Host checks included."""
    port = _free_port()
    env = _production_env(PORT=str(port))
    server = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "gunicorn", "collab.asgi", "--bind", f"127.0.0.1:{port}"]
        + ["--worker-class", "collab.serving.UvicornWorker"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    probe = [sys.executable, "scripts/healthcheck.py"]
    try:
        deadline = time.monotonic() + 30
        while True:
            result = subprocess.run(probe, cwd=ROOT, env=env, capture_output=True, timeout=10)  # noqa: S603
            if result.returncode == 0 or time.monotonic() > deadline or server.poll() is not None:
                break
            time.sleep(0.3)
        assert result.returncode == 0, result.stderr
        # The probe's Host header is what makes it pass: a bare 127.0.0.1 is refused.
        bare = _production_env(PORT=str(port), ALLOWED_HOSTS="collab.example.com")
        code = (
            "import urllib.request, urllib.error\n"
            f"try: urllib.request.urlopen('http://127.0.0.1:{port}/healthz', timeout=5)\n"
            "except urllib.error.HTTPError as e: print(e.code)\n"
        )
        refused = subprocess.run(  # noqa: S603
            [sys.executable, "-c", code], env=bare, capture_output=True, text=True, timeout=10
        )
        assert refused.stdout.strip() == "400"
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_every_shipped_server_command_leaves_forwarded_headers_to_the_service():
    """uvicorn's own worker rewrites the client address from X-Forwarded-For sent from
    loopback; every command that starts the web server uses the project's worker, which does
    not, so only RATE_LIMIT_TRUSTED_PROXIES decides (tests/api/test_live_http.py)."""
    from collab.serving import UvicornWorker

    assert UvicornWorker.CONFIG_KWARGS["proxy_headers"] is False
    shipped = {
        name: (ROOT / name).read_text()
        for name in ("Procfile.local", "Dockerfile", "docker-compose.yml")
    }
    for name, text in shipped.items():
        assert "gunicorn collab.asgi" in text, name
        classes = re.findall(r"--worker-class\s+(\S+)", text)
        assert classes and set(classes) == {"collab.serving.UvicornWorker"}, (name, classes)
