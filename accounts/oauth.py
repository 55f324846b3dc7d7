"""OAuth 2.0 for third-party apps, the parts the API's credentials need: django-oauth-toolkit
runs the authorization server (integrations.oauth_pages); here are its scopes (the API's own,
as many as an app's registration allows), the form of its tokens, and what an access token
presented as ``Authorization: Bearer cla_...`` lets its app do: its user's rights, narrowed to
the scopes granted and to the projects the user chose on the consent page."""

import hashlib
from dataclasses import dataclass

from django.utils import timezone
from oauth2_provider.models import get_access_token_model
from oauth2_provider.scopes import BaseScopes

from collab.api.scopes import ALL_SCOPES, SCOPE_TABLE, expand

from . import keys
from .models import AppAuthorization, OAuthApp, User

ACCESS_TOKEN_PREFIX = "cla_"
REFRESH_TOKEN_PREFIX = "clr_"
SCOPE_DESCRIPTIONS = {scope: what for what, scope in SCOPE_TABLE}


class AppScopes(BaseScopes):
    """The scopes an app may ask for: those its registration allows, with the ones they imply
    (``issues:write`` allows asking for ``issues:read``); asking for none, it is given those
    its registration names."""

    def get_all_scopes(self) -> dict[str, str]:
        return {scope: SCOPE_DESCRIPTIONS[scope] for scope in ALL_SCOPES}

    def get_available_scopes(self, application=None, request=None, *args, **kwargs) -> list[str]:
        if application is None:
            return list(ALL_SCOPES)
        return app_scopes(application.pk)

    def get_default_scopes(self, application=None, request=None, *args, **kwargs) -> list[str]:
        if application is None:
            return []
        return app_scopes(application.pk, implied=False)


def app_scopes(application_id: int, *, implied: bool = True) -> list[str]:
    """The scopes the app's registration names, in the API's order; with ``implied``, those
    they imply too (every scope it may ask for)."""
    allowed = OAuthApp.objects.filter(pk=application_id).values_list("scopes", flat=True).first()
    named = set(allowed or [])
    granted = expand(named) if implied else named
    return [scope for scope in ALL_SCOPES if scope in granted]


def access_token_generate(request) -> str:
    return keys.generate_key(ACCESS_TOKEN_PREFIX)


def refresh_token_generate(request) -> str:
    return keys.generate_key(REFRESH_TOKEN_PREFIX)


def looks_like_access_token(value: str) -> bool:
    return value.startswith(ACCESS_TOKEN_PREFIX)


def token_checksum(raw: str) -> str:
    """What a token is stored as, and looked up by: its SHA-256 (django-oauth-toolkit's
    ``token_checksum``; the token itself is never stored)."""
    return hashlib.sha256(raw.encode()).hexdigest()


class Refused(Exception):
    """An access token that signs no one in, and why."""


@dataclass(frozen=True)
class AppAccess:
    """What one access token lets its app do, for its user."""

    user: User
    application_id: int
    token_id: int
    scopes: frozenset[str]
    projects: frozenset[int]
    authorization_id: int
    # The addresses its tokens were used from (accounts.audit), and the app as it names it.
    addresses: list[str]
    app: dict


def app_access(raw: str) -> AppAccess:
    """The access behind an access token; ``Refused`` for one that is malformed, unknown,
    expired, revoked (its authorization gone) or whose user is no longer active."""
    if not keys.is_well_formed(raw, ACCESS_TOKEN_PREFIX):
        raise Refused("Invalid access token.")
    token = (
        get_access_token_model()
        .objects.filter(token_checksum=token_checksum(raw))
        .select_related("user")
        .first()
    )
    if token is None or token.user is None:
        raise Refused("Invalid access token.")
    if token.expires <= timezone.now():
        raise Refused("This access token has expired.")
    # The user's consent and the app's registration as they are now: fewer scopes or
    # projects in either reach the tokens already given.
    authorization = (
        AppAuthorization.objects.filter(user_id=token.user_id, application_id=token.application_id)
        .values(
            "id",
            "scopes",
            "projects",
            "addresses",
            "application__name",
            "application__client_id",
            "application__registration__scopes",
            "application__registration__workspace_id",
        )
        .first()
    )
    if authorization is None:
        raise Refused("This app's authorization has been revoked.")
    if not token.user.is_active:
        raise Refused("The account of this token is not active.")
    granted = (
        expand(token.scope.split())
        & expand(authorization["scopes"])
        & expand(authorization["application__registration__scopes"] or [])
    )
    return AppAccess(
        user=token.user,
        application_id=token.application_id,
        token_id=token.pk,
        scopes=granted,
        projects=frozenset(authorization["projects"]),
        authorization_id=authorization["id"],
        addresses=list(authorization["addresses"] or []),
        app={
            "id": token.application_id,
            "name": authorization["application__name"],
            "client_id": authorization["application__client_id"],
            "workspace_id": authorization["application__registration__workspace_id"],
        },
    )
