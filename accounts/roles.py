"""Workspace roles and what each allows: the role gate every view passes once it knows which
workspace its target lives in (the scope gate is ``collab.api.permissions.HasScope``)."""

from collab.api.exceptions import Forbidden
from collab.api.permissions import MANAGE, READ, WRITE

from .models import Role

ROLE_ABILITIES: dict[str | None, frozenset[str]] = {
    Role.OWNER: frozenset({READ, WRITE, MANAGE}),
    Role.ADMIN: frozenset({READ, WRITE, MANAGE}),
    Role.DEVELOPER: frozenset({READ, WRITE}),
    Role.VIEWER: frozenset({READ}),
    # Not a member of the workspace, yet able to see a public project.
    None: frozenset({READ}),
}


def project_limit(user) -> frozenset[int] | None:
    """The projects the request's credential is limited to (an API key's ``projects``), or
    None: every project the user sees."""
    return getattr(user, "project_limit", None)


def require_unlimited(user, action: str) -> None:
    """The limit gate: what a credential limited to projects may not do at all (create
    projects, manage members, the workspace's own records). Data outside the projects is
    hidden instead (404), by the selectors."""
    if project_limit(user) is not None:
        raise Forbidden(
            f"This API key is limited to projects: it cannot {action}.",
            details={"project_limited": True},
        )


def user_roles(user) -> dict[int, str]:
    """``{workspace_id: role}`` for the user, loaded once per request and kept on the user.
    With a credential limited to projects, only the workspaces holding those projects."""
    roles = getattr(user, "_workspace_roles", None)
    if roles is None:
        memberships = user.memberships.all()
        limit = project_limit(user)
        if limit is not None:
            memberships = memberships.filter(workspace__projects__in=sorted(limit)).distinct()
        roles = dict(memberships.values_list("workspace_id", "role"))
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
