"""Writes for users, workspaces, memberships, API keys, invitations and JWT sessions."""

import logging
import re
import time
from collections.abc import Collection
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import authenticate
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify
from rest_framework_simplejwt.exceptions import TokenError
from rest_framework_simplejwt.settings import api_settings as jwt_settings
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken
from rest_framework_simplejwt.tokens import AccessToken, RefreshToken
from rest_framework_simplejwt.utils import datetime_from_epoch

from collab.api.exceptions import (
    Conflict,
    Forbidden,
    NotFound,
    Unauthorized,
    ValidationFailed,
    foreign_key_violation,
)
from collab.api.scopes import invalid_scopes
from collab.unset import UNSET, Maybe, Unset
from events.services import event_record

from . import audit, invitation_tokens, keys, login_protection, signals, token_denylist
from .handles import HANDLE_RE, HANDLE_RULE
from .models import ApiKey, Invitation, Membership, Role, User, Workspace
from .records import invitation_record

logger = logging.getLogger("collab.auth")

_DURATION = re.compile(r"^\s*(\d+)\s*(s|m|h|d|w|y)\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def parse_expires_in(value: str | int | None) -> timedelta | None:
    """Parse ``expiresIn`` in the ``ms`` form (``"90d"``, ``"12h"``, ``"1y"``).

    ``None`` and ``"never"`` mean no expiry. Raises ``ValueError`` with a message for people.
    """
    if value is None or (isinstance(value, str) and value.strip().lower() == "never"):
        if not settings.API_KEY_ALLOW_NO_EXPIRY:
            raise ValueError("Keys without expiry are not allowed here; give a duration.")
        return None
    if not isinstance(value, str):
        raise ValueError("Expected a duration such as '90d', '12h' or '1y', or 'never'.")
    match = _DURATION.match(value)
    if not match or int(match.group(1)) == 0:
        raise ValueError(
            f"'{value}' is not a duration: use a number and a unit s, m, h, d, w or y "
            "('90d', '12h', '1y'), or 'never'."
        )
    lifetime = timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])
    if lifetime > timedelta(days=settings.API_KEY_MAX_LIFETIME_DAYS):
        raise ValueError(f"Keys may live at most {settings.API_KEY_MAX_LIFETIME_DAYS} days.")
    return lifetime


def _unique_slug(name: str) -> str:
    base = slugify(name)[:180] or "workspace"
    slug, n = base, 1
    while Workspace.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def _password_validate(password: str, *, user: User) -> None:
    """Django's validators (``AUTH_PASSWORD_VALIDATORS``), as a 422 on ``password``."""
    try:
        validate_password(password, user=user)
    except DjangoValidationError as exc:
        raise ValidationFailed(details={"password": list(exc.messages)}) from None


@transaction.atomic
def workspace_create(*, name: str, owner: User) -> Workspace:
    workspace = Workspace.objects.create(name=name, slug=_unique_slug(name))
    Membership.objects.create(workspace=workspace, user=owner, role=Role.OWNER)
    event_record(
        type="workspace.created",
        workspace_id=workspace.pk,
        actor=owner,
        data={"workspace": {"id": workspace.pk, "name": workspace.name}},
    )
    return workspace


@transaction.atomic
def user_create(
    *,
    email: str,
    password: str | None,
    name: str = "",
    workspace_name: str | None = None,
    role: str | None = None,
    is_staff: bool = False,
) -> tuple[User, Workspace | None]:
    """Create an active user, and put them in ``workspace_name`` (created when missing)."""
    email = User.objects.normalize_email(email).lower()
    if User.objects.filter(email=email).exists():
        raise ValidationFailed.field("email", "A user with this email already exists.")
    if password is not None:
        _password_validate(password, user=User(email=email, name=name))
    user = User.objects.create_user(
        email, password, name=name, is_staff=is_staff, is_superuser=is_staff
    )
    workspace = None
    if workspace_name:
        workspace = Workspace.objects.filter(name=workspace_name).first()
        if workspace is None:
            workspace = workspace_create(name=workspace_name, owner=user)
            if role and role != Role.OWNER:
                Membership.objects.filter(workspace=workspace, user=user).update(role=role)
        else:
            membership_add(workspace=workspace, user=user, role=role or Role.DEVELOPER, actor=None)
    return user, workspace


