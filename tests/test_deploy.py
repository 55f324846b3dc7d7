"""The deployment files (Dockerfile, docker-compose.yml, deploy/nginx) and the production
settings.

No Docker engine runs where the suite runs, so the files are read as data: the compose file
with PyYAML, the Dockerfile instruction by instruction, nginx's configuration by its tokens.
What can run without Docker does: the production settings under ``manage.py check --deploy``,
built from the environment the compose file gives the containers, the health probe the image
uses against a real gunicorn, and, where nginx is installed, the load balancer's configuration
under ``nginx -t`` and in front of two stand-in web processes.
"""

import http.server
import json
import os
import re
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest
import yaml

from tests.liveserver import manage_run, serve_in_thread

ROOT = Path(__file__).resolve().parent.parent
APP_SERVICES = ("migrate", "web", "worker", "webhook-worker", "beat")
NGINX_CONF = ROOT / "deploy" / "nginx" / "nginx.conf"
WORKER_COMMAND = (
    "celery -A collab worker -Q default,git,analytics,email,exports --loglevel INFO --concurrency 2"
)
WEBHOOK_WORKER_COMMAND = (
    "celery -A collab worker -Q webhooks --pool threads --concurrency 32 --loglevel INFO"
)


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


# docker-compose.yml ---------------------------------------------------------------------


def test_compose_has_its_services(compose):
    """What ``docker compose up`` starts; the optional profiles' services are apart
    (tests/test_observability_rules.py checks the "observability" one)."""
    started = {name for name, service in compose["services"].items() if "profiles" not in service}
    assert started == {
        "postgres",
        "redis",
        "migrate",
        "web",
        "worker",
        "webhook-worker",
        "beat",
        "nginx",
    }


def test_postgres_and_redis_have_health_checks(compose):
    postgres, redis = compose["services"]["postgres"], compose["services"]["redis"]
    # postgres:16 and RUM's package for the same major version (search's rank indexes).
    assert postgres["build"] == "deploy/postgres" and postgres["image"] == "collab-postgres:16"
    dockerfile = (ROOT / "deploy/postgres/Dockerfile").read_text()
    assert "FROM postgres:16\n" in dockerfile
    assert '"postgresql-${PG_MAJOR}-rum"' in dockerfile
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
    assert service["depends_on"]["postgres"] == {"condition": "service_healthy"}
    if name != "migrate":
        assert service["depends_on"]["redis"] == {"condition": "service_healthy"}


def test_no_volume_is_shared_between_app_containers(compose):
    """Replicas share PostgreSQL and Redis only, as on separate machines: each container
    keeps its own git mirrors in the image's data folder (a cache refilled from the origin).
    The one exception is the export archives, which a worker writes and any web replica
    serves: the "exports" volume, mounted by those two services at EXPORT_DIR's default."""
    shares_exports = {"web", "worker"}
    for name in APP_SERVICES:
        service = compose["services"][name]
        expected = ["exports:/app/var/exports"] if name in shares_exports else []
        assert service.get("volumes", []) == expected, name
        assert "GIT_STORAGE_DIR" not in service["environment"], name
    assert set(compose["volumes"]) == {"exports", "postgres-data", "redis-data"}
    # Created in the image, owned by the service's user, so the container can write it (a new
    # named volume takes the ownership of the folder it is mounted on).
    assert "mkdir -p /app/var/git /app/var/exports" in (ROOT / "Dockerfile").read_text()


def test_replicas_two_web_two_workers_one_beat(compose):
    replicas = {
        name: compose["services"][name]["deploy"]["replicas"]
        for name in ("web", "worker", "webhook-worker", "beat")
    }
    assert replicas == {"web": 2, "worker": 2, "webhook-worker": 2, "beat": 1}
    # Replicas need compose's own names: a fixed one would clash.
    for name in APP_SERVICES:
        assert "container_name" not in compose["services"][name], name


