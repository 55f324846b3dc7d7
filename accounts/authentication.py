"""One ``Authorization: Bearer`` header for every scheme: API keys (``clb_...``), OAuth apps'
access tokens (``cla_...``) and JWTs."""

from dataclasses import dataclass, field
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework_simplejwt.authentication import JWTAuthentication
from rest_framework_simplejwt.exceptions import InvalidToken, TokenError

from collab.api.acting import acting_set
from collab.api.ratelimit import client_address
from collab.api.scopes import ALL_GRANTED, expand
from collab.db.prepared import PreparedQuery

from . import audit, keys, oauth
from .models import ApiKey, User
from .token_denylist import access_token_user

LAST_USED_RESOLUTION = timedelta(minutes=1)
_NOT_YET = object()


@dataclass(frozen=True)
class Credential:
    """What ``request.auth`` holds: how the caller signed in and what it may do."""

    kind: str  # "api_key", "oauth" or "jwt"
    scopes: frozenset[str]
    api_key: ApiKey | None = field(default=None, compare=False)
    # The projects it is limited to (an API key's ``projects``, an app's grant); None, not
    # limited.
    projects: frozenset[int] | None = None
    # An OAuth app's access token: the app's id (django-oauth-toolkit's application).
    application_id: int | None = None

    @property
    def is_jwt(self) -> bool:
        return self.kind == "jwt"