def user_update(*, user: User, name: Maybe[str] = UNSET, handle: Maybe[str] = UNSET) -> User:
    """Change how a user is shown (``name``) and mentioned (``handle``, lowercased; a taken or
    malformed one is a 422)."""
    if not isinstance(handle, Unset):
        handle = handle.strip().lower()
        if not HANDLE_RE.match(handle):
            raise ValidationFailed.field("handle", HANDLE_RULE)
        if User.objects.filter(handle=handle).exclude(pk=user.pk).exists():
            raise ValidationFailed.field("handle", "This handle is taken.")
        user.handle = handle
    if not isinstance(name, Unset):
        user.name = name
    try:
        with transaction.atomic():
            user.save(update_fields=["name", "handle"])
    except IntegrityError as exc:
        if foreign_key_violation(exc):
            raise  # what it belongs to was deleted meanwhile: a 404
        # Taken between the check and the write.
        raise ValidationFailed.field("handle", "This handle is taken.") from None
    return user


def user_set_tier(*, user: User, tier: str) -> User:
    """Set the rate-limit tier (docs/guide/rate-limits.md); the next request sees the new limit."""
    if tier not in User.Tier.values:
        raise ValidationFailed.field(
            "tier", f"Unknown tier '{tier}'; choose one of: {', '.join(User.Tier.values)}."
        )
    User.objects.filter(pk=user.pk).update(tier=tier)
    user.tier = tier
    return user


def membership_add(
    *, workspace: Workspace, user: User, role: str, actor: User | None
) -> Membership:
    with transaction.atomic():
        membership = Membership.objects.create(workspace=workspace, user=user, role=role)
        event_record(
            type="workspace.member_added",
            workspace_id=workspace.pk,
            actor=actor,
            data={"user": {"id": user.pk, "email": user.email}, "role": role},
        )
    return membership


@transaction.atomic
def membership_update(*, membership: Membership, role: str, actor: User) -> Membership:
    previous = membership.role
    if previous == role:
        return membership
    if Role.OWNER in (previous, role):
        _require_owner(actor, membership.workspace_id)
    if previous == Role.OWNER:
        _ensure_another_owner(membership)
    membership.role = role
    membership.save(update_fields=["role"])
    event_record(
        type="workspace.member_updated",
        workspace_id=membership.workspace_id,
        actor=actor,
        data={"user": {"id": membership.user_id}, "role": role},
        changes={"role": {"previous": previous, "current": role}},
    )
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership, actor: User) -> None:
    if membership.role == Role.OWNER:
        _require_owner(actor, membership.workspace_id)
        _ensure_another_owner(membership)
    # The person leaves the workspace's project teams too (projects' receiver).
    signals.membership_removing.send(sender=Membership, membership=membership)
    event_record(
        type="workspace.member_removed",
        workspace_id=membership.workspace_id,
        actor=actor,
        data={"user": {"id": membership.user_id}},
    )
    membership.delete()


def _require_owner(actor: User | None, workspace_id: int) -> None:
    """Only owners grant or take away ownership; operators (superusers, commands) may too."""
    if actor is None or actor.is_superuser:
        return
    if not Membership.objects.filter(
        workspace_id=workspace_id, user=actor, role=Role.OWNER
    ).exists():
        raise Forbidden(
            "Only an owner can grant or take away the owner role.",
            details={"required_role": Role.OWNER},
        )


def _ensure_another_owner(membership: Membership) -> None:
    others = (
        Membership.objects.select_for_update()
        .filter(workspace_id=membership.workspace_id, role=Role.OWNER)
        .exclude(pk=membership.pk)
    )
    if not others.exists():
        raise Conflict("A workspace keeps at least one owner.")


@transaction.atomic
def api_key_create(
    *,
    user: User,
    name: str,
    scopes: list[str],
    expires_in: str | int | None = None,
    projects: Collection[int] | None = None,
    actor: User | None = None,
) -> tuple[ApiKey, str]:
    """Create a key and return it with its plaintext, which is never available again.
    ``projects``: the ids it is limited to (None: not limited), which the caller has found
    ``user`` may see (integrations.services.api_key_issue). Recorded in the audit log of
    ``user``'s workspaces, made by ``actor`` (``user`` when not given)."""
    unknown = invalid_scopes(scopes)
    if unknown:
        raise ValidationFailed.field("scopes", f"Unknown scopes: {', '.join(unknown)}.")
    if not scopes:
        raise ValidationFailed.field("scopes", "Give at least one scope.")
    try:
        lifetime = parse_expires_in(expires_in)
    except ValueError as exc:
        raise ValidationFailed.field("expiresIn", str(exc)) from None
    plaintext = keys.generate_key()
    now = timezone.now()
    api_key = ApiKey.objects.create(
        user=user,
        name=name,
        prefix=keys.display_prefix(plaintext),
        key_hash=keys.hash_key(plaintext),
        scopes=sorted(set(scopes)),
        projects=None if projects is None else sorted(set(projects)),
        expires_at=now + lifetime if lifetime else None,
        created_at=now,
    )
    audit.key_audit("api_key.created", api_key, actor=actor or user)
    return api_key, plaintext