def test_migrations_run_once_before_anything_that_uses_the_database(compose):
    """Not in web's command: two replicas migrating an empty PostgreSQL database at once
    collide on its catalog (duplicate key in pg_type), and one of them fails."""
    migrate = compose["services"]["migrate"]
    assert _words(migrate["command"]) == ["python", "manage.py", "migrate", "--noinput"]
    assert migrate["restart"] == "no"
    assert "deploy" not in migrate
    for name in ("web", "worker", "webhook-worker", "beat"):
        service = compose["services"][name]
        assert service["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"
        }, name
        assert "migrate" not in _words(service["command"]), name


def test_web_serves_gunicorn_behind_nginx_and_is_probed_on_healthz(compose):
    web = compose["services"]["web"]
    script = " ".join(_words(web["command"]))
    assert script.startswith("gunicorn collab.asgi")
    assert "--worker-class collab.serving.UvicornWorker" in script
    assert "--bind 0.0.0.0:8000" in script
    assert "ports" not in web, "clients come through nginx"
    # nginx appends the address it saw: exactly one hop to believe.
    assert web["environment"]["RATE_LIMIT_TRUSTED_PROXIES"] == "1"
    assert _words(web["healthcheck"]["test"]) == ["CMD", "python", "scripts/healthcheck.py"]
    assert "/healthz" in (ROOT / "scripts" / "healthcheck.py").read_text()


def test_nginx_publishes_the_port_and_reads_the_repository_config(compose):
    nginx = compose["services"]["nginx"]
    name, _, tag = nginx["image"].partition(":")
    # The official image, recent enough for `server ... resolve` (open-source nginx 1.27.3).
    assert name == "nginx" and tuple(map(int, tag.split("."))) >= (1, 27, 3)
    assert nginx["volumes"] == ["./deploy/nginx/nginx.conf:/etc/nginx/nginx.conf:ro"]
    (port,) = nginx["ports"]
    published, _, target = port.rpartition(":")
    assert _interpolate(published, {}) == "8000"
    assert _interpolate(published, {"WEB_PORT": "9000"}) == "9000"
    (listen,) = _directives(_nginx_tree(), "http", "server", "listen")
    assert listen == [target]
    assert nginx["depends_on"]["web"] == {"condition": "service_healthy"}


def test_the_workers_take_every_queue_once_and_webhooks_on_threads(compose):
    from django.conf import settings

    worker = _words(compose["services"]["worker"]["command"])
    sender = _words(compose["services"]["webhook-worker"]["command"])
    assert worker == shlex.split(WORKER_COMMAND)
    assert sender == shlex.split(WEBHOOK_WORKER_COMMAND)
    queues = [
        *worker[worker.index("-Q") + 1].split(","),
        *sender[sender.index("-Q") + 1].split(","),
    ]
    assert sorted(queues) == sorted(settings.CELERY_TASK_QUEUES)
    # One receiver's share of the senders leaves the others some: a dead one holds up no other.
    senders = int(sender[sender.index("--concurrency") + 1])
    assert senders > 2 * settings.WEBHOOK_HOST_CONCURRENCY


