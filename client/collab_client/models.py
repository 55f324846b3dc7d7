"""Typed records of the Collab API, generated from its OpenAPI schema by
``tools/generate_models.py``: do not edit by hand.

Every field may be ``None`` (a record read from an older or newer server may lack it); fields
a newer server adds are kept in ``extra``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ._model import Model

__all__ = [
    "ActingVia",
    "Actor",
    "ActorKind",
    "ApiKey",
    "ApiKeyCreated",
    "AppAuthorization",
    "AuditEntry",
    "AuditEntryType",
    "AuthorizedApp",
    "Branch",
    "BreakdownEntry",
    "Breakdowns",
    "BulkError",
    "ClientType",
    "Comment",
    "CommentRevision",
    "Commit",
    "CommitMetrics",
    "Credential",
    "CursorMeta",
    "Dashboard",
    "DayPoint",
    "Delivery",
    "DeliveryAttempt",
    "DeliveryDetail",
    "DeliveryStatus",
    "EmailStatus",
    "Event",
    "EventKind",
    "Export",
    "ExportStatus",
    "Invitation",
    "InvitationStatus",
    "Issue",
    "IssueBulkResult",
    "IssueHighlights",
    "IssueHistory",
    "IssueMetrics",
    "IssueStatus",
    "Label",
    "Me",
    "Method",
    "Metrics",
    "OAuthApp",
    "OAuthAppCreated",
    "PageMeta",
    "Priority",
    "Project",
    "ProjectMember",
    "ProjectStatus",
    "PullRequest",
    "PullRequestMetrics",
    "PullRequestState",
    "PullRequestStateChange",
    "PushAccepted",
    "RateLimit",
    "Repository",
    "RepositoryCreated",
    "Review",
    "ReviewState",
    "Role",
    "Scopes",
    "SearchHit",
    "SearchHitType",
    "ServiceAccount",
    "ServiceAccountRole",
    "SyncStatus",
    "Tier",
    "TokenPair",
    "Type",
    "User",
    "UserKind",
    "UserStatus",
    "Visibility",
    "Webhook",
    "Workspace",
    "WorkspaceDashboard",
]

ActorKind = Literal["person", "service"]
AuditEntryType = Literal[
    "api_key.created",
    "api_key.revoked",
    "api_key.used_from_new_address",
    "app.created",
    "app.updated",
    "app.deleted",
    "app.authorized",
    "app.revoked",
    "app_token.used_from_new_address",
    "service_account.created",
    "service_account.updated",
    "service_account.deleted",
]
ClientType = Literal["confidential", "public"]
Credential = Literal["jwt", "api_key", "oauth_app", "session"]
DeliveryStatus = Literal["pending", "succeeded", "failed"]
EmailStatus = Literal["queued", "sent", "failed"]
ExportStatus = Literal["pending", "running", "completed", "failed"]
InvitationStatus = Literal["pending", "accepted", "revoked", "expired"]
IssueStatus = Literal["open", "in_progress", "closed"]
Method = Literal["merge", "squash", "fast_forward"]
Priority = Literal["low", "medium", "high", "critical"]
ProjectStatus = Literal["active", "archived"]
PullRequestStateChange = Literal["open", "closed"]
PullRequestState = Literal["open", "closed", "merged"]
ReviewState = Literal["approved", "changes_requested", "commented"]
Role = Literal["owner", "admin", "developer", "viewer"]
Scopes = Literal[
    "projects:read",
    "projects:write",
    "projects:admin",
    "issues:read",
    "issues:write",
    "issues:admin",
    "users:read",
    "users:write",
]
SearchHitType = Literal["issue", "pull_request", "comment"]
ServiceAccountRole = Literal["admin", "developer", "viewer"]
SyncStatus = Literal["pending", "syncing", "synced", "failed"]
Tier = Literal["standard", "premium", "enterprise"]
Type = Literal["bug", "feature", "task", "improvement"]
UserKind = Literal["person", "service"]
UserStatus = Literal["active", "invited", "suspended"]
Visibility = Literal["private", "internal", "public"]


@dataclass(kw_only=True)
class ActingVia(Model):
    credential: Credential | None = None
    key_id: int | None = None
    app_id: int | None = None


@dataclass(kw_only=True)
class Actor(Model):
    id: int | None = None
    kind: ActorKind | None = None
    via: ActingVia | None = None
    __nested__: ClassVar[dict[str, tuple[str, bool]]] = {"via": ("ActingVia", False)}


@dataclass(kw_only=True)
class ApiKey(Model):
    id: int | None = None
    name: str | None = None
    prefix: str | None = None
    scopes: list[Scopes] | None = None
    projects: list[int] | None = None
    expires_at: str | None = None
    last_used_at: str | None = None
    revoked: bool | None = None
    revoked_at: str | None = None
    created_at: str | None = None


@dataclass(kw_only=True)
class ApiKeyCreated(Model):
    id: int | None = None
    name: str | None = None
    prefix: str | None = None
    scopes: list[Scopes] | None = None
    projects: list[int] | None = None
    expires_at: str | None = None
    last_used_at: str | None = None
    revoked: bool | None = None
    revoked_at: str | None = None
    created_at: str | None = None
    key: str | None = None


@dataclass(kw_only=True)
class AppAuthorization(Model):
    """An app a user authorised, and what its tokens reach."""

    id: int | None = None
    app: AuthorizedApp | None = None
    scopes: list[Scopes] | None = None
    projects: list[int] | None = None
    user_id: int | None = None
    created_at: str | None = None
    updated_at: str | None = None
    __nested__: ClassVar[dict[str, tuple[str, bool]]] = {"app": ("AuthorizedApp", False)}


@dataclass(kw_only=True)
class AuditEntry(Model):
    """One credential event of a workspace."""

    id: int | None = None
    type: AuditEntryType | None = None
    workspace_id: int | None = None
    actor: Actor | None = None
    subject: dict[str, Any] | None = None
    address: str | None = None
    created_at: str | None = None
    __nested__: ClassVar[dict[str, tuple[str, bool]]] = {"actor": ("Actor", False)}


@dataclass(kw_only=True)
class AuthorizedApp(Model):
    id: int | None = None
    name: str | None = None
    client_id: str | None = None
    workspace_id: int | None = None


@dataclass(kw_only=True)
class Branch(Model):
    name: str | None = None
    commit_sha: str | None = None
    is_default: bool | None = None


@dataclass(kw_only=True)
class BreakdownEntry(Model):
    key: str | None = None
    label: str | None = None
    open: int | None = None
    closed: int | None = None
    total: int | None = None


@dataclass(kw_only=True)
class Breakdowns(Model):
    status: list[BreakdownEntry] | None = None
    type: list[BreakdownEntry] | None = None
    priority: list[BreakdownEntry] | None = None
    assignee: list[BreakdownEntry] | None = None
    label: list[BreakdownEntry] | None = None
    __nested__: ClassVar[dict[str, tuple[str, bool]]] = {
        "status": ("BreakdownEntry", True),
        "type": ("BreakdownEntry", True),
        "priority": ("BreakdownEntry", True),
        "assignee": ("BreakdownEntry", True),
        "label": ("BreakdownEntry", True),
    }


@dataclass(kw_only=True)
class BulkError(Model):
    code: str | None = None
    message: str | None = None
    details: dict[str, Any] | None = None


@dataclass(kw_only=True)
class Comment(Model):
    """A comment on an issue or on a pull request."""

    id: int | None = None
    project_id: int | None = None
    issue_id: int | None = None
    pull_request_id: int | None = None
    author_id: int | None = None
    body: str | None = None
    body_html: str | None = None
    edited: bool | None = None
    created_at: str | None = None
    updated_at: str | None = None


@dataclass(kw_only=True)
class CommentRevision(Model):
    """A body a comment had before an edit replaced it."""

    id: int | None = None
    comment_id: int | None = None
    body: str | None = None
    author_id: int | None = None
    created_at: str | None = None
    replaced_at: str | None = None


@dataclass(kw_only=True)
class Commit(Model):
    sha: str | None = None
    repository_id: int | None = None
    author_name: str | None = None
    author_email: str | None = None
    message: str | None = None
    authored_at: str | None = None
    committed_at: str | None = None


@dataclass(kw_only=True)
class CommitMetrics(Model):
    total: int | None = None
    this_month: int | None = None


@dataclass(kw_only=True)
class CursorMeta(Model):
    """A page asked for by `cursor`. `total` counts the whole list, not what is left of it."""

    total: int | None = None
    per_page: int | None = None
    total_count: int | None = None
    next_cursor: str | None = None


@dataclass(kw_only=True)
class Dashboard(Model):
    period: str | None = None
    series: list[DayPoint] | None = None
    breakdowns: Breakdowns | None = None
    breakdowns_as_of: str | None = None
    from_: str | None = None
    to: str | None = None
    __nested__: ClassVar[dict[str, tuple[str, bool]]] = {
        "series": ("DayPoint", True),
        "breakdowns": ("Breakdowns", False),
    }
    __wire__: ClassVar[dict[str, str]] = {"from_": "from"}


@dataclass(kw_only=True)
class DayPoint(Model):
    date: str | None = None
    issues_opened: int | None = None
    issues_closed: int | None = None
    issues_reopened: int | None = None
    open_issues: int | None = None
    commits: int | None = None
    pull_requests_opened: int | None = None
    pull_requests_merged: int | None = None
    comments: int | None = None


@dataclass(kw_only=True)
class Delivery(Model):
    id: int | None = None
    uuid: str | None = None
    webhook_id: int | None = None
    event_id: int | None = None
    event_type: str | None = None
    status: DeliveryStatus | None = None
    attempts: int | None = None
    next_attempt_at: str | None = None
    last_status_code: int | None = None
    last_error: str | None = None
    redelivery_of: int | None = None
    created_at: str | None = None
    completed_at: str | None = None


@dataclass(kw_only=True)
class DeliveryAttempt(Model):
    number: int | None = None
    started_at: str | None = None
    duration_ms: int | None = None
    status_code: int | None = None
    error: str | None = None
    response_excerpt: str | None = None
    request_headers: dict[str, Any] | None = None


@dataclass(kw_only=True)
class DeliveryDetail(Model):
    id: int | None = None
    uuid: str | None = None
    webhook_id: int | None = None
    event_id: int | None = None
    event_type: str | None = None
    status: DeliveryStatus | None = None
    attempts: int | None = None
    next_attempt_at: str | None = None
    last_status_code: int | None = None
    last_error: str | None = None
    redelivery_of: int | None = None
    created_at: str | None = None
    completed_at: str | None = None
    attempt_log: list[DeliveryAttempt] | None = None
    payload: dict[str, Any] | None = None
    __nested__: ClassVar[dict[str, tuple[str, bool]]] = {"attempt_log": ("DeliveryAttempt", True)}


@dataclass(kw_only=True)
class Event(Model):
    id: int | None = None
    type: str | None = None
    created_at: str | None = None
    workspace_id: int | None = None
    project_id: int | None = None
    actor_id: int | None = None
    actor: Actor | None = None
    data: dict[str, Any] | None = None
    __nested__: ClassVar[dict[str, tuple[str, bool]]] = {"actor": ("Actor", False)}


@dataclass(kw_only=True)
class EventKind(Model):
    type: str | None = None
    emitted_by: str | None = None
    data: str | None = None


@dataclass(kw_only=True)
class Export(Model):
    id: int | None = None
    workspace_id: int | None = None
    status: ExportStatus | None = None
    created_at: str | None = None
    completed_at: str | None = None
    size: int | None = None
    expires_at: str | None = None
    error: str | None = None
    include_events: bool | None = None
    sha256: str | None = None
    created_by_id: int | None = None


@dataclass(kw_only=True)
class Invitation(Model):
    id: int | None = None
    workspace_id: int | None = None
    email: str | None = None
    role: Role | None = None
    projects: list[int] | None = None
    status: InvitationStatus | None = None
    expires_at: str | None = None
    created_at: str | None = None
    invited_by: int | None = None
    email_status: EmailStatus | None = None


@dataclass(kw_only=True)
class Issue(Model):
    """An issue record, for the schema: lists and records are built from ``.values()`` rows."""

    id: int | None = None
    project_id: int | None = None
    number: int | None = None
    title: str | None = None
    description: str | None = None
    type: Type | None = None
    priority: Priority | None = None
    status: IssueStatus | None = None
    assignee_id: int | None = None
    reporter_id: int | None = None
    labels: list[str] | None = None
    created_at: str | None = None
    updated_at: str | None = None
    closed_at: str | None = None
    comment_count: int | None = None
    highlights: IssueHighlights | None = None
    __nested__: ClassVar[dict[str, tuple[str, bool]]] = {"highlights": ("IssueHighlights", False)}


@dataclass(kw_only=True)
class IssueBulkResult(Model):
    """One item's answer: its record (201 created, 200 changed) or its error."""

    index: int | None = None
    status: int | None = None
    data: Issue | None = None
    error: BulkError | None = None
    __nested__: ClassVar[dict[str, tuple[str, bool]]] = {
        "data": ("Issue", False),
        "error": ("BulkError", False),
    }