class BearerAuthentication(BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        """Authenticate once per request, whoever asks first.

        The rate limiter (a middleware) authenticates before the view to know whose request to
        count; the outcome, success or failure, is kept on the Django request and the view's
        own authentication reuses it instead of looking the key or user up again.
        """
        django_request = getattr(request, "_request", request)
        outcome = getattr(django_request, "_bearer_outcome", _NOT_YET)
        if outcome is _NOT_YET:
            try:
                outcome = self._authenticate(request, client_address(django_request))
            except exceptions.AuthenticationFailed as exc:
                outcome = exc
            django_request._bearer_outcome = outcome
        if isinstance(outcome, exceptions.AuthenticationFailed):
            raise exceptions.AuthenticationFailed(outcome.detail)
        return outcome

    def _authenticate(self, request, address: str):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, credential = header.partition(" ")
        credential = credential.strip()
        if scheme.lower() != "bearer" or not credential or " " in credential:
            raise exceptions.AuthenticationFailed(
                "The Authorization header must be 'Bearer <API key or token>'."
            )
        if keys.looks_like_key(credential):
            return self._authenticate_key(credential, address)
        if oauth.looks_like_access_token(credential):
            return self._authenticate_app(credential, address)
        return self._authenticate_jwt(credential, address)

    def authenticate_header(self, request):
        return f'{self.keyword} realm="api"'

    def _authenticate_key(self, raw: str, address: str):
        if not keys.is_well_formed(raw):
            raise exceptions.AuthenticationFailed("Invalid API key.")
        api_key = api_key_with_user(keys.hash_key(raw))
        if api_key is None:
            raise exceptions.AuthenticationFailed("Invalid API key.")
        now = timezone.now()
        if api_key.is_revoked:
            raise exceptions.AuthenticationFailed("This API key has been revoked.")
        if api_key.is_expired(now):
            raise exceptions.AuthenticationFailed("This API key has expired.")
        if not api_key.user.is_active:
            raise exceptions.AuthenticationFailed("The account of this API key is not active.")
        new_address = _touch_last_used(api_key, now, address)
        limit = None if api_key.projects is None else frozenset(api_key.projects)
        # Every selector deciding what the caller sees reads it from the user
        # (accounts.roles.project_limit), built for this request alone.
        api_key.user.project_limit = limit
        credential = Credential("api_key", expand(api_key.scopes), api_key, limit)
        _acting_record(api_key.user, credential, address)
        if new_address:
            audit.key_audit("api_key.used_from_new_address", api_key, actor=api_key.user)
        return api_key.user, credential

    def _authenticate_app(self, raw: str, address: str):
        try:
            access = oauth.app_access(raw)
        except oauth.Refused as refused:
            raise exceptions.AuthenticationFailed(str(refused)) from None
        access.user.project_limit = access.projects
        credential = Credential(
            "oauth", access.scopes, projects=access.projects, application_id=access.application_id
        )
        _acting_record(access.user, credential, address)
        audit.authorization_address_note(
            access.authorization_id,
            access.addresses,
            address,
            user=access.user,
            subject=access.app,
        )
        return access.user, credential

    def _authenticate_jwt(self, raw: str, address: str):
        backend = JWTAuthentication()
        try:
            token = backend.get_validated_token(raw.encode())
        except (InvalidToken, TokenError):
            raise exceptions.AuthenticationFailed("Invalid or expired token.") from None
        try:
            # The user and the logout denylist in one lookup (see accounts.token_denylist).
            user, ended = access_token_user(token)
        except (KeyError, ValueError):
            raise exceptions.AuthenticationFailed("Invalid or expired token.") from None
        if user is None or not user.is_active:
            raise exceptions.AuthenticationFailed("The account of this token is not active.")
        if ended:
            raise exceptions.AuthenticationFailed("This token has been revoked (logged out).")
        credential = Credential("jwt", ALL_GRANTED)
        _acting_record(user, credential, address)
        return user, credential


def _acting_record(user: User, credential: Credential, address: str) -> None:
    """Who this request acts as, through what and from where (collab.api.acting): what its
    writes record."""
    acting_set(
        user_id=user.pk,
        kind=user.kind,
        credential="oauth_app" if credential.kind == "oauth" else credential.kind,
        key_id=credential.api_key.pk if credential.api_key is not None else None,
        app_id=credential.application_id,
        address=address,
    )


def _key_and_user_fields() -> tuple[list[str], list[str]]:
    key_fields = [field.attname for field in ApiKey._meta.concrete_fields]
    user_fields = [field.attname for field in User._meta.concrete_fields]
    return key_fields, user_fields


_KEY_FIELDS, _USER_FIELDS = _key_and_user_fields()
# The key and its owner in one query, compiled once (see collab.db.prepared): every request
# with a key makes it, and revocation or expiry takes effect on the very next one.
_KEY_LOOKUP = PreparedQuery(
    lambda key_hash: ApiKey.objects.filter(key_hash=key_hash).values(
        *_KEY_FIELDS, *(f"user__{name}" for name in _USER_FIELDS)
    ),
    key_hash=str,
)


def api_key_with_user(key_hash: str) -> ApiKey | None:
    """The key of this hash with its owner loaded, as ``select_related("user")`` gives it."""
    rows = _KEY_LOOKUP.rows(key_hash=key_hash)
    if not rows:
        return None
    row = rows[0]
    alias = _KEY_LOOKUP.alias
    api_key = ApiKey.from_db(alias, _KEY_FIELDS, [row[name] for name in _KEY_FIELDS])
    api_key.user = User.from_db(
        alias, _USER_FIELDS, [row[f"user__{name}"] for name in _USER_FIELDS]
    )
    return api_key


def _touch_last_used(api_key: ApiKey, now, address: str) -> bool:
    """Record use at most once a minute, and an address the key was not used from before: one
    UPDATE at most, none at all when both are known. Whether the address is new."""
    threshold = now - LAST_USED_RESOLUTION
    stale = api_key.last_used_at is None or api_key.last_used_at <= threshold
    addresses = audit.address_noted(list(api_key.addresses or []), address)
    if addresses is not None:
        # Two first requests from one address at once may both record it: an audit log says
        # too much rather than too little.
        changes: dict = {"addresses": addresses, **({"last_used_at": now} if stale else {})}
        ApiKey.objects.filter(pk=api_key.pk).update(**changes)
        api_key.addresses = addresses
    elif stale:
        ApiKey.objects.filter(pk=api_key.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lte=threshold)
        ).update(last_used_at=now)
    if stale:
        api_key.last_used_at = now
    return addresses is not None
