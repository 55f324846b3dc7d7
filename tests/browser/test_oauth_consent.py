"""An OAuth app's authorization in a real browser: the app sends a person to the consent page,
they sign in, see which workspace and scopes the app asks for, leave a project out and allow
it; the browser lands on the app's address with a code, which the app exchanges (code +
PKCE) for a token that acts within the grant, until the person revokes it."""

import http.server
import time
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.conftest import jwt_client
from tests.factories import PASSWORD, ProjectFactory, ProjectMemberFactory
from tests.integrations.oauth import app_register, authorize_path, pkce_pair
from tests.liveserver import serve_in_thread


@pytest.fixture
def callback():
    """The app's own address on 127.0.0.1: it answers any GET with a page, and records it."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server interface
            seen.append(self.path)
            body = b"<!DOCTYPE html><title>The app</title><p>Back in the app."
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    serve_in_thread(server)
    yield f"http://127.0.0.1:{server.server_address[1]}/callback", seen
    server.shutdown()
    server.server_close()


def settle(browser, condition: str, timeout: float = 20.0):
    """Wait for the page ``condition`` (a script) holds on, across navigations (a script run
    while the page is replaced fails, and is tried again)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if value := browser.evaluate(f"document.readyState === 'complete' && ({condition})"):
                return value
        except RuntimeError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"never: {condition} (at {browser.evaluate('location.href')})")


@pytest.mark.slow(seconds=8)
@pytest.mark.live
def test_an_app_is_authorised_in_chromium_and_revoked(world, live_server, browser, callback):
    redirect_uri, seen = callback
    moon = ProjectFactory(workspace=world.acme, name="Moon", created_by=world.owner)
    ProjectMemberFactory(project=moon, user=world.developer)
    app = app_register(world, client_type="public", redirect_uris=[redirect_uri])
    verifier, challenge = pkce_pair()

    # The app sends the person to the consent page; not signed in, they sign in first.
    browser.visit(live_server.url + authorize_path(app, challenge), settle=0.2)
    settle(browser, "location.pathname === '/oauth/login'")
    browser.evaluate(
        f"document.getElementById('id_username').value = '{world.developer.email}';"
        f"document.getElementById('id_password').value = '{PASSWORD}';"
        "document.querySelector('button[type=submit]').click()"
    )
    settle(
        browser, "location.pathname === '/oauth/authorize' && !!document.getElementById('allow')"
    )
    page = browser.evaluate("document.querySelector('main').innerText")
    assert "Authorize Sync bot?" in page and "Acme" in page and world.developer.email in page
    assert "issues:write" in page and "projects:read" in page
    # Accessible: every checkbox has its label, the buttons say what they do.
    labels = browser.evaluate(
        "[...document.querySelectorAll('input[type=checkbox]')]"
        ".map(box => document.querySelector(`label[for='${box.id}']`).innerText)"
    )
    assert sorted(labels) == ["Moon", "Rocket"]
    assert browser.evaluate("document.documentElement.lang") == "en"
    # They leave Moon out, and allow.
    browser.evaluate(
        "[...document.querySelectorAll('input[type=checkbox]')]"
        ".find(box => document.querySelector(`label[for='${box.id}']`).innerText === 'Moon')"
        ".click(); document.getElementById('allow').click()"
    )
    settle(browser, f"location.href.startsWith('{redirect_uri}')")
    assert browser.problems() == []
    landed = parse_qs(urlsplit(browser.evaluate("location.href")).query)
    assert landed["state"] == ["s1"]
    # The app's address was asked once (besides the favicon the browser asks of any site).
    assert sum(path.startswith("/callback?") for path in seen) == 1
    code = landed["code"][0]

    # The app exchanges the code (with its verifier: a public client has no secret).
    with httpx.Client(base_url=live_server.url, timeout=10) as http:
        exchanged = http.post(
            "/oauth/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "client_id": app["client_id"],
                "code_verifier": verifier,
            },
        )
        assert exchanged.status_code == 200, exchanged.text
        token = exchanged.json()["access_token"]
        as_app = {"Authorization": f"Bearer {token}"}
        projects = http.get("/v1/projects", headers=as_app).json()["data"]
        assert [project["name"] for project in projects] == ["Rocket"]
        assert http.get(f"/v1/projects/{moon.pk}", headers=as_app).status_code == 404

        # The person revokes it; the token stops at once.
        mine = jwt_client(world.developer)
        [authorization] = mine.get("/v1/users/me/authorizations").json()["data"]
        assert mine.delete(f"/v1/users/me/authorizations/{authorization['id']}").status_code == 200
        assert http.get("/v1/projects", headers=as_app).status_code == 401
