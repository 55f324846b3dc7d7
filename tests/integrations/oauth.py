"""What the OAuth tests share: registering an app as its workspace's owner does, a PKCE pair,
the authorization request's address, and the code exchanged for tokens."""

import base64
import hashlib
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.conftest import assert_ok, jwt_client

REDIRECT_URI = "http://127.0.0.1:8765/callback"


def app_register(
    world,
    *,
    client_type: str = "confidential",
    scopes=("issues:write", "projects:read"),
    redirect_uris=(REDIRECT_URI,),
) -> dict:
    """An app of Acme, registered over the API by its owner: its record with its secret."""
    body = {
        "name": "Sync bot",
        "client_type": client_type,
        "redirect_uris": list(redirect_uris),
        "scopes": list(scopes),
    }
    answer = jwt_client(world.owner).post(
        f"/v1/workspaces/{world.acme.pk}/oauth-apps", body, format="json"
    )
    return assert_ok(answer, 201)["data"]


def pkce_pair() -> tuple[str, str]:
    """A code verifier and its S256 challenge (RFC 7636)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def authorize_path(
    app: dict, challenge: str, *, scope: str = "", state: str = "s1", **extra
) -> str:
    query = {
        "response_type": "code",
        "client_id": app["client_id"],
        "redirect_uri": app["redirect_uris"][0],
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **({"scope": scope} if scope else {}),
        **extra,
    }
    return f"/oauth/authorize?{urlencode(query)}"


def code_of(location: str) -> str:
    """The code in the address the consent sent the browser back to (after checking it is
    the app's, with its state)."""
    parts = urlsplit(location)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == REDIRECT_URI, location
    query = parse_qs(parts.query)
    assert query["state"] == ["s1"], location
    return query["code"][0]


def token_request(app: dict, **fields) -> dict:
    """The token endpoint's form for ``app``: its id, and its secret when it has one."""
    body = {"client_id": app["client_id"], **fields}
    if app.get("client_secret"):
        body["client_secret"] = app["client_secret"]
    return body


def consent_over_http(
    http, *, email: str, password: str, app: dict, challenge: str, projects: list[int]
) -> str:
    """What a person's browser does, done with an ``httpx.Client`` on a live server: sign in
    on the sign-in page, allow the app for ``projects``; the code the app is sent back."""
    http.get("/oauth/login")
    signed_in = http.post(
        "/oauth/login",
        data={"username": email, "password": password, "next": "/oauth/authorize"},
        headers={"X-CSRFToken": http.cookies["csrftoken"]},
    )
    assert signed_in.status_code == 302, signed_in.text
    query = parse_qs(urlsplit(authorize_path(app, challenge)).query)
    allowed = http.post(
        "/oauth/authorize",
        data={
            **{name: values[0] for name, values in query.items()},
            "scope": " ".join(app["scopes"]),
            "projects": [str(project) for project in projects],
            "allow": "on",
        },
        headers={"X-CSRFToken": http.cookies["csrftoken"]},
    )
    assert allowed.status_code == 302, allowed.text
    return code_of(allowed.headers["Location"])