@pytest.mark.parametrize(
    ("name", "program"), [("worker", "worker"), ("webhook-worker", "worker"), ("beat", "beat")]
)
def test_celery_services_run_the_collab_app(compose, name, program):
    service = compose["services"][name]
    assert _words(service["command"])[:4] == ["celery", "-A", "collab", program]
    assert "web" not in service["depends_on"]
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
        "s.DATABASES['default']['HOST'], s.CACHES['default']['LOCATION'], s.CELERY_BROKER_URL, "
        "s.RATE_LIMIT_TRUSTED_PROXIES]))"
    )
    result = subprocess.run(  # noqa: S603
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    debug, ssl_redirect, hosts, db_host, cache, broker, proxies = yaml.safe_load(result.stdout)
    assert (debug, ssl_redirect) == (False, False)
    assert hosts == ["localhost", "127.0.0.1"]
    assert db_host == "postgres"
    assert cache == broker == "redis://redis:6379/0"
    assert proxies == 1


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
    result = manage_run(_production_env(), "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_settings_refuse_to_start_without_a_secret_key():
    env = _production_env()
    del env["SECRET_KEY"]
    result = manage_run(env, "check")
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
        for name in (
            "Procfile.local",
            "Dockerfile",
            "docker-compose.yml",
            "deploy/kubernetes/base/web.yaml",
        )
    }
    for name, text in shipped.items():
        # A command line, or a YAML list of words ("- gunicorn", "- collab.asgi").
        assert re.search(r"gunicorn\s+(-\s+)?collab\.asgi", text), name
        classes = re.findall(r"--worker-class[=\s]+(\S+)", text)
        assert classes and set(classes) == {"collab.serving.UvicornWorker"}, (name, classes)


# deploy/nginx/nginx.conf ----------------------------------------------------------------

NGINX = shutil.which("nginx") or (
    "/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None
)
needs_nginx = pytest.mark.skipif(
    NGINX is None, reason="nginx is not installed (Debian: apt-get install nginx)"
)
NGINX_TOKEN = re.compile(r"#[^\n]*|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[{};]|[^\s{};'\"]+")


def _nginx_tree() -> list[tuple[str, list[str], list | None]]:
    """nginx's configuration as ``(directive, arguments, block or None)``, comments dropped."""
    tokens = NGINX_TOKEN.findall(NGINX_CONF.read_text())

    def block(position: int) -> tuple[list, int]:
        directives, words = [], []
        while position < len(tokens):
            token = tokens[position]
            position += 1
            if token.startswith("#"):
                continue
            if token == ";":
                directives.append((words[0], words[1:], None))
                words = []
            elif token == "{":
                children, position = block(position)
                directives.append((words[0], words[1:], children))
                words = []
            elif token == "}":
                return directives, position
            else:
                words.append(token[1:-1] if token[0] in "'\"" else token)
        assert not words, "a directive without its ';'"
        return directives, position

    return block(0)[0]


def _directives(tree: list, *path: str) -> list[list[str]]:
    """The arguments of every directive at ``path`` (block names, then the directive)."""
    *blocks, name = path
    level = [tree]
    for block_name in blocks:
        level = [children for entries in level for n, _, children in entries if n == block_name]
    return [arguments for entries in level for n, arguments, _ in entries if n == name]


def _server(tree: list) -> list:
    """The one ``server`` block of the one ``http`` block."""
    (http,) = [children for name, _, children in tree if name == "http"]
    (server,) = [children for name, _, children in http if name == "server"]
    return server


def _location(tree: list, *arguments: str) -> list:
    (location,) = [c for n, a, c in _server(tree) if n == "location" and a == list(arguments)]
    return location


def _seconds(value: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([smhd]?)", value).groups()
    return int(number) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[unit]


def test_nginx_balances_round_robin_over_every_web_replica(compose):
    tree = _nginx_tree()
    (http,) = [children for name, _, children in tree if name == "http"]
    (upstream,) = [(a, c) for n, a, c in http if n == "upstream"]
    (name,), servers = upstream
    # The service's name, at the port gunicorn binds: one address per replica.
    assert [a for n, a, _ in servers if n == "server"] == [["web:8000", "resolve"]]
    assert "--bind 0.0.0.0:8000" in " ".join(_words(compose["services"]["web"]["command"]))
    # Round robin, nginx's default: no other method, nothing that keeps a client on one replica.
    methods = {"hash", "ip_hash", "least_conn", "least_time", "random", "sticky"}
    assert not methods & {n for n, _, _ in servers}
    # `resolve` asks Docker's DNS again, and a zone shares the turn between nginx's workers.
    assert [n for n, _, _ in servers if n == "zone"] == ["zone"]
    assert _directives(tree, "http", "resolver")[0][0] == "127.0.0.11"
    for location in (("=", "/v1/events/stream"), ("/",)):
        assert _directives(_location(tree, *location), "proxy_pass") == [[f"http://{name}"]]


def test_nginx_passes_on_the_client_address_scheme_and_host():
    tree = _nginx_tree()
    headers = dict(_directives(tree, "http", "server", "proxy_set_header"))
    # Appended to what the client sent: the service believes only the last hop (one proxy).
    assert headers["X-Forwarded-For"] == "$proxy_add_x_forwarded_for"
    assert headers["X-Forwarded-Proto"] == "$scheme"
    assert headers["Host"] == "$http_host"
    # A level that sets any proxy_set_header inherits none of the server's: none may.
    for name, arguments, children in _server(tree):
        if name == "location":
            assert "proxy_set_header" not in {n for n, _, _ in children}, arguments


def test_nginx_passes_the_event_stream_on_unbuffered():
    from django.conf import settings

    stream = _location(_nginx_tree(), "=", "/v1/events/stream")
    assert _directives(stream, "proxy_buffering") == [["off"]]
    (timeout,) = _directives(stream, "proxy_read_timeout")
    assert _seconds(timeout[0]) >= 3600 > settings.EVENT_STREAM_HEARTBEAT_SECONDS
    # The one path collab.asgi serves on its event loop: the routes that declare they stream.
    from collab.api.routes import DeclaredPaths

    assert 'DeclaredPaths("streams")' in (ROOT / "collab" / "asgi.py").read_text()
    streams = DeclaredPaths("streams")
    assert "/v1/events/stream" in streams
    assert "/v1/events" not in streams and "/v1/projects" not in streams


def test_nginx_limits_bodies_as_the_service_does():
    from django.conf import settings

    (limit,) = _directives(_nginx_tree(), "http", "server", "client_max_body_size")
    assert limit == ["1m"]
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE == 1024 * 1024  # MAX_BODY_BYTES's default


def test_nginx_answers_its_own_errors_with_the_json_envelope():
    tree = _nginx_tree()
    server = _server(tree)
    pages = {}
    for arguments in _directives(tree, "http", "server", "error_page"):
        *codes, target = arguments
        pages.update(dict.fromkeys(codes, target))
    assert {"400", "413", "502", "503", "504"} <= set(pages)
    for code, target in pages.items():
        (named,) = [c for n, a, c in server if n == "location" and a == [target]]
        assert _directives(named, "default_type") == [["application/json"]], target
        ((status, body),) = _directives(named, "return")
        envelope = json.loads(body)
        assert envelope["success"] is False and set(envelope["error"]) == {
            "code",
            "message",
            "details",
        }, target
        if code == "413":
            assert status == "413" and envelope["error"]["code"] == "PAYLOAD_TOO_LARGE"
            assert envelope["error"]["details"] == {"max_bytes": 1024 * 1024}


def _nginx_copy(directory: Path, *, listen: str, servers: list[str]) -> Path:
    """The configuration with the upstream's name and the port swapped for loopback ones, and
    temporary files kept in ``directory``; nothing else changes."""
    text = NGINX_CONF.read_text()
    text, count = re.subn(
        r"^( *)server web:8000 resolve;$",
        lambda match: "\n".join(f"{match.group(1)}server {server};" for server in servers),
        text,
        flags=re.M,
    )
    assert count == 1
    text, count = re.subn(r"^( *)listen 80;$", rf"\1listen {listen};", text, flags=re.M)
    assert count == 1
    temp = directory / "temp"
    temp.mkdir()
    temp.chmod(0o777)  # nginx's workers drop root's rights, where they had them
    text = text.replace(
        "http {\n",
        f"http {{\n    client_body_temp_path {temp}/body;\n    proxy_temp_path {temp}/proxy;\n",
        1,
    )
    path = directory / "nginx.conf"
    path.write_text(text)
    return path


def _nginx(directory: Path, conf: Path, *arguments: str, daemon: bool = True) -> list[str]:
    globals_ = f"pid {directory}/nginx.pid;" + ("" if daemon else " daemon off;")
    return [NGINX, "-p", f"{directory}/", "-e", f"{directory}/error.log", "-c", str(conf)] + [
        "-g",
        globals_,
        *arguments,
    ]


@pytest.fixture
def nginx_dir():
    # Not tmp_path: its parents are closed to the unprivileged user nginx's workers run as.
    directory = Path(tempfile.mkdtemp(prefix="collab-nginx-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@needs_nginx
def test_nginx_accepts_the_configuration(nginx_dir):
    conf = _nginx_copy(nginx_dir, listen="127.0.0.1:8080", servers=["127.0.0.1:8000"])
    result = subprocess.run(  # noqa: S603
        _nginx(nginx_dir, conf, "-t"), capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    assert "syntax is ok" in result.stderr and "test is successful" in result.stderr


class _StandIn(http.server.BaseHTTPRequestHandler):
    """A web process: answers with the headers and body length it received; its event stream
    sends one frame, then holds on until ``release`` is set."""

    name = ""
    release = threading.Event()

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path != "/v1/events/stream":
            return self._answer(b"")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b"data: first\n\n")
        self.wfile.flush()
        self.release.wait(10)
        self.wfile.write(b"data: second\n\n")

    def do_POST(self):
        self._answer(self.rfile.read(int(self.headers.get("Content-Length", 0))))

    def _answer(self, body: bytes):
        payload = json.dumps(
            {"backend": self.name, "headers": dict(self.headers), "body": len(body)}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.mark.slow
@needs_nginx
def test_nginx_in_front_of_two_web_processes(nginx_dir):
    """The configuration at work: turns, forwarded headers, a stream passed on frame by
    frame, the body limit, and a JSON answer when no web process is left."""
    release = threading.Event()
    backends = [
        http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), type("StandIn", (_StandIn,), {"name": name, "release": release})
        )
        for name in ("a", "b")
    ]
    for backend in backends:
        serve_in_thread(backend)
    port = _free_port()
    conf = _nginx_copy(
        nginx_dir,
        listen=f"127.0.0.1:{port}",
        servers=[f"127.0.0.1:{backend.server_address[1]}" for backend in backends],
    )
    with open(nginx_dir / "output.log", "wb") as output:
        nginx = subprocess.Popen(  # noqa: S603
            _nginx(nginx_dir, conf, daemon=False), stdout=output, stderr=output
        )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert nginx.poll() is None, (nginx_dir / "output.log").read_text()
                assert time.monotonic() < deadline, "nginx did not listen"
                time.sleep(0.1)
        limit = 1024 * 1024
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            seen = [
                client.get("/v1/projects", headers={"X-Forwarded-For": "203.0.113.9"}).json()
                for _ in range(8)
            ]
            assert sorted(answer["backend"] for answer in seen) == ["a"] * 4 + ["b"] * 4
            headers = seen[0]["headers"]
            assert headers["X-Forwarded-For"] == "203.0.113.9, 127.0.0.1"
            assert headers["X-Forwarded-Proto"] == "http"
            assert headers["Host"] == f"127.0.0.1:{port}"

            # The first frame arrives while the stream is still open (buffered, it would not).
            with client.stream("GET", "/v1/events/stream") as response:
                assert response.headers["content-type"] == "text/event-stream"
                lines = response.iter_lines()
                assert next(lines) == "data: first"
                release.set()
                assert "data: second" in list(lines)

            json_body = {"Content-Type": "application/json"}
            fits = client.post("/v1/projects", content=b" " * limit, headers=json_body)
            assert fits.status_code == 200 and fits.json()["body"] == limit
            over = client.post("/v1/projects", content=b" " * (limit + 1), headers=json_body)
            assert over.status_code == 413
            assert over.headers["content-type"] == "application/json"
            assert over.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"

            for backend in backends:
                backend.shutdown()
                backend.server_close()
            gone = client.get("/v1/projects")
            assert gone.status_code == 502
            assert gone.json()["error"]["code"] == "BAD_GATEWAY"
    finally:
        release.set()
        nginx.terminate()
        nginx.wait(timeout=10)
        for backend in backends:
            backend.shutdown()
            backend.server_close()


def test_nginx_bounds_the_request_head_as_the_service_does():
    from django.conf import settings

    from collab.http_protocol import MAX_HEAD_BYTES

    server = _nginx_tree()
    assert _directives(server, "http", "server", "large_client_header_buffers") == [["1", "16k"]]
    assert _directives(server, "http", "server", "client_header_buffer_size") == [["1k"]]
    assert MAX_HEAD_BYTES == 16 * 1024
    (timeout,) = _directives(server, "http", "server", "client_header_timeout")
    assert _seconds(timeout[0]) == settings.HEADER_TIMEOUT_SECONDS == 20  # its default
    pages = {
        code for *codes, _ in _directives(server, "http", "server", "error_page") for code in codes
    }
    assert {"400", "408", "414", "494", "501"} <= pages


def _raw_answer(port: int, raw: bytes) -> tuple[int, dict]:
    """The status and JSON body of nginx's answer to ``raw``."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(raw)
        received = b""
        while True:
            head, found, body = received.partition(b"\r\n\r\n")
            if found:
                length = re.search(rb"(?im)^content-length: *(\d+)", head)
                if length and len(body) >= int(length.group(1)):
                    break
            data = sock.recv(65536)
            if not data:
                break
            received += data
    assert re.search(rb"(?im)^content-type: application/json", head), received[:400]
    return int(head.split(b" ")[1]), json.loads(body)


@pytest.mark.slow
@needs_nginx
def test_nginx_refuses_oversized_heads_and_odd_framing_in_the_envelope(nginx_dir):
    backend = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _StandIn)
    serve_in_thread(backend)
    port = _free_port()
    conf = _nginx_copy(
        nginx_dir, listen=f"127.0.0.1:{port}", servers=[f"127.0.0.1:{backend.server_address[1]}"]
    )
    with open(nginx_dir / "output.log", "wb") as output:
        nginx = subprocess.Popen(  # noqa: S603
            _nginx(nginx_dir, conf, daemon=False), stdout=output, stderr=output
        )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert nginx.poll() is None, (nginx_dir / "output.log").read_text()
                assert time.monotonic() < deadline, "nginx did not listen"
                time.sleep(0.1)
        get = b"GET /v1/projects HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        # A head the service accepts passes (nearly 16 KiB: nginx adds X-Forwarded-For and
        # X-Forwarded-Proto, which count against the service's 16 KiB and 100 fields too).
        fields = b"".join(b"X-Field-%02d: %s\r\n" % (n, b"v" * 160) for n in range(90))
        status, body = _raw_answer(port, get + fields + b"Connection: close\r\n\r\n")
        assert status == 200 and body["headers"]["X-Field-89"] == "v" * 160
        # One it refuses is refused here already.
        status, body = _raw_answer(port, get + b"X-Big: " + b"a" * 17 * 1024 + b"\r\n\r\n")
        assert status == 431
        assert body["error"]["code"] == "REQUEST_HEADER_FIELDS_TOO_LARGE"
        status, body = _raw_answer(port, get + fields * 2 + b"\r\n")
        assert status == 431
        post = b"POST /v1/projects HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        chunked_body = b"\r\n2\r\n{}\r\n0\r\n\r\n"
        for framing, status_expected, code in [
            (b"Transfer-Encoding: gzip, chunked", 501, "NOT_IMPLEMENTED"),
            (b"Transfer-Encoding: identity, chunked", 501, "NOT_IMPLEMENTED"),
            (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked", 400, "BAD_REQUEST"),
            (b"Content-Length: 4\r\nTransfer-Encoding: chunked", 400, "BAD_REQUEST"),
        ]:
            status, body = _raw_answer(port, post + framing + b"\r\n" + chunked_body)
            assert (status, body["error"]["code"]) == (status_expected, code), framing
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)
        backend.shutdown()
        backend.server_close()
