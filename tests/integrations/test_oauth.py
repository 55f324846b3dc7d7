"""OAuth 2.0 apps: registered by a workspace's owners and admins, authorised by a user on the
consent page (code + PKCE), acting with the user's rights narrowed to the scopes granted and
the projects chosen, refreshed with rotation, revoked by the app (RFC 7009) or by the user."""

import hashlib
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.contrib.auth.hashers import check_password
from django.test import Client
from django.urls import URLResolver, get_resolver
from oauth2_provider.models import AccessToken, Application, RefreshToken

from accounts.models import AppAuthorization
from accounts.oauth import token_checksum
from events.models import Event
from issues.models import Issue
from tests.conftest import assert_error, assert_ok, bearer, client_for, jwt_client
from tests.factories import PASSWORD, ProjectFactory, ProjectMemberFactory

from .oauth import (
    REDIRECT_URI,
    app_register,
    authorize_path,
    code_of,
    pkce_pair,
    token_request,
)

pytestmark = pytest.mark.django_db

FORM = "application/x-www-form-urlencoded"


@pytest.fixture
def app(world):
    return app_register(world)


@pytest.fixture
def moon(world):
    """A second project of Acme the developer is on: the one the consent leaves out."""
    project = ProjectFactory(workspace=world.acme, name="Moon", created_by=world.owner)
    ProjectMemberFactory(project=project, user=world.developer)
    return project


