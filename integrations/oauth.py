"""Writes: OAuth apps (a workspace's registrations of third-party apps) and the users'
authorizations of them. django-oauth-toolkit keeps the clients, grants and tokens; these keep
what the API adds to them (the app's workspace and scopes, a user's chosen projects), and
record the events."""

from collections.abc import Collection
from urllib.parse import urlsplit

from django.db import transaction
from django.utils import timezone
from oauth2_provider.generators import generate_client_secret
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
)

from accounts import audit
from accounts.models import AppAuthorization, OAuthApp, User, Workspace
from collab.api.exceptions import ValidationFailed
from collab.unset import UNSET, Maybe
from events.services import event_record
from projects.selectors import project_list

from .records import app_authorization_record, oauth_app_record

Application = get_application_model()
# Where an app may send its users back: an https address, or http on this machine's loopback
# (RFC 8252: a native app listening on a port of its own).
LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}
MAX_REDIRECT_URIS = 10


def redirect_uris_check(uris: list[str]) -> list[str]:
    """``uris``, each an absolute https URL (or http on the loopback) with no fragment; a 422
    on ``redirect_uris`` naming the first that is not."""
    for uri in uris:
        parts = urlsplit(uri)
        secure = parts.scheme == "https" or (
            parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS
        )
        if not parts.netloc or not secure or parts.fragment or " " in uri:
            raise ValidationFailed.field(
                "redirect_uris",
                f"{uri!r} is not an https URL (or http on the loopback) without a fragment.",
            )
    return list(dict.fromkeys(uris))


@transaction.atomic
def oauth_app_create(
    *,
    workspace: Workspace,
    actor: User,
    name: str,
    client_type: str,
    redirect_uris: list[str],
    scopes: Collection[str],
) -> tuple[OAuthApp, str | None]:
    """A new app of ``workspace`` and its client secret (shown once; None for a public
    client, which has none and proves itself with PKCE alone)."""
    secret = generate_client_secret() if client_type == Application.CLIENT_CONFIDENTIAL else None
    application = Application.objects.create(
        name=name,
        user=actor,
        client_type=client_type,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=" ".join(redirect_uris_check(redirect_uris)),
        client_secret=secret or "",
        hash_client_secret=True,
        skip_authorization=False,
    )
    app = OAuthApp.objects.create(
        application=application, workspace=workspace, scopes=sorted(scopes), created_by=actor
    )
    _app_event("app.created", app, actor=actor)
    return app, secret


@transaction.atomic
def oauth_app_update(
    *,
    app: OAuthApp,
    actor: User,
    name: Maybe[str] = UNSET,
    redirect_uris: Maybe[list[str]] = UNSET,
    scopes: Maybe[Collection[str]] = UNSET,
) -> OAuthApp:
    """Change what was given. Fewer scopes take effect at once on the tokens already given
    (each is narrowed to the app's scopes when it is used)."""
    application = app.application
    changed: list[str] = []
    if name is not UNSET and name != application.name:
        application.name = name
        changed.append("name")
    if redirect_uris is not UNSET:
        joined = " ".join(redirect_uris_check(redirect_uris))
        if joined != application.redirect_uris:
            application.redirect_uris = joined
            changed.append("redirect_uris")
    if changed:
        application.save(update_fields=[*changed, "updated"])
    if scopes is not UNSET and sorted(scopes) != app.scopes:
        app.scopes = sorted(scopes)
        app.save(update_fields=["scopes"])
        changed.append("scopes")
    if changed:
        _app_event("app.updated", app, actor=actor)
    return app


@transaction.atomic
def oauth_app_delete(*, app: OAuthApp, actor: User) -> None:
    """The app, its grants, tokens and authorizations, gone at once."""
    _app_event("app.deleted", app, actor=actor)
    app.application.delete()


def consent_projects(*, user: User, app: OAuthApp, project_ids: Collection[int]) -> list[int]:
    """``project_ids``, each a project of the app's workspace ``user`` sees; a 422 on
    ``projects`` otherwise, or when there is none."""
    wanted = set(project_ids)
    if not wanted:
        raise ValidationFailed.field("projects", "Choose at least one project.")
    seen = set(
        project_list(user=user)
        .filter(workspace_id=app.workspace_id, pk__in=wanted)
        .values_list("pk", flat=True)
    )
    if wanted - seen:
        raise ValidationFailed.field(
            "projects", f"No such projects in this workspace among yours: {sorted(wanted - seen)}."
        )
    return sorted(wanted)


def app_authorization_grant(
    *, user: User, app: OAuthApp, scopes: Collection[str], projects: Collection[int]
) -> AppAuthorization:
    """``user``'s consent to ``app`` for ``scopes`` and ``projects`` (ids ``consent_projects``
    checked), inside the transaction that issues its code: a new one, or the earlier one
    replaced (its tokens then reach what this one allows)."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("app_authorization_grant() must run inside the grant's transaction.")
    now = timezone.now()
    granted = {"scopes": sorted(scopes), "projects": sorted(projects), "updated_at": now}
    authorization, _created = AppAuthorization.objects.update_or_create(
        user=user,
        application_id=app.pk,
        defaults=granted,
        create_defaults={**granted, "created_at": now},
    )
    record = {"authorization": app_authorization_record(authorization)}
    event_record(type="app.authorized", workspace_id=app.workspace_id, actor=user, data=record)
    audit.audit_record(
        type="app.authorized", workspace_ids=[app.workspace_id], actor=user, subject=record
    )
    return authorization


@transaction.atomic
def app_authorization_revoke(*, authorization: AppAuthorization, actor: User) -> None:
    """The app loses this user at once: every token and code it holds for them is deleted,
    with the authorization."""
    record = app_authorization_record(authorization)
    workspace_id = record["app"]["workspace_id"]  # read with the record
    mine = {"user_id": authorization.user_id, "application_id": authorization.application_id}
    get_refresh_token_model().objects.filter(**mine).delete()
    get_access_token_model().objects.filter(**mine).delete()
    get_grant_model().objects.filter(**mine).delete()
    authorization.delete()
    if workspace_id is not None:
        data = {"authorization": record}
        event_record(type="app.revoked", workspace_id=workspace_id, actor=actor, data=data)
        audit.audit_record(
            type="app.revoked", workspace_ids=[workspace_id], actor=actor, subject=data
        )


def _app_event(kind: str, app: OAuthApp, *, actor: User) -> None:
    """Its event, and its entry in the workspace's audit log."""
    record = {"app": oauth_app_record(app)}
    event_record(type=kind, workspace_id=app.workspace_id, actor=actor, data=record)
    audit.audit_record(type=kind, workspace_ids=[app.workspace_id], actor=actor, subject=record)
