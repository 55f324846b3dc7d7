"""Every event kind the service records: which operation emits it and what ``data`` holds.

Webhook registrations are checked against it, the table of
docs/guide/events-and-webhooks.md is written from it, and ``GET /v1/events/kinds`` serves
it. A kind recorded anywhere must be listed here (a test checks the code for kinds missing
from it).
"""

import re

EVENT_KINDS: dict[str, tuple[str, str]] = {
    "project.created": ("POST /v1/projects", '{"project"}'),
    "project.updated": ("PUT/PATCH /v1/projects/:id", '{"project", "changes"}'),
    "project.deleted": ("DELETE /v1/projects/:id", '{"project"}'),
    "member.added": (
        "POST /v1/projects/:id/members, accepting an invitation with projects",
        '{"project", "user"}',
    ),
    "member.removed": ("DELETE /v1/projects/:id/members/:user_id", '{"project", "user"}'),
    "invitation.created": ("POST /v1/workspaces/:id/invitations", '{"invitation"}'),
    "invitation.accepted": ("POST /v1/invitations/accept", '{"invitation"}'),
    "invitation.revoked": ("DELETE /v1/workspaces/:id/invitations/:id", '{"invitation"}'),
    "workspace.created": ("POST /v1/workspaces", '{"workspace"}'),
    "workspace.member_added": ("accepting an invitation, create_user", '{"workspace", "member"}'),
    "workspace.member_updated": (
        "PATCH /v1/workspaces/:id/members/:user_id",
        '{"workspace", "member", "changes"}',
    ),
    "workspace.member_removed": (
        "DELETE /v1/workspaces/:id/members/:user_id",
        '{"workspace", "member"}',
    ),
    "issue.created": ("POST /v1/projects/:id/issues, the admin", '{"issue"}'),
    "issue.updated": (
        "PUT/PATCH /v1/issues/:id, the admin; renaming or deleting a label the issue carries",
        '{"issue", "changes"}',
    ),
    "issue.closed": (
        "a change of status to closed (API, admin, a merged pull request's closing keyword)",
        '{"issue", "changes"}',
    ),
    "issue.reopened": ("a change of status from closed", '{"issue", "changes"}'),
    "issue.deleted": ("DELETE /v1/issues/:id", '{"issue"}'),
    "label.created": ("POST /v1/projects/:id/labels", '{"label"}'),
    "label.updated": ("PUT/PATCH /v1/labels/:id", '{"label", "changes"}'),
    "label.deleted": ("DELETE /v1/labels/:id", '{"label"}'),
    "repository.created": (
        "POST /v1/projects/:id/repositories, the admin",
        '{"repository"}',
    ),
    "repository.deleted": ("DELETE /v1/repositories/:id, the admin", '{"repository"}'),
    "repository.synced": (
        "a sync that changed something (new commits, branches, status)",
        '{"repository", "new_commits", "branches"}',
    ),
    "pull_request.opened": ("POST /v1/repositories/:id/pulls", '{"pull_request"}'),
    "pull_request.updated": (
        "PATCH /v1/pulls/:id (title, description, reopening); a sync moving an open one's "
        "head_sha or base_sha",
        '{"pull_request", "changes"}',
    ),
    "pull_request.reviewed": ("POST /v1/pulls/:id/reviews", '{"pull_request", "review"}'),
    "pull_request.merged": (
        "POST /v1/pulls/:id/merge, or a sync finding it merged outside (actor_id null)",
        '{"pull_request", "changes"}',
    ),
    "pull_request.closed": (
        'PATCH /v1/pulls/:id with {"state": "closed"}',
        '{"pull_request", "changes"}',
    ),
    "comment.created": (
        "POST /v1/issues/:id/comments, POST /v1/pulls/:id/comments",
        '{"comment", "issue" or "pull_request"}',
    ),
    "comment.updated": (
        "PATCH /v1/comments/:id (a new body)",
        '{"comment", "issue" or "pull_request", "changes"}',
    ),
    "comment.deleted": ("DELETE /v1/comments/:id", '{"comment", "issue" or "pull_request"}'),
    "webhook.created": (
        "POST /v1/projects/:id/webhooks, POST /v1/workspaces/:id/webhooks",
        '{"webhook"}',
    ),
    "webhook.updated": ("PATCH /v1/webhooks/:id", '{"webhook", "changes"}'),
    "webhook.deleted": ("DELETE /v1/webhooks/:id", '{"webhook"}'),
    "webhook.disabled": (
        "a webhook failing for WEBHOOK_DISABLE_AFTER_HOURS is switched off",
        '{"webhook", "reason"}',
    ),
    "webhook.ping": ("POST /v1/webhooks/:id/ping (sent to that webhook only)", '{"webhook"}'),
    "export.completed": (
        "the worker finished an export asked with POST /v1/workspaces/:id/exports",
        '{"export"}',
    ),
    "export.failed": (
        "an export asked with POST /v1/workspaces/:id/exports could not be built",
        '{"export"}',
    ),
    "service_account.created": (
        "POST /v1/workspaces/:id/service-accounts",
        '{"service_account"}',
    ),
    "service_account.updated": ("PATCH /v1/service-accounts/:id", '{"service_account"}'),
    "service_account.deleted": ("DELETE /v1/service-accounts/:id", '{"service_account"}'),
    "app.created": ("POST /v1/workspaces/:id/oauth-apps", '{"app"}'),
    "app.updated": ("PATCH /v1/oauth-apps/:id", '{"app"}'),
    "app.deleted": ("DELETE /v1/oauth-apps/:id", '{"app"}'),
    "app.authorized": (
        "a user allows an app on the consent page (GET/POST /oauth/authorize)",
        '{"authorization"}',
    ),
    "app.revoked": ("DELETE /v1/users/me/authorizations/:id", '{"authorization"}'),
}


def kind_matches(kind: str, patterns: list[str]) -> bool:
    """Whether ``kind`` is selected by ``patterns`` (exact kinds, ``issue.*``, or ``*``)."""
    for pattern in patterns:
        if pattern == "*" or pattern == kind:
            return True
        if pattern.endswith(".*") and kind.startswith(pattern[:-1]):
            return True
    return False


def unknown_patterns(patterns: list[str]) -> list[str]:
    families = {kind.split(".", 1)[0] for kind in EVENT_KINDS}
    return [
        pattern
        for pattern in patterns
        if pattern != "*"
        and pattern not in EVENT_KINDS
        and not (pattern.endswith(".*") and pattern[:-2] in families)
    ]


def event_patterns() -> list[str]:
    """Everything a subscription may name: each kind, each family (``issue.*``), and ``*``."""
    families = sorted({kind.split(".", 1)[0] for kind in EVENT_KINDS})
    return [*EVENT_KINDS, *(f"{family}.*" for family in families), "*"]


def _types_pattern() -> str:
    one = "|".join(re.escape(pattern) for pattern in event_patterns())
    # Comma-separated, spaces around the commas allowed, empty items skipped, at least one.
    return rf"^(?: *,)* *(?:{one}) *(?:, *(?:(?:{one}) *)?)*$"


# What ``types`` (the event list, the stream) takes, for the form and the schema alike.
TYPES_PATTERN = _types_pattern()