@dataclass(kw_only=True)
class IssueHighlights(Model):
    """Where a list's ``q`` matched: escaped HTML, the matched words in ``<mark>``."""

    title: str | None = None
    description: str | None = None


@dataclass(kw_only=True)
class IssueHistory(Model):
    id: int | None = None
    field: str | None = None
    old_value: Any = None
    new_value: Any = None
    actor_id: int | None = None
    actor: Actor | None = None
    source: str | None = None
    created_at: str | None = None
    __nested__: ClassVar[dict[str, tuple[str, bool]]] = {"actor": ("Actor", False)}


@dataclass(kw_only=True)
class IssueMetrics(Model):
    total: int | None = None
    open: int | None = None
    closed: int | None = None
    opened: int | None = None
    reopened: int | None = None
    closings: int | None = None
    average_resolution_time: str | None = None
    average_resolution_seconds: int | None = None


@dataclass(kw_only=True)
class Label(Model):
    id: int | None = None
    project_id: int | None = None
    name: str | None = None
    color: str | None = None
    description: str | None = None
    created_at: str | None = None


@dataclass(kw_only=True)
class Me(Model):
    id: int | None = None
    email: str | None = None
    handle: str | None = None
    name: str | None = None
    kind: UserKind | None = None
    status: UserStatus | None = None
    tier: Tier | None = None
    created_at: str | None = None


