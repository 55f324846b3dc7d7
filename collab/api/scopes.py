"""The contract's scopes and their hierarchy: ``:admin`` implies ``:write`` implies ``:read``."""

from collections.abc import Iterable

LEVELS = ("read", "write", "admin")
GROUP_LEVELS = {
    "projects": ("read", "write", "admin"),
    "issues": ("read", "write", "admin"),
    "users": ("read", "write"),
}
ALL_SCOPES: tuple[str, ...] = tuple(
    f"{group}:{level}" for group, levels in GROUP_LEVELS.items() for level in levels
)

# Which operation needs which scope (docs/guide/authentication.md), for the schema.
SCOPE_TABLE = [
    (
        "read projects, members, repositories, branches, pull requests, metrics, reports, events",
        "projects:read",
    ),
    (
        "create/update projects, create/update/merge pull requests, sync repositories",
        "projects:write",
    ),
    ("delete projects, manage members, repositories and webhooks", "projects:admin"),
    ("read issues and labels; read comments on issues", "issues:read"),
    (
        "create/update issues, labels; post, edit and delete your own comments "
        "(on issues and pull requests)",
        "issues:write",
    ),
    ("delete issues and labels; delete someone else's comment", "issues:admin"),
    ("read users", "users:read"),
    ("invite users, change roles", "users:write"),
]


def expand(scopes: Iterable[str]) -> frozenset[str]:
    """Every scope the given ones grant, implied ones included."""
    granted: set[str] = set()
    for scope in scopes:
        group, _, level = scope.partition(":")
        levels = GROUP_LEVELS.get(group)
        if not levels or level not in levels:
            continue
        granted.update(f"{group}:{lower}" for lower in levels[: levels.index(level) + 1])
    return frozenset(granted)


def invalid_scopes(scopes: Iterable[str]) -> list[str]:
    return [scope for scope in scopes if scope not in ALL_SCOPES]


ALL_GRANTED = expand(ALL_SCOPES)
