"""The embedded default is safe as shipped (docs/security.md): secrets of its own, no debug pages.

The live cases start the service exactly as ``./run`` does, with nothing configured but a
data folder of the test's own.
"""

import base64
import hashlib
import hmac
import json
import os
import stat
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from django.test import Client
from django.urls import path

from collab import urls as collab_urls
from collab.keyfile import keyfile_secret
from tests.liveserver import asgi_server, embedded_env, manage, python_run

pytestmark = [pytest.mark.slow, pytest.mark.live]

# The SECRET_KEY every embedded installation used before each made its own.
PUBLIC_SECRET_KEY = "embedded-default-insecure-key-change-me"
PASSWORD = "a long passphrase for tests"


def embedded_settings(data_dir: Path, **environment: str) -> dict:
    """What the embedded default's settings hold in ``data_dir``: fingerprints, never secrets."""
    script = (
        "import hashlib, json; from django.conf import settings; "
        "print(json.dumps({'secret': hashlib.sha256(settings.SECRET_KEY.encode()).hexdigest(), "
        "'fernet': hashlib.sha256(settings.WEBHOOK_ENCRYPTION_KEYS[0].encode()).hexdigest(), "
        "'debug': settings.DEBUG}))"
    )
    done = python_run(embedded_env(data_dir, **environment), script)
    done.check_returncode()
    assert "secret" not in done.stderr.lower()
    return json.loads(done.stdout)