@dataclass(kw_only=True)
class Metrics(Model):
    period: str | None = None
    issues: IssueMetrics | None = None
    commits: CommitMetrics | None = None
    pull_requests: PullRequestMetrics | None = None
    from_: str | None = None
    to: str | None = None
    __nested__: ClassVar[dict[str, tuple[str, bool]]] = {
        "issues": ("IssueMetrics", False),
        "commits": ("CommitMetrics", False),
        "pull_requests": ("PullRequestMetrics", False),
    }
    __wire__: ClassVar[dict[str, str]] = {"from_": "from"}


@dataclass(kw_only=True)
class OAuthApp(Model):
    """A workspace's registration of a third-party app, as its owners and admins see it."""

    id: int | None = None
    name: str | None = None
    client_id: str | None = None
    client_type: ClientType | None = None
    redirect_uris: list[str] | None = None
    scopes: list[Scopes] | None = None
    workspace_id: int | None = None
    created_by: int | None = None
    created_at: str | None = None


@dataclass(kw_only=True)
class OAuthAppCreated(Model):
    """A workspace's registration of a third-party app, as its owners and admins see it."""

    id: int | None = None
    name: str | None = None
    client_id: str | None = None
    client_type: ClientType | None = None
    redirect_uris: list[str] | None = None
    scopes: list[Scopes] | None = None
    workspace_id: int | None = None
    created_by: int | None = None
    created_at: str | None = None
    client_secret: str | None = None