@transaction.atomic
def api_key_revoke(*, api_key: ApiKey, actor: User | None = None) -> ApiKey:
    """Revoke it now (once: a revoked key stays as it was), in the audit log by ``actor``
    (None: an operator's command)."""
    revoked = ApiKey.objects.filter(pk=api_key.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    api_key.refresh_from_db(fields=["revoked_at"])
    if revoked:
        audit.key_audit("api_key.revoked", api_key, actor=actor)
    return api_key


# JWT sessions ---------------------------------------------------------------------------


def _token_pair(user: User, *, session: str | None = None) -> dict[str, Any]:
    """A new pair in ``session`` (a new session when ``None``).

    Both tokens carry the session's id (``token_denylist.SESSION_CLAIM``), and a refresh keeps
    it, so a logout can end every access token issued in the session. The refresh token is
    recorded as outstanding, as ``RefreshToken.for_user`` does, once the claim is set.
    """
    refresh = RefreshToken()
    refresh[jwt_settings.USER_ID_CLAIM] = str(user.pk)
    refresh[token_denylist.SESSION_CLAIM] = session or refresh[jwt_settings.JTI_CLAIM]
    OutstandingToken.objects.create(
        user=user,
        jti=refresh[jwt_settings.JTI_CLAIM],
        token=str(refresh),
        created_at=refresh.current_time,
        expires_at=datetime_from_epoch(refresh["exp"]),
    )
    access = refresh.access_token
    return {
        "access_token": str(access),
        "refresh_token": str(refresh),
        "token_type": "Bearer",
        "expires_in": int(access.lifetime.total_seconds()),
    }


def auth_credentials_check(
    *, email: str, password: str, client_address: str | None = None, request: Any = None
) -> User:
    """The user these credentials sign in, for every sign-in form (the API's login and the
    admin's): repeated failures for the email or from ``client_address`` are slowed, then
    refused for a while (``login_protection``, ``RateLimited``), before the password is even
    checked; wrong credentials are ``Unauthorized``."""
    email = (email or "").strip().lower()
    login_protection.login_check(email=email, address=client_address)
    user = authenticate(request, email=email, password=password)
    if user is not None and user.kind == User.Kind.SERVICE:
        user = None  # a service account signs in with its keys alone, whatever its password
    if user is None:
        login_protection.login_failure_record(email=email, address=client_address)
        raise Unauthorized("Invalid email or password.")
    login_protection.login_failures_clear(email=email)
    return user


def auth_login(*, email: str, password: str, client_address: str | None = None) -> dict[str, Any]:
    """Sign in to the API: a new session's token pair (see ``auth_credentials_check``)."""
    user = auth_credentials_check(email=email, password=password, client_address=client_address)
    return _token_pair(user)


class _SignedRefreshToken(RefreshToken):
    """A refresh token checked for its signature, type and expiry, not yet for being spent:
    ``_refresh_token_claim`` decides that, atomically, and a spent one coming back is a replay
    to look at (``_refresh_token_replayed``), not just a bad token."""

    def check_blacklist(self) -> None:
        pass


def _refresh_token_parse(raw: str) -> RefreshToken:
    try:
        return _SignedRefreshToken(raw)  # type: ignore[arg-type]  # it decodes a string too
    except TokenError:
        raise Unauthorized("Invalid or expired refresh token.") from None


class _SpentRefreshToken(Unauthorized):
    """A refresh token presented again after it was rotated or revoked."""

    def __init__(self, outstanding: OutstandingToken):
        super().__init__("This refresh token has already been used or revoked.")
        self.outstanding = outstanding


def _session_of(token: RefreshToken) -> str:
    """The sign-in session a refresh token belongs to: its ``sid`` claim, or for a token minted
    without one (``RefreshToken.for_user``) its own id, which the pairs refreshed from it keep."""
    return str(token.get(token_denylist.SESSION_CLAIM) or token[jwt_settings.JTI_CLAIM])


def _refresh_token_claim(token: RefreshToken) -> OutstandingToken:
    """Mark a refresh token used, exactly once.

    The blacklist row is unique per token, so when many requests race with the same
    refresh token the database lets exactly one insert through; the rest fail here.
    """
    outstanding = OutstandingToken.objects.filter(jti=token["jti"]).select_related("user").first()
    if outstanding is None or outstanding.user is None:
        raise Unauthorized("Invalid or expired refresh token.")
    try:
        with transaction.atomic():
            BlacklistedToken.objects.create(token=outstanding)
    except IntegrityError:
        raise _SpentRefreshToken(outstanding) from None
    return outstanding


def _refresh_token_replayed(*, outstanding: OutstandingToken, session: str) -> None:
    """A spent refresh token came back. Within ``JWT_REFRESH_REUSE_GRACE_SECONDS`` of its
    rotation it is a client's retry or a race (two tabs refreshing at once) and ends nothing;
    later, someone else holds a copy of it, and the whole session ends: every refresh token
    descended from the login and every access token issued in it (OAuth 2.0 Security BCP,
    refresh token rotation)."""
    spent_at = (
        BlacklistedToken.objects.filter(token=outstanding)
        .values_list("blacklisted_at", flat=True)
        .first()
    )
    if spent_at is None:
        return
    age = (timezone.now() - spent_at).total_seconds()
    if age <= settings.JWT_REFRESH_REUSE_GRACE_SECONDS:
        return
    lifetimes = (jwt_settings.REFRESH_TOKEN_LIFETIME, jwt_settings.ACCESS_TOKEN_LIFETIME)
    # Every token of the session was issued by now, so none outlives this (a second of margin).
    until = int(time.time()) + int(max(lifetimes).total_seconds()) + 1
    with transaction.atomic():
        token_denylist.session_end(session=session, until=until)
    logger.warning(
        "Refresh token reuse: user %s presented a refresh token %.0f s after it was spent; "
        "the session is ended.",
        outstanding.user_id,
        age,
    )


def auth_refresh(*, refresh_token: str) -> dict[str, Any]:
    token = _refresh_token_parse(refresh_token)
    session = _session_of(token)
    try:
        with transaction.atomic():
            if token_denylist.session_ended(session=session):
                raise Unauthorized("This session has ended.")
            outstanding = _refresh_token_claim(token)
            user = outstanding.user
            if user is None or not user.is_active:
                raise Unauthorized("This account is not active.")
            return _token_pair(user, session=session)
    except _SpentRefreshToken as spent:
        # Outside the refused transaction, so the session's end is kept.
        _refresh_token_replayed(outstanding=spent.outstanding, session=session)
        raise


def _access_token_parse(raw: str | None) -> AccessToken | None:
    """The access token a logout was called with, or ``None`` when there is none to end.

    An expired token needs no ending, and a client commonly logs out with the stale token it
    still holds: refusing the call would leave its refresh token alive. Anything that is not a
    valid access token of ours (an API key, garbage, a forged token) ends nothing either.
    """
    if not raw:
        return None
    try:
        return AccessToken(raw)  # type: ignore[arg-type]  # it decodes a string too
    except TokenError:
        return None


def auth_logout(*, refresh_token: str, access_token: str | None = None) -> None:
    """End a session: its refresh token, every access token issued in it, and the access
    token the call was made with (docs/guide/authentication.md, JWT sessions), all or nothing.

    Both tokens must be the same account's: one account's token cannot end another's session.
    """
    refresh = _refresh_token_parse(refresh_token)
    access = _access_token_parse(access_token)
    user_claim = jwt_settings.USER_ID_CLAIM
    if access is not None and access.get(user_claim) != refresh.get(user_claim):
        raise ValidationFailed.field(
            "refresh_token", "This refresh token is another account's than the access token's."
        )
    # Access tokens of the session were all issued by now, from refresh tokens now spent, so
    # none lives past this; a second of margin for the clock ticking in between.
    session_end = int(time.time()) + int(jwt_settings.ACCESS_TOKEN_LIFETIME.total_seconds()) + 1
    entries: dict[str, int] = {}
    entries[f"sid:{_session_of(refresh)}"] = session_end
    if access is not None:
        entries[f"jti:{access[jwt_settings.JTI_CLAIM]}"] = int(access["exp"])
    with transaction.atomic():
        _refresh_token_claim(refresh)
        if entries:
            token_denylist.denylist_add(entries=entries)


# Invitations ----------------------------------------------------------------------------


def _expire_stale_invitations(*, workspace: Workspace, email: str) -> None:
    Invitation.objects.filter(
        workspace=workspace,
        email=email,
        status=Invitation.Status.PENDING,
        expires_at__lte=timezone.now(),
    ).update(status=Invitation.Status.EXPIRED)


def invitation_create(
    *, workspace: Workspace, inviter: User, email: str, role: str, projects: list[Any]
) -> tuple[Invitation, str]:
    from .tasks import invitation_send_email

    if role == Role.OWNER:
        _require_owner(inviter, workspace.pk)
    email = User.objects.normalize_email(email).lower()
    nonce, token = invitation_tokens.token_issue()
    with transaction.atomic():
        user = User.objects.filter(email=email).first()
        is_member = Membership.objects.filter(workspace=workspace, user=user).exists()
        if user and is_member and user.status != User.Status.INVITED:
            raise ValidationFailed.field("email", "This person is already a member.")
        _expire_stale_invitations(workspace=workspace, email=email)
        if Invitation.objects.filter(
            workspace=workspace, email=email, status=Invitation.Status.PENDING
        ).exists():
            raise ValidationFailed.field("email", "A pending invitation exists for this email.")
        if user is None:
            user = User.objects.create_user(email, None, status=User.Status.INVITED)
        try:
            with transaction.atomic():
                invitation = Invitation.objects.create(
                    workspace=workspace,
                    email=email,
                    role=role,
                    token_hash=keys.hash_key(token),
                    token_nonce=nonce,
                    invited_by=inviter,
                    user=user,
                    expires_at=timezone.now() + settings.INVITATION_LIFETIME,
                )
        except IntegrityError:
            raise ValidationFailed.field(
                "email", "A pending invitation exists for this email."
            ) from None
        invitation.projects.set(projects)
        if user.status == User.Status.INVITED:
            # Invitees show up in the workspace's user list as "invited"; an existing account
            # joins only when it accepts, so an invitation alone grants it nothing.
            Membership.objects.get_or_create(
                workspace=workspace, user=user, defaults={"role": role}
            )
        event_record(
            type="invitation.created",
            workspace_id=workspace.pk,
            actor=inviter,
            data={"invitation": invitation_record(invitation)},
        )
        # robust: a broker hiccup after commit is logged, not turned into a failed request.
        # The id alone: the task makes the token again from the invitation's nonce.
        transaction.on_commit(
            lambda: invitation_send_email.delay(invitation_id=invitation.pk), robust=True
        )
    return invitation, token


@transaction.atomic
def invitation_revoke(*, invitation: Invitation, actor: User) -> Invitation:
    updated = Invitation.objects.filter(pk=invitation.pk, status=Invitation.Status.PENDING).update(
        status=Invitation.Status.REVOKED
    )
    if not updated:
        raise Conflict(f"This invitation is {invitation.effective_status}, not pending.")
    invitation.refresh_from_db()
    if invitation.user.status == User.Status.INVITED:
        Membership.objects.filter(workspace=invitation.workspace, user=invitation.user).delete()
    event_record(
        type="invitation.revoked",
        workspace_id=invitation.workspace_id,
        actor=actor,
        data={"invitation": invitation_record(invitation)},
    )
    return invitation


def invitation_accept(*, token: str, name: str, password: str) -> User:
    with transaction.atomic():
        invitation = (
            Invitation.objects.select_for_update()
            .select_related("user", "workspace")
            .filter(token_hash=keys.hash_key(token or ""))
            .first()
        )
        if invitation is None:
            raise NotFound("No invitation matches this token.")
        status = invitation.effective_status
        if status != Invitation.Status.PENDING:
            raise Conflict(f"This invitation is {status}.", details={"status": status})
        user = invitation.user
        if user.status == User.Status.INVITED:
            _password_validate(password, user=user)
            user.set_password(password)
            user.name = name or user.name
            user.status = User.Status.ACTIVE
            user.save(update_fields=["password", "name", "status"])
            # An invited account's other memberships only list it as "invited" where other
            # invitations wait. Once active it would act in those workspaces unaccepted (and
            # stay after a revocation), so it joins them, like any account, by accepting.
            Membership.objects.filter(user=user).exclude(workspace=invitation.workspace).delete()
        Membership.objects.update_or_create(
            workspace=invitation.workspace, user=user, defaults={"role": invitation.role}
        )
        invitation.status = Invitation.Status.ACCEPTED
        invitation.accepted_at = timezone.now()
        invitation.save(update_fields=["status", "accepted_at"])
        # The person joins the projects the invitation names (projects' receiver).
        signals.invitation_accepting.send(sender=Invitation, invitation=invitation, user=user)
        event_record(
            type="invitation.accepted",
            workspace_id=invitation.workspace_id,
            actor=user,
            data={"invitation": invitation_record(invitation)},
        )
    return user