def fingerprint(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def test_two_installations_make_different_secrets_and_keep_them(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    one, other = embedded_settings(first), embedded_settings(second)

    assert one["secret"] != other["secret"]
    assert one["fernet"] != other["fernet"]
    assert one["secret"] != fingerprint(PUBLIC_SECRET_KEY)
    assert one["debug"] is False
    for name in ("secret_key", "webhook_encryption_key"):
        mode = stat.S_IMODE((first / name).stat().st_mode)
        assert mode == 0o600, f"{name} is readable by others: {oct(mode)}"
    # A later start (any process of the installation) reads what the first one made.
    assert embedded_settings(first) == one


def test_a_secret_from_the_environment_wins_and_debug_is_asked_for(tmp_path):
    given = base64.urlsafe_b64encode(os.urandom(32)).decode()
    read = embedded_settings(tmp_path, SECRET_KEY=given, WEBHOOK_ENCRYPTION_KEYS=given, DEBUG="1")
    assert read == {"secret": fingerprint(given), "fernet": fingerprint(given), "debug": True}
    assert not (tmp_path / "secret_key").exists()


def _make_in(path: str) -> str:
    return keyfile_secret(Path(path), make=lambda: uuid.uuid4().hex)


def test_processes_starting_together_agree_on_one_secret(tmp_path):
    path = tmp_path / "secret_key"
    with ProcessPoolExecutor(max_workers=6) as pool:
        made = set(pool.map(_make_in, [str(path)] * 24))
    assert len(made) == 1
    assert made == {path.read_text().strip()}
    assert [p.name for p in tmp_path.iterdir()] == ["secret_key"], "no temporary file left"


def test_an_empty_secret_file_is_refused_not_used(tmp_path):
    path = tmp_path / "secret_key"
    path.write_text("\n")
    with pytest.raises(RuntimeError, match="empty"):
        keyfile_secret(path, make=lambda: "never used")


def forged_token(user_id: int, secret: str) -> str:
    """An access token made by hand, as anyone who read the repository could make one."""

    def part(data: dict) -> str:
        raw = json.dumps(data, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    now = int(time.time())
    claims = {"token_type": "access", "user_id": user_id, "jti": uuid.uuid4().hex}
    claims.update(iat=now, exp=now + 600)
    signed = part({"alg": "HS256", "typ": "JWT"}) + "." + part(claims)
    mac = hmac.new(secret.encode(), signed.encode(), hashlib.sha256).digest()
    return signed + "." + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


@pytest.fixture(scope="module")
def embedded(tmp_path_factory, embedded_database):
    """``./run`` with nothing configured: migrated, one user, the ASGI server on its own port."""
    data = tmp_path_factory.mktemp("embedded")
    env = embedded_env(data)
    embedded_database(data)
    manage(env, "create_user", "--email", "root@example.test", "--password", PASSWORD)
    with asgi_server(env, data) as port:
        yield port


def request(port: int, method: str, path: str, body=None, headers=None):
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        data = json.dumps(body).encode() if body is not None else None
        sent = {"Content-Type": "application/json", **(headers or {})} if data else headers or {}
        conn.request(method, path, body=data, headers=sent)
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read()
    finally:
        conn.close()


def test_a_token_signed_with_the_public_key_is_refused(embedded):
    status, _, body = request(
        embedded, "POST", "/v1/auth/login", {"email": "root@example.test", "password": PASSWORD}
    )
    assert status == 200, body
    real = json.loads(body)["data"]["access_token"]
    assert (
        request(embedded, "GET", "/v1/users/me", headers={"Authorization": f"Bearer {real}"})[0]
        == 200
    )
    me = json.loads(
        request(embedded, "GET", "/v1/users/me", headers={"Authorization": f"Bearer {real}"})[2]
    )["data"]

    forged = forged_token(me["id"], PUBLIC_SECRET_KEY)
    status, content_type, body = request(
        embedded, "GET", "/v1/users/me", headers={"Authorization": f"Bearer {forged}"}
    )
    assert status == 401, body
    assert content_type.startswith("application/json")
    assert json.loads(body)["error"]["code"] == "UNAUTHORIZED"


# Paths that Django, the admin or static files would answer with a page of their own.
PAGE_PATHS = [
    ("GET", "/static/no-such-file.css"),
    ("GET", "/static/admin/no-such-file.js"),
    ("GET", "/admin/no-such-page/"),
    ("GET", "/admin/accounts/user/999999/change/"),
    ("GET", "/no-such-path"),
    ("GET", "/v1/no-such-route"),
    ("POST", "/admin/login/"),  # no CSRF token: Django's 403 page
    ("GET", "/admin/comments/comment/add/"),  # the admin refuses it: PermissionDenied, a 403
    ("GET", "/%ff%fe"),
]


@pytest.mark.parametrize(("method", "path"), PAGE_PATHS)
def test_no_path_of_the_shipped_default_answers_a_page(embedded, method, path):
    status, content_type, body = request(embedded, method, path)
    if status < 400:
        return  # an admin path may redirect to its sign-in form: a page, but not an error
    assert content_type.startswith("application/json"), (status, body[:200])
    assert json.loads(body)["success"] is False
    assert b"<html" not in body.lower() and b"traceback" not in body.lower()


@pytest.fixture
def staff_browser(db):
    from tests.factories import UserFactory

    user = UserFactory(is_staff=True, is_superuser=True)
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
@pytest.mark.parametrize(("method", "path"), PAGE_PATHS)
def test_no_error_is_a_page_with_or_without_debug(settings, staff_browser, debug, method, path):
    settings.DEBUG = debug
    response = getattr(staff_browser, method.lower())(path)
    assert response.status_code < 500, response.content[:200]
    if response.status_code < 400:
        return
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    assert response.json()["success"] is False


def crash(request):
    raise RuntimeError("boom: a settings value that must not leak")


class CrashingMiddleware:
    """Fails before any view runs, where no view's handler can catch it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path == "/crash-in-middleware":
            raise RuntimeError("boom: a settings value that must not leak")
        return self.get_response(request)


urlpatterns = [path("crash", crash), path("admin/crash", crash), *collab_urls.urlpatterns]
handler404 = collab_urls.handler404
handler500 = collab_urls.handler500


@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
@pytest.mark.parametrize("path", ["/crash", "/admin/crash", "/crash-in-middleware"])
def test_a_crash_anywhere_is_the_json_500(settings, staff_browser, debug, path):
    settings.DEBUG = debug
    settings.ROOT_URLCONF = __name__
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}.CrashingMiddleware"]
    response = staff_browser.get(path)
    assert response.status_code == 500
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == "INTERNAL_ERROR"
    assert b"boom" not in response.content and b"<html" not in response.content