@dataclass(kw_only=True)
class PageMeta(Model):
    """A page asked for by number (`page`, or neither `page` nor `cursor`)."""

    total: int | None = None
    page: int | None = None
    per_page: int | None = None
    current_page: int | None = None
    total_pages: int | None = None
    total_count: int | None = None
    next_cursor: str | None = None


@dataclass(kw_only=True)
class Project(Model):
    """A project as the API shows it. ``team_count`` comes annotated by the selectors."""

    id: int | None = None
    workspace_id: int | None = None
    name: str | None = None
    description: str | None = None
    status: ProjectStatus | None = None
    visibility: Visibility | None = None
    created_at: str | None = None
    updated_at: str | None = None
    team_count: int | None = None


@dataclass(kw_only=True)
class ProjectMember(Model):
    id: int | None = None
    email: str | None = None
    name: str | None = None
    status: UserStatus | None = None
    role: Role | None = None
    added_at: str | None = None


@dataclass(kw_only=True)
class PullRequest(Model):
    id: int | None = None
    repository_id: int | None = None
    number: int | None = None
    title: str | None = None
    description: str | None = None
    head: str | None = None
    base: str | None = None
    state: PullRequestState | None = None
    author_id: int | None = None
    head_sha: str | None = None
    base_sha: str | None = None
    merge_commit_sha: str | None = None
    merge_method: str | None = None
    merged_by_id: int | None = None
    created_at: str | None = None
    updated_at: str | None = None
    merged_at: str | None = None
    closed_at: str | None = None
    comment_count: int | None = None


