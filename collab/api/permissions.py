"""Scopes and the abilities actions need.

A request passes two gates. The scope gate (``HasScope``) runs before the view and compares
the credential's scopes with what the action needs. The role gate
(``accounts.roles.require_ability``) runs once the view knows which workspace the target
lives in; which role grants which ability is the accounts app's to say.
"""

from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS, BasePermission

from .exceptions import Forbidden

READ, WRITE, MANAGE = "read", "write", "manage"


def default_level(method: str) -> str:
    if method in SAFE_METHODS:
        return "read"
    return "admin" if method == "DELETE" else "write"


def default_ability(method: str) -> str:
    if method in SAFE_METHODS:
        return READ
    return MANAGE if method == "DELETE" else WRITE


class IsAuthenticated(BasePermission):
    def has_permission(self, request, view):
        if request.user is None:
            raise exceptions.NotAuthenticated("Authentication credentials were not provided.")
        return True


def has_scope(request, scope: str) -> bool:
    """Whether the credential carries ``scope`` (a session in the browsable pages has all)."""
    return request.auth is None or scope in request.auth.scopes


def require_scope(request, scope: str) -> None:
    """The scope gate, for a view that learns which scope it needs only from the record it
    found (a comment is read as its parent is)."""
    if not has_scope(request, scope):
        raise Forbidden(
            f"This credential lacks the '{scope}' scope.",
            details={"required_scope": scope},
        )


class HasScope(BasePermission):
    """Compares the credential's scopes with ``view.required_scope()``."""

    def has_permission(self, request, view):
        required = view.required_scope() if hasattr(view, "required_scope") else None
        if required:
            require_scope(request, required)
        return True


class JwtOnly(BasePermission):
    """API keys cannot mint or revoke keys: key management needs a signed-in user."""

    def has_permission(self, request, view):
        if request.auth is None or not request.auth.is_jwt:
            raise Forbidden(
                "API keys are managed with a JWT from POST /v1/auth/login, not with an API key.",
                details={"required_credential": "jwt"},
            )
        return True