def signed_in(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def consent(browser: Client, app: dict, *, projects, allow=True, scope="", **extra):
    """Open the consent page as ``browser``'s user and answer it; the page's answer, and the
    PKCE verifier of the request."""
    verifier, challenge = pkce_pair()
    page = browser.get(authorize_path(app, challenge, scope=scope, **extra))
    assert page.status_code == 200, page.content
    form = page.context["form"]
    data = {field.name: field.value() for field in form if field.is_hidden and field.value()}
    data["projects"] = [str(pk) for pk in projects]
    if allow:
        data["allow"] = "on"
    return browser.post("/oauth/authorize", data), verifier


def post_form(path: str, body: dict, **headers):
    return Client().post(path, urlencode(body), content_type=FORM, **headers)


def tokens_for(world, app: dict, projects, *, user=None, scope="") -> dict:
    answer, verifier = consent(
        signed_in(user or world.developer), app, projects=projects, scope=scope
    )
    assert answer.status_code == 302, answer.content
    code = code_of(answer["Location"])
    exchanged = post_form(
        "/oauth/token",
        token_request(
            app,
            grant_type="authorization_code",
            code=code,
            redirect_uri=REDIRECT_URI,
            code_verifier=verifier,
        ),
    )
    assert exchanged.status_code == 200, exchanged.content
    return exchanged.json()


def test_an_owner_registers_an_app_and_sees_its_secret_once(world, app):
    assert app["name"] == "Sync bot" and app["client_type"] == "confidential"
    assert app["redirect_uris"] == [REDIRECT_URI]
    assert app["scopes"] == ["issues:write", "projects:read"]
    assert app["workspace_id"] == world.acme.pk and app["created_by"] == world.owner.pk
    assert len(app["client_secret"]) >= 64
    read = assert_ok(client_for(world.owner, ["users:read"]).get(f"/v1/oauth-apps/{app['id']}"))
    assert "client_secret" not in read["data"]
    listed = assert_ok(jwt_client(world.admin).get(f"/v1/workspaces/{world.acme.pk}/oauth-apps"))
    assert [item["id"] for item in listed["data"]] == [app["id"]]
    assert Event.objects.filter(type="app.created", workspace_id=world.acme.pk).exists()
    # Only owners and admins; outside the workspace it does not exist; keys register none.
    assert_error(jwt_client(world.developer).get(f"/v1/oauth-apps/{app['id']}"), 403, "FORBIDDEN")
    assert_error(jwt_client(world.outsider).get(f"/v1/oauth-apps/{app['id']}"), 404, "NOT_FOUND")
    by_key = client_for(world.owner).post(
        f"/v1/workspaces/{world.acme.pk}/oauth-apps",
        {"name": "x", "redirect_uris": [REDIRECT_URI], "scopes": ["issues:read"]},
        format="json",
    )
    assert_error(by_key, 403, "FORBIDDEN")


@pytest.mark.parametrize(
    "uri",
    ["http://example.com/cb", "https://example.com/cb#x", "ftp://example.com/", "/relative", "x"],
)
def test_redirect_uris_are_https_or_the_loopback(world, uri):
    answer = jwt_client(world.owner).post(
        f"/v1/workspaces/{world.acme.pk}/oauth-apps",
        {"name": "x", "redirect_uris": [uri], "scopes": ["issues:read"]},
        format="json",
    )
    assert "redirect_uris" in assert_error(answer, 422, "VALIDATION_ERROR")["details"]


def test_an_owner_updates_and_deletes_an_app(world, app, moon):
    tokens = tokens_for(world, app, [moon.pk])
    one = f"/v1/oauth-apps/{app['id']}"
    changed = jwt_client(world.owner).patch(one, {"scopes": ["projects:read"]}, format="json")
    assert assert_ok(changed)["data"]["scopes"] == ["projects:read"]
    # Fewer scopes reach the tokens already given at once.
    denied = bearer(tokens["access_token"]).post(
        f"/v1/projects/{moon.pk}/issues", {"title": "x"}, format="json"
    )
    assert_error(denied, 403, "FORBIDDEN")
    assert_ok(jwt_client(world.owner).delete(one))
    assert_error(jwt_client(world.owner).get(one), 404, "NOT_FOUND")
    assert not AccessToken.objects.exists() and not AppAuthorization.objects.exists()
    assert_error(bearer(tokens["access_token"]).get("/v1/projects"), 401, "UNAUTHORIZED")


def test_the_sign_in_page_leads_back_to_the_consent(world, app):
    _verifier, challenge = pkce_pair()
    path = authorize_path(app, challenge)
    browser = Client()
    first = browser.get(path)
    assert first.status_code == 302
    login = urlsplit(first["Location"])
    assert login.path == "/oauth/login" and parse_qs(login.query)["next"] == [path]
    page = browser.get(first["Location"])
    assert page.status_code == 200 and b'name="password"' in page.content
    wrong = browser.post(
        "/oauth/login", {"username": "dev@acme.test", "password": "nope", "next": path}
    )
    assert wrong.status_code == 200 and b'role="alert"' in wrong.content
    right = browser.post(
        "/oauth/login", {"username": "dev@acme.test", "password": PASSWORD, "next": path}
    )
    assert right.status_code == 302 and right["Location"] == path
    consent_page = browser.get(path)
    assert consent_page.status_code == 200
    assert b"Sync bot" in consent_page.content and b"Acme" in consent_page.content
    assert b"issues:write" in consent_page.content and b"Rocket" in consent_page.content
    # The form may send the browser back to the app, and nowhere else.
    assert "form-action 'self' http://127.0.0.1:8765" in consent_page["Content-Security-Policy"]


def test_the_code_flow_gives_tokens_acting_within_the_grant(world, app, moon):
    tokens = tokens_for(world, app, [world.project.pk])
    assert tokens["token_type"] == "Bearer"
    assert tokens["access_token"].startswith("cla_") and tokens["refresh_token"].startswith("clr_")
    assert set(tokens["scope"].split()) == {"issues:write", "projects:read"}
    as_app = bearer(tokens["access_token"])
    # The user's rights, narrowed to the chosen project ...
    listed = assert_ok(as_app.get("/v1/projects"))["data"]
    assert [project["id"] for project in listed] == [world.project.pk]
    assert_error(as_app.get(f"/v1/projects/{moon.pk}"), 404, "NOT_FOUND")
    made = as_app.post(
        f"/v1/projects/{world.project.pk}/issues", {"title": "From the app"}, format="json"
    )
    issue = Issue.objects.get(pk=assert_ok(made, 201)["data"]["id"])
    assert issue.reporter_id == world.developer.pk
    outside = as_app.post(f"/v1/projects/{moon.pk}/issues", {"title": "x"}, format="json")
    assert_error(outside, 404, "NOT_FOUND")
    # ... and to the scopes granted.
    assert_error(as_app.delete(f"/v1/issues/{issue.pk}"), 403, "FORBIDDEN")
    # Keys are managed with a JWT, not an app's token.
    assert_error(as_app.get("/v1/api-keys"), 403, "FORBIDDEN")
    authorization = AppAuthorization.objects.get(user=world.developer)
    assert authorization.projects == [world.project.pk]
    event = Event.objects.get(type="app.authorized")
    assert event.actor_id == world.developer.pk and event.workspace_id == world.acme.pk
    assert event.data["authorization"]["app"]["name"] == "Sync bot"


def test_tokens_are_stored_as_their_hash_alone(world, app):
    tokens = tokens_for(world, app, [world.project.pk])
    stored = AccessToken.objects.get()
    assert stored.token == "" and stored.token_checksum == token_checksum(tokens["access_token"])
    refresh = RefreshToken.objects.get()
    assert refresh.token == "" and refresh.token_checksum == token_checksum(tokens["refresh_token"])


def test_the_client_secret_is_stored_as_a_salted_hash(world, app):
    stored = Application.objects.get(pk=app["id"]).client_secret
    algorithm, salt, digest = stored.split("$")
    assert algorithm == "secret_sha256" and app["client_secret"] not in stored
    assert digest == hashlib.sha256(f"{salt}{app['client_secret']}".encode()).hexdigest()
    assert check_password(app["client_secret"], stored)
    assert not check_password(app["client_secret"][:-1] + "x", stored)


def test_a_refresh_token_is_rotated_and_a_spent_one_ends_the_grant(world, app):
    tokens = tokens_for(world, app, [world.project.pk])
    renewed = post_form(
        "/oauth/token",
        token_request(app, grant_type="refresh_token", refresh_token=tokens["refresh_token"]),
    )
    assert renewed.status_code == 200, renewed.content
    fresh = renewed.json()
    assert fresh["refresh_token"] != tokens["refresh_token"]
    assert_ok(bearer(fresh["access_token"]).get("/v1/projects"))
    assert_error(bearer(tokens["access_token"]).get("/v1/projects"), 401, "UNAUTHORIZED")
    # The spent one again: refused, and the whole family it started is revoked.
    replay = post_form(
        "/oauth/token",
        token_request(app, grant_type="refresh_token", refresh_token=tokens["refresh_token"]),
    )
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert_error(bearer(fresh["access_token"]).get("/v1/projects"), 401, "UNAUTHORIZED")


def test_an_app_revokes_its_token(world, app):
    tokens = tokens_for(world, app, [world.project.pk])
    revoked = post_form("/oauth/revoke", token_request(app, token=tokens["access_token"]))
    assert revoked.status_code == 200, revoked.content
    assert_error(bearer(tokens["access_token"]).get("/v1/projects"), 401, "UNAUTHORIZED")


def test_a_public_client_needs_pkce_with_s256(world):
    app = app_register(world, client_type="public")
    assert app["client_secret"] is None
    browser = signed_in(world.developer)
    query = {
        "response_type": "code",
        "client_id": app["client_id"],
        "redirect_uri": REDIRECT_URI,
        "state": "s1",
    }
    refused = browser.get(f"/oauth/authorize?{urlencode(query)}")
    assert refused.status_code == 302, refused.content
    assert parse_qs(urlsplit(refused["Location"]).query)["error"] == ["invalid_request"]
    # A "plain" challenge: no code is ever issued for it.
    plain, _verifier = consent(
        browser, app, projects=[world.project.pk], code_challenge_method="plain"
    )
    assert plain.status_code == 302
    answer = parse_qs(urlsplit(plain["Location"]).query)
    assert answer["error"] == ["invalid_request"] and "code" not in answer
    assert not AppAuthorization.objects.exists()
    tokens = tokens_for(world, app, [world.project.pk])
    assert_ok(bearer(tokens["access_token"]).get("/v1/projects"))


def test_no_implicit_grant_and_no_password_grant(world, app):
    _verifier, challenge = pkce_pair()
    implicit = signed_in(world.developer).get(authorize_path(app, challenge, response_type="token"))
    assert implicit.status_code in (302, 400)
    assert "access_token" not in implicit.get("Location", "")
    password = post_form(
        "/oauth/token",
        token_request(app, grant_type="password", username="dev@acme.test", password="password"),
    )
    assert password.status_code in (400, 401)
    assert "access_token" not in password.json()
    assert password.json()["error"] in {
        "unsupported_grant_type",
        "unauthorized_client",
        "invalid_grant",
    }


def test_the_wrong_verifier_gets_no_token(world, app):
    answer, _verifier = consent(signed_in(world.developer), app, projects=[world.project.pk])
    code = code_of(answer["Location"])
    wrong = post_form(
        "/oauth/token",
        token_request(
            app,
            grant_type="authorization_code",
            code=code,
            redirect_uri=REDIRECT_URI,
            code_verifier=pkce_pair()[0],
        ),
    )
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"


def test_a_denial_sends_access_denied_and_grants_nothing(world, app):
    answer, _verifier = consent(
        signed_in(world.developer), app, projects=[world.project.pk], allow=False
    )
    assert answer.status_code == 302
    assert parse_qs(urlsplit(answer["Location"]).query)["error"] == ["access_denied"]
    assert not AppAuthorization.objects.exists()


def test_a_user_outside_the_workspace_cannot_allow(world, app):
    browser = signed_in(world.outsider)
    _verifier, challenge = pkce_pair()
    page = browser.get(authorize_path(app, challenge))
    assert page.status_code == 200 and b"not a member" in page.content
    answer, _verifier = consent(browser, app, projects=[world.other_project.pk])
    assert answer.status_code == 200 and b"not a member" in answer.content
    assert not AppAuthorization.objects.exists()


def test_the_projects_chosen_are_the_users_own(world, app):
    answer, _verifier = consent(signed_in(world.developer), app, projects=[world.other_project.pk])
    assert answer.status_code == 200 and b'role="alert"' in answer.content
    nothing, _verifier = consent(signed_in(world.developer), app, projects=[])
    assert nothing.status_code == 200 and b"at least one project" in nothing.content
    assert not AppAuthorization.objects.exists()


def test_users_list_and_revoke_their_authorizations(world, app):
    tokens = tokens_for(world, app, [world.project.pk])
    mine = jwt_client(world.developer)
    listed = assert_ok(mine.get("/v1/users/me/authorizations"))["data"]
    assert len(listed) == 1
    [authorization] = listed
    assert authorization["app"] == {
        "id": app["id"],
        "name": "Sync bot",
        "client_id": app["client_id"],
        "workspace_id": world.acme.pk,
    }
    assert authorization["projects"] == [world.project.pk]
    assert set(authorization["scopes"]) == {"issues:write", "projects:read"}
    one = f"/v1/users/me/authorizations/{authorization['id']}"
    # Not with the app's own token, nor someone else's.
    assert_error(
        bearer(tokens["access_token"]).get("/v1/users/me/authorizations"), 403, "FORBIDDEN"
    )
    assert_error(jwt_client(world.owner).delete(one), 404, "NOT_FOUND")
    assert_ok(mine.delete(one))
    assert_error(bearer(tokens["access_token"]).get("/v1/projects"), 401, "UNAUTHORIZED")
    refused = post_form(
        "/oauth/token",
        token_request(app, grant_type="refresh_token", refresh_token=tokens["refresh_token"]),
    )
    assert refused.status_code == 400
    assert assert_ok(mine.get("/v1/users/me/authorizations"))["data"] == []
    assert Event.objects.filter(type="app.revoked", actor_id=world.developer.pk).exists()


def test_the_server_metadata(client):
    answer = client.get("/.well-known/oauth-authorization-server", HTTP_HOST="127.0.0.1")
    assert answer.status_code == 200
    metadata = answer.json()
    assert metadata["authorization_endpoint"] == "http://127.0.0.1/oauth/authorize"
    assert metadata["token_endpoint"] == "http://127.0.0.1/oauth/token"
    assert metadata["revocation_endpoint"] == "http://127.0.0.1/oauth/revoke"
    assert metadata["response_types_supported"] == ["code"]
    assert metadata["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert "issues:write" in metadata["scopes_supported"]


# The authorization server's routes: outside the API's sweeps (tests/urlconf.py), swept here.
OAUTH_PATHS = {
    "/oauth/authorize",
    "/oauth/token",
    "/oauth/revoke",
    "/oauth/login",
    "/oauth/logout",
    "/.well-known/oauth-authorization-server",
}
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _oauth_routes() -> set[str]:
    found = set()
    for pattern in get_resolver().url_patterns:
        prefix = str(pattern.pattern)
        if isinstance(pattern, URLResolver) and prefix == "oauth/":
            found |= {"/oauth/" + str(inner.pattern) for inner in pattern.url_patterns}
        elif prefix.startswith(".well-known/"):
            found.add("/" + prefix)
    return found


def test_the_sweep_names_every_route_of_the_authorization_server():
    assert _oauth_routes() == OAUTH_PATHS


def test_hostile_requests_to_the_authorization_server_never_fail_it(world, app):
    """Every route, method and junk request, anonymous and signed in: an answer below 500,
    an error in JSON (the envelope, or OAuth's own ``{"error"}``), a HEAD without a body."""
    junk_queries = [
        "",
        "?client_id=nope&response_type=code",
        f"?client_id={app['client_id']}&response_type=code&redirect_uri=https://evil.example/",
        f"?client_id={app['client_id']}&response_type=code&scope=nothing%00here",
        "?next=https://evil.example/&client_id=%ff",
    ]
    junk_bodies = [
        "",
        "grant_type=authorization_code&code=x&client_id=nope",
        f"grant_type=refresh_token&refresh_token=clr_{'x' * 36}&client_id={app['client_id']}",
        "token=%00&client_id=\x01",
        "username=%00&password=x",
        "\x00\xff" * 10,
    ]
    for browser in (Client(), signed_in(world.developer)):
        for path in sorted(OAUTH_PATHS):
            for method in METHODS:
                for query, body in zip(junk_queries * 2, junk_bodies, strict=False):
                    answer = browser.generic(method, path + query, body, content_type=FORM)
                    where = f"{method} {path}{query} {body!r}"
                    assert answer.status_code < 500, where
                    if method == "HEAD":
                        assert answer.content == b"", where
                    elif answer.status_code >= 400:
                        assert answer["Content-Type"].startswith("application/json"), where
    assert not AppAuthorization.objects.exists() and not AccessToken.objects.exists()