@dataclass(kw_only=True)
class PullRequestMetrics(Model):
    opened: int | None = None
    merged: int | None = None
    average_review_time: str | None = None
    average_review_seconds: int | None = None


@dataclass(kw_only=True)
class PushAccepted(Model):
    queued: bool | None = None


@dataclass(kw_only=True)
class RateLimit(Model):
    """The caller's rate-limit window (`GET /v1/rate_limit`)."""

    tier: Tier | None = None
    limit: int | None = None
    remaining: int | None = None
    used: int | None = None
    reset: int | None = None
    reset_at: str | None = None
    window_seconds: int | None = None


@dataclass(kw_only=True)
class Repository(Model):
    id: int | None = None
    project_id: int | None = None
    name: str | None = None
    clone_url: str | None = None
    default_branch: str | None = None
    sync_status: SyncStatus | None = None
    sync_error: str | None = None
    last_synced_at: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


@dataclass(kw_only=True)
class RepositoryCreated(Model):
    id: int | None = None
    project_id: int | None = None
    name: str | None = None
    clone_url: str | None = None
    default_branch: str | None = None
    sync_status: SyncStatus | None = None
    sync_error: str | None = None
    last_synced_at: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    webhook_secret: str | None = None
    push_url: str | None = None


@dataclass(kw_only=True)
class Review(Model):
    id: int | None = None
    pull_request_id: int | None = None
    author_id: int | None = None
    state: ReviewState | None = None
    body: str | None = None
    created_at: str | None = None


@dataclass(kw_only=True)
class SearchHit(Model):
    """One thing found: an issue, a pull request or a comment."""

    type: SearchHitType | None = None
    id: int | None = None
    project_id: int | None = None
    title: str | None = None
    snippet: str | None = None
    score: float | None = None
    issue_id: int | None = None
    pull_request_id: int | None = None


@dataclass(kw_only=True)
class ServiceAccount(Model):
    """A service account, as its workspace's owners and admins see it."""

    id: int | None = None
    kind: str | None = None
    name: str | None = None
    handle: str | None = None
    workspace_id: int | None = None
    role: ServiceAccountRole | None = None
    projects: list[int] | None = None
    tier: Tier | None = None
    created_by: int | None = None
    created_at: str | None = None


@dataclass(kw_only=True)
class TokenPair(Model):
    access_token: str | None = None
    refresh_token: str | None = None
    token_type: str | None = None
    expires_in: int | None = None


@dataclass(kw_only=True)
class User(Model):
    """A user as seen inside one workspace: ``role`` is their role there."""

    id: int | None = None
    email: str | None = None
    handle: str | None = None
    name: str | None = None
    role: Role | None = None
    status: UserStatus | None = None
    kind: UserKind | None = None
    workspace_id: int | None = None
    created_at: str | None = None


@dataclass(kw_only=True)
class Webhook(Model):
    """A webhook as shown: never its secret (``secret`` appears once, in a create's answer,."""

    id: int | None = None
    workspace_id: int | None = None
    project_id: int | None = None
    url: str | None = None
    events: list[str] | None = None
    description: str | None = None
    active: bool | None = None
    disabled_reason: str | None = None
    failing_since: str | None = None
    last_delivery_at: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    secret: str | None = None


@dataclass(kw_only=True)
class Workspace(Model):
    id: int | None = None
    name: str | None = None
    slug: str | None = None
    role: Role | None = None
    created_at: str | None = None


@dataclass(kw_only=True)
class WorkspaceDashboard(Model):
    period: str | None = None
    series: list[DayPoint] | None = None
    breakdowns: Breakdowns | None = None
    breakdowns_as_of: str | None = None
    project_ids: list[int] | None = None
    from_: str | None = None
    to: str | None = None
    __nested__: ClassVar[dict[str, tuple[str, bool]]] = {
        "series": ("DayPoint", True),
        "breakdowns": ("Breakdowns", False),
    }
    __wire__: ClassVar[dict[str, str]] = {"from_": "from"}
