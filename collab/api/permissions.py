"""Scopes and roles, enforced here and nowhere else.

A request passes two gates. The scope gate (``HasScope``) runs before the view and compares
the credential's scopes with what the action needs. The role gate (``require_ability``)
runs once the view knows which workspace the target lives in.
"""

from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS, BasePermission

from accounts.models import Role

from .exceptions import Forbidden

READ, WRITE, MANAGE = "read", "write", "manage"

ROLE_ABILITIES: dict[str | None, frozenset[str]] = {
    Role.OWNER: frozenset({READ, WRITE, MANAGE}),
    Role.ADMIN: frozenset({READ, WRITE, MANAGE}),
    Role.DEVELOPER: frozenset({READ, WRITE}),
    Role.VIEWER: frozenset({READ}),
    # Not a member of the workspace, yet able to see a public project.
    None: frozenset({READ}),
}


def default_level(method: str) -> str:
    if method in SAFE_METHODS:
        return "read"
    return "admin" if method == "DELETE" else "write"


def default_ability(method: str) -> str:
    if method in SAFE_METHODS:
        return READ
    return MANAGE if method == "DELETE" else WRITE


def user_roles(user) -> dict[int, str]:
    """``{workspace_id: role}`` for the user, loaded once per request and kept on the user."""
    roles = getattr(user, "_workspace_roles", None)
    if roles is None:
        roles = dict(user.memberships.values_list("workspace_id", "role"))
        user._workspace_roles = roles
    return roles


def role_remember(user, workspace_id: int, role: str | None) -> None:
    """Keep a role read along with something else (a project's row carries its reader's role),
    so checks on that workspace in the same request need no query of their own."""
    user.__dict__.setdefault("_known_roles", {})[workspace_id] = role


def workspace_role(user, workspace_id: int) -> str | None:
    """The user's role in one workspace (None: not a member), read at most once per request."""
    roles = getattr(user, "_workspace_roles", None)
    if roles is None:
        known = getattr(user, "_known_roles", None)
        if known is not None and workspace_id in known:
            return known[workspace_id]
        roles = user_roles(user)
    return roles.get(workspace_id)


def role_allows(role: str | None, ability: str) -> bool:
    return ability in ROLE_ABILITIES.get(role, frozenset())


def require_ability(user, workspace_id: int, ability: str) -> str | None:
    role = workspace_role(user, workspace_id)
    if not role_allows(role, ability):
        needed = {READ: "a member", WRITE: "a developer", MANAGE: "an owner or admin"}[ability]
        raise Forbidden(
            f"You must be {needed} of this workspace to do this.",
            details={"role": role, "required_ability": ability},
        )
    return role


class IsAuthenticated(BasePermission):
    def has_permission(self, request, view):
        if request.user is None:
            raise exceptions.NotAuthenticated("Authentication credentials were not provided.")
        return True


class HasScope(BasePermission):
    """Compares the credential's scopes with ``view.required_scope()``."""

    def has_permission(self, request, view):
        required = view.required_scope() if hasattr(view, "required_scope") else None
        if required and request.auth is not None and required not in request.auth.scopes:
            raise Forbidden(
                f"This credential lacks the '{required}' scope.",
                details={"required_scope": required},
            )
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
