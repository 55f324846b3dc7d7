"""Every operation of the API, by resource: ``client.issues.create(...)``.

Generated from the OpenAPI schema by ``tools/generate_models.py``: do not edit by hand.

A method of a ``Collab`` resource answers the result; the same method of an ``AsyncCollab``
resource answers an awaitable of it (lists: a ``Pager`` or an ``AsyncPager``). Write methods
take the API's field names as keyword arguments; one left out is not sent (PATCH changes only
what is given). ``if_match=`` (a record's ``.etag``) makes an update or delete answer
``PreconditionFailed`` instead of overwriting a change made since it was read.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, BinaryIO

from ._resource import AsyncResource, Resource
from ._types import UNSET
from .errors import ResyncRequired
from .models import (
    ApiKey,
    ApiKeyCreated,
    AppAuthorization,
    AuditEntry,
    Branch,
    Comment,
    CommentRevision,
    Commit,
    Dashboard,
    Delivery,
    DeliveryDetail,
    Event,
    EventKind,
    Export,
    Invitation,
    Issue,
    IssueBulkResult,
    IssueHistory,
    Label,
    Me,
    Metrics,
    OAuthApp,
    OAuthAppCreated,
    Project,
    ProjectMember,
    PullRequest,
    PushAccepted,
    RateLimit,
    Repository,
    RepositoryCreated,
    Review,
    SearchHit,
    ServiceAccount,
    TokenPair,
    User,
    Webhook,
    Workspace,
    WorkspaceDashboard,
)
from .pagination import AsyncPager, Pager

__all__ = [
    "ApiKeys",
    "AsyncApiKeys",
    "AsyncAuditLog",
    "AsyncAuth",
    "AsyncAuthorizations",
    "AsyncComments",
    "AsyncDashboardResource",
    "AsyncDeliveries",
    "AsyncEvents",
    "AsyncExports",
    "AsyncInvitations",
    "AsyncIssues",
    "AsyncLabels",
    "AsyncMembers",
    "AsyncMetricsResource",
    "AsyncOauthApps",
    "AsyncProjects",
    "AsyncPulls",
    "AsyncRateLimitResource",
    "AsyncReports",
    "AsyncRepositories",
    "AsyncSearch",
    "AsyncServiceAccounts",
    "AsyncUsers",
    "AsyncWebhooks",
    "AsyncWorkspaces",
    "AuditLog",
    "Auth",
    "Authorizations",
    "Comments",
    "DashboardResource",
    "Deliveries",
    "Events",
    "Exports",
    "Invitations",
    "Issues",
    "Labels",
    "Members",
    "MetricsResource",
    "OauthApps",
    "Projects",
    "Pulls",
    "RateLimitResource",
    "Reports",
    "Repositories",
    "Search",
    "ServiceAccounts",
    "Users",
    "Webhooks",
    "Workspaces",
]


class ApiKeys(Resource):
    def create(
        self,
        *,
        name: str,
        scopes: Sequence[str],
        expires_in: str | None = UNSET,
        projects: Sequence[int] | None = UNSET,
        idempotency_key: str | None = None,
    ) -> ApiKeyCreated:
        return self._one(
            ApiKeyCreated,
            "POST",
            "/v1/api-keys",
            json={"name": name, "scopes": scopes, "expiresIn": expires_in, "projects": projects},
            idempotency_key=idempotency_key,
        )

    def get(self, key_id: int) -> ApiKey:
        return self._one(ApiKey, "GET", f"/v1/api-keys/{key_id}")

    def list(self, *, per_page: int | None = None) -> Pager[ApiKey]:
        return self._page(ApiKey, "/v1/api-keys", per_page=per_page)

    def revoke(self, key_id: int, *, if_match: str | None = None) -> None:
        return self._none("DELETE", f"/v1/api-keys/{key_id}", if_match=if_match)


class AsyncApiKeys(AsyncResource):
    def create(
        self,
        *,
        name: str,
        scopes: Sequence[str],
        expires_in: str | None = UNSET,
        projects: Sequence[int] | None = UNSET,
        idempotency_key: str | None = None,
    ) -> Awaitable[ApiKeyCreated]:
        return self._one(
            ApiKeyCreated,
            "POST",
            "/v1/api-keys",
            json={"name": name, "scopes": scopes, "expiresIn": expires_in, "projects": projects},
            idempotency_key=idempotency_key,
        )

    def get(self, key_id: int) -> Awaitable[ApiKey]:
        return self._one(ApiKey, "GET", f"/v1/api-keys/{key_id}")

    def list(self, *, per_page: int | None = None) -> AsyncPager[ApiKey]:
        return self._page(ApiKey, "/v1/api-keys", per_page=per_page)

    def revoke(self, key_id: int, *, if_match: str | None = None) -> Awaitable[None]:
        return self._none("DELETE", f"/v1/api-keys/{key_id}", if_match=if_match)


class AuditLog(Resource):
    def list(
        self,
        workspace_id: int,
        *,
        actor_id: int | None = None,
        per_page: int | None = None,
        type: str | None = None,
    ) -> Pager[AuditEntry]:
        """``/v1/workspaces/:workspace_id/audit-log``: the workspace's credential events, the
        newest first, for its owners and admins."""
        return self._page(
            AuditEntry,
            f"/v1/workspaces/{workspace_id}/audit-log",
            actor_id=actor_id,
            per_page=per_page,
            type=type,
        )


class AsyncAuditLog(AsyncResource):
    def list(
        self,
        workspace_id: int,
        *,
        actor_id: int | None = None,
        per_page: int | None = None,
        type: str | None = None,
    ) -> AsyncPager[AuditEntry]:
        """``/v1/workspaces/:workspace_id/audit-log``: the workspace's credential events, the
        newest first, for its owners and admins."""
        return self._page(
            AuditEntry,
            f"/v1/workspaces/{workspace_id}/audit-log",
            actor_id=actor_id,
            per_page=per_page,
            type=type,
        )


class Auth(Resource):
    def login(self, *, email: str, password: str) -> TokenPair:
        return self._one(
            TokenPair, "POST", "/v1/auth/login", json={"email": email, "password": password}
        )

    def logout(self, *, refresh_token: str) -> None:
        """Ends the session of `refresh_token`: the refresh token, the access tokens issued from
        it, and the access token sent as `Authorization: Bearer`, if any."""
        return self._none("POST", "/v1/auth/logout", json={"refresh_token": refresh_token})

    def refresh(self, *, refresh_token: str) -> TokenPair:
        return self._one(
            TokenPair, "POST", "/v1/auth/refresh", json={"refresh_token": refresh_token}
        )


class AsyncAuth(AsyncResource):
    def login(self, *, email: str, password: str) -> Awaitable[TokenPair]:
        return self._one(
            TokenPair, "POST", "/v1/auth/login", json={"email": email, "password": password}
        )

    def logout(self, *, refresh_token: str) -> Awaitable[None]:
        """Ends the session of `refresh_token`: the refresh token, the access tokens issued from
        it, and the access token sent as `Authorization: Bearer`, if any."""
        return self._none("POST", "/v1/auth/logout", json={"refresh_token": refresh_token})

    def refresh(self, *, refresh_token: str) -> Awaitable[TokenPair]:
        return self._one(
            TokenPair, "POST", "/v1/auth/refresh", json={"refresh_token": refresh_token}
        )


class Authorizations(Resource):
    def list(self, *, per_page: int | None = None) -> Pager[AppAuthorization]:
        return self._page(AppAuthorization, "/v1/users/me/authorizations", per_page=per_page)

    def revoke(self, authorization_id: int, *, if_match: str | None = None) -> None:
        return self._none(
            "DELETE", f"/v1/users/me/authorizations/{authorization_id}", if_match=if_match
        )


class AsyncAuthorizations(AsyncResource):
    def list(self, *, per_page: int | None = None) -> AsyncPager[AppAuthorization]:
        return self._page(AppAuthorization, "/v1/users/me/authorizations", per_page=per_page)

    def revoke(self, authorization_id: int, *, if_match: str | None = None) -> Awaitable[None]:
        return self._none(
            "DELETE", f"/v1/users/me/authorizations/{authorization_id}", if_match=if_match
        )


class Comments(Resource):
    def create(
        self,
        *,
        body: str,
        issue_id: int | None = None,
        pull_id: int | None = None,
        idempotency_key: str | None = None,
    ) -> Comment:
        """A Markdown comment on an issue (``issue_id=``) or a pull request (``pull_id=``);
        ``@handle`` mentions a member who can see it."""
        return self._one(
            Comment,
            "POST",
            _thread(issue_id, pull_id, "create"),
            json={"body": body},
            idempotency_key=idempotency_key,
        )

    def delete(self, comment_id: int, *, if_match: str | None = None) -> None:
        """Delete your own comment, or, as a workspace owner or admin, anyone's."""
        return self._none("DELETE", f"/v1/comments/{comment_id}", if_match=if_match)

    def get(self, comment_id: int) -> Comment:
        """``/v1/comments/:id``: one comment, its edits and its deletion."""
        return self._one(Comment, "GET", f"/v1/comments/{comment_id}")

    def history(self, comment_id: int, *, per_page: int | None = None) -> Pager[CommentRevision]:
        """The bodies the comment had before each edit, oldest first."""
        return self._page(CommentRevision, f"/v1/comments/{comment_id}/history", per_page=per_page)

    def list(
        self,
        *,
        issue_id: int | None = None,
        pull_id: int | None = None,
        since: str | None = None,
        per_page: int | None = None,
    ) -> Pager[Comment]:
        """The thread of an issue (``issue_id=``) or a pull request (``pull_id=``), oldest
        first; ``since`` (ISO 8601): only comments written or edited at or after it."""
        return self._page(
            Comment, _thread(issue_id, pull_id, "list"), since=since, per_page=per_page
        )

    def update(self, comment_id: int, *, body: str = UNSET, if_match: str | None = None) -> Comment:
        """Change the body of your own comment; the body it replaces is kept in its history."""
        return self._one(
            Comment, "PATCH", f"/v1/comments/{comment_id}", json={"body": body}, if_match=if_match
        )


class AsyncComments(AsyncResource):
    def create(
        self,
        *,
        body: str,
        issue_id: int | None = None,
        pull_id: int | None = None,
        idempotency_key: str | None = None,
    ) -> Awaitable[Comment]:
        """A Markdown comment on an issue (``issue_id=``) or a pull request (``pull_id=``);
        ``@handle`` mentions a member who can see it."""
        return self._one(
            Comment,
            "POST",
            _thread(issue_id, pull_id, "create"),
            json={"body": body},
            idempotency_key=idempotency_key,
        )

    def delete(self, comment_id: int, *, if_match: str | None = None) -> Awaitable[None]:
        """Delete your own comment, or, as a workspace owner or admin, anyone's."""
        return self._none("DELETE", f"/v1/comments/{comment_id}", if_match=if_match)

    def get(self, comment_id: int) -> Awaitable[Comment]:
        """``/v1/comments/:id``: one comment, its edits and its deletion."""
        return self._one(Comment, "GET", f"/v1/comments/{comment_id}")

    def history(
        self, comment_id: int, *, per_page: int | None = None
    ) -> AsyncPager[CommentRevision]:
        """The bodies the comment had before each edit, oldest first."""
        return self._page(CommentRevision, f"/v1/comments/{comment_id}/history", per_page=per_page)

    def list(
        self,
        *,
        issue_id: int | None = None,
        pull_id: int | None = None,
        since: str | None = None,
        per_page: int | None = None,
    ) -> AsyncPager[Comment]:
        """The thread of an issue (``issue_id=``) or a pull request (``pull_id=``), oldest
        first; ``since`` (ISO 8601): only comments written or edited at or after it."""
        return self._page(
            Comment, _thread(issue_id, pull_id, "list"), since=since, per_page=per_page
        )

    def update(
        self, comment_id: int, *, body: str = UNSET, if_match: str | None = None
    ) -> Awaitable[Comment]:
        """Change the body of your own comment; the body it replaces is kept in its history."""
        return self._one(
            Comment, "PATCH", f"/v1/comments/{comment_id}", json={"body": body}, if_match=if_match
        )


class DashboardResource(Resource):
    def project(self, project_id: int, *, period: str | None = None) -> Dashboard:
        """Daily series for charts over the period, and issue breakdowns."""
        return self._one(
            Dashboard, "GET", f"/v1/projects/{project_id}/dashboard", params={"period": period}
        )

    def workspace(self, workspace_id: int, *, period: str | None = None) -> WorkspaceDashboard:
        """Daily series and breakdowns over the workspace's projects visible to the caller."""
        return self._one(
            WorkspaceDashboard,
            "GET",
            f"/v1/workspaces/{workspace_id}/dashboard",
            params={"period": period},
        )


class AsyncDashboardResource(AsyncResource):
    def project(self, project_id: int, *, period: str | None = None) -> Awaitable[Dashboard]:
        """Daily series for charts over the period, and issue breakdowns."""
        return self._one(
            Dashboard, "GET", f"/v1/projects/{project_id}/dashboard", params={"period": period}
        )

    def workspace(
        self, workspace_id: int, *, period: str | None = None
    ) -> Awaitable[WorkspaceDashboard]:
        """Daily series and breakdowns over the workspace's projects visible to the caller."""
        return self._one(
            WorkspaceDashboard,
            "GET",
            f"/v1/workspaces/{workspace_id}/dashboard",
            params={"period": period},
        )


class Deliveries(Resource):
    def get(self, webhook_id: int, delivery_id: int) -> DeliveryDetail:
        return self._one(
            DeliveryDetail, "GET", f"/v1/webhooks/{webhook_id}/deliveries/{delivery_id}"
        )

    def list(
        self,
        webhook_id: int,
        *,
        event_type: str | None = None,
        per_page: int | None = None,
        status: str | None = None,
    ) -> Pager[Delivery]:
        return self._page(
            Delivery,
            f"/v1/webhooks/{webhook_id}/deliveries",
            event_type=event_type,
            per_page=per_page,
            status=status,
        )

    def redeliver(
        self, webhook_id: int, delivery_id: int, *, idempotency_key: str | None = None
    ) -> Delivery:
        return self._one(
            Delivery,
            "POST",
            f"/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver",
            idempotency_key=idempotency_key,
        )


class AsyncDeliveries(AsyncResource):
    def get(self, webhook_id: int, delivery_id: int) -> Awaitable[DeliveryDetail]:
        return self._one(
            DeliveryDetail, "GET", f"/v1/webhooks/{webhook_id}/deliveries/{delivery_id}"
        )

    def list(
        self,
        webhook_id: int,
        *,
        event_type: str | None = None,
        per_page: int | None = None,
        status: str | None = None,
    ) -> AsyncPager[Delivery]:
        return self._page(
            Delivery,
            f"/v1/webhooks/{webhook_id}/deliveries",
            event_type=event_type,
            per_page=per_page,
            status=status,
        )

    def redeliver(
        self, webhook_id: int, delivery_id: int, *, idempotency_key: str | None = None
    ) -> Awaitable[Delivery]:
        return self._one(
            Delivery,
            "POST",
            f"/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver",
            idempotency_key=idempotency_key,
        )


class Events(Resource):
    def kinds(self) -> builtins.list[EventKind]:
        return self._many(EventKind, "GET", "/v1/events/kinds")

    def list(
        self,
        *,
        after_id: int | None = None,
        per_page: int | None = None,
        project_id: int | None = None,
        sort: str | Sequence[str] | None = None,
        types: str | None = None,
    ) -> Pager[Event]:
        return self._page(
            Event,
            "/v1/events",
            after_id=after_id,
            per_page=per_page,
            project_id=project_id,
            sort=sort,
            types=types,
        )

    def stream(
        self,
        *,
        project_id: int | None = None,
        types: Sequence[str] | str | None = None,
        last_event_id: int | None = None,
        on_resync: Callable[[ResyncRequired], Any] | None = None,
        max_reconnects: int = 20,
    ) -> Iterator[Event]:
        """Events as they happen (``for event in ...``; ``async for`` on ``AsyncCollab``)."""
        return self._stream(
            {"project_id": project_id, "types": types},
            last_event_id=last_event_id,
            on_resync=on_resync,
            max_reconnects=max_reconnects,
        )


class AsyncEvents(AsyncResource):
    def kinds(self) -> Awaitable[builtins.list[EventKind]]:
        return self._many(EventKind, "GET", "/v1/events/kinds")

    def list(
        self,
        *,
        after_id: int | None = None,
        per_page: int | None = None,
        project_id: int | None = None,
        sort: str | Sequence[str] | None = None,
        types: str | None = None,
    ) -> AsyncPager[Event]:
        return self._page(
            Event,
            "/v1/events",
            after_id=after_id,
            per_page=per_page,
            project_id=project_id,
            sort=sort,
            types=types,
        )

    def stream(
        self,
        *,
        project_id: int | None = None,
        types: Sequence[str] | str | None = None,
        last_event_id: int | None = None,
        on_resync: Callable[[ResyncRequired], Any] | None = None,
        max_reconnects: int = 20,
    ) -> AsyncIterator[Event]:
        """Events as they happen (``for event in ...``; ``async for`` on ``AsyncCollab``)."""
        return self._stream(
            {"project_id": project_id, "types": types},
            last_event_id=last_event_id,
            on_resync=on_resync,
            max_reconnects=max_reconnects,
        )


class Exports(Resource):
    def create(
        self, workspace_id: int, *, include_events: bool = UNSET, idempotency_key: str | None = None
    ) -> Export:
        """Ask for an archive of the whole workspace: answered at once (202) with the export
        `pending`; a worker builds it, then it is `completed` (or `failed`), and the events
        `export.completed` or `export.failed` say so."""
        return self._one(
            Export,
            "POST",
            f"/v1/workspaces/{workspace_id}/exports",
            json={"include_events": include_events},
            idempotency_key=idempotency_key,
        )

    def download(
        self, workspace_id: int, export_id: int, *, to: str | os.PathLike[str] | BinaryIO
    ) -> int:
        """Write the completed export's archive into ``to`` (a path, or a file open for bytes)
        as it streams in; answers the bytes written. ``Conflict`` until it is completed."""
        return self._download(f"/v1/workspaces/{workspace_id}/exports/{export_id}/download", to)

    def get(self, workspace_id: int, export_id: int) -> Export:
        """One export: its status and, once completed, its size, digest and expiry."""
        return self._one(Export, "GET", f"/v1/workspaces/{workspace_id}/exports/{export_id}")

    def list(self, workspace_id: int, *, per_page: int | None = None) -> Pager[Export]:
        """The workspace's exports, the newest first."""
        return self._page(Export, f"/v1/workspaces/{workspace_id}/exports", per_page=per_page)


class AsyncExports(AsyncResource):
    def create(
        self, workspace_id: int, *, include_events: bool = UNSET, idempotency_key: str | None = None
    ) -> Awaitable[Export]:
        """Ask for an archive of the whole workspace: answered at once (202) with the export
        `pending`; a worker builds it, then it is `completed` (or `failed`), and the events
        `export.completed` or `export.failed` say so."""
        return self._one(
            Export,
            "POST",
            f"/v1/workspaces/{workspace_id}/exports",
            json={"include_events": include_events},
            idempotency_key=idempotency_key,
        )

    def download(
        self, workspace_id: int, export_id: int, *, to: str | os.PathLike[str] | BinaryIO
    ) -> Awaitable[int]:
        """Write the completed export's archive into ``to`` (a path, or a file open for bytes)
        as it streams in; answers the bytes written. ``Conflict`` until it is completed."""
        return self._download(f"/v1/workspaces/{workspace_id}/exports/{export_id}/download", to)

    def get(self, workspace_id: int, export_id: int) -> Awaitable[Export]:
        """One export: its status and, once completed, its size, digest and expiry."""
        return self._one(Export, "GET", f"/v1/workspaces/{workspace_id}/exports/{export_id}")

    def list(self, workspace_id: int, *, per_page: int | None = None) -> AsyncPager[Export]:
        """The workspace's exports, the newest first."""
        return self._page(Export, f"/v1/workspaces/{workspace_id}/exports", per_page=per_page)


class Invitations(Resource):
    def accept(self, *, token: str, password: str, name: str = UNSET) -> Me:
        return self._one(
            Me,
            "POST",
            "/v1/invitations/accept",
            json={"token": token, "password": password, "name": name},
        )

    def create(
        self,
        workspace_id: int,
        *,
        email: str,
        role: str = UNSET,
        projects: Sequence[int] = UNSET,
        idempotency_key: str | None = None,
    ) -> Invitation:
        return self._one(
            Invitation,
            "POST",
            f"/v1/workspaces/{workspace_id}/invitations",
            json={"email": email, "role": role, "projects": projects},
            idempotency_key=idempotency_key,
        )

    def list(
        self, workspace_id: int, *, per_page: int | None = None, status: str | None = None
    ) -> Pager[Invitation]:
        return self._page(
            Invitation,
            f"/v1/workspaces/{workspace_id}/invitations",
            per_page=per_page,
            status=status,
        )

    def revoke(self, workspace_id: int, invitation_id: int, *, if_match: str | None = None) -> None:
        return self._none(
            "DELETE",
            f"/v1/workspaces/{workspace_id}/invitations/{invitation_id}",
            if_match=if_match,
        )


class AsyncInvitations(AsyncResource):
    def accept(self, *, token: str, password: str, name: str = UNSET) -> Awaitable[Me]:
        return self._one(
            Me,
            "POST",
            "/v1/invitations/accept",
            json={"token": token, "password": password, "name": name},
        )

    def create(
        self,
        workspace_id: int,
        *,
        email: str,
        role: str = UNSET,
        projects: Sequence[int] = UNSET,
        idempotency_key: str | None = None,
    ) -> Awaitable[Invitation]:
        return self._one(
            Invitation,
            "POST",
            f"/v1/workspaces/{workspace_id}/invitations",
            json={"email": email, "role": role, "projects": projects},
            idempotency_key=idempotency_key,
        )

    def list(
        self, workspace_id: int, *, per_page: int | None = None, status: str | None = None
    ) -> AsyncPager[Invitation]:
        return self._page(
            Invitation,
            f"/v1/workspaces/{workspace_id}/invitations",
            per_page=per_page,
            status=status,
        )

    def revoke(
        self, workspace_id: int, invitation_id: int, *, if_match: str | None = None
    ) -> Awaitable[None]:
        return self._none(
            "DELETE",
            f"/v1/workspaces/{workspace_id}/invitations/{invitation_id}",
            if_match=if_match,
        )


class Issues(Resource):
    def bulk_create(
        self,
        project_id: int,
        items: Sequence[Mapping[str, Any]],
        *,
        atomic: bool = False,
        idempotency_key: str | None = None,
    ) -> builtins.list[IssueBulkResult]:
        """Up to 100 issues at once, each item the keyword arguments of ``create``. One result
        per item, in order: ``.status`` 201 and ``.data``, or the item's own ``.error``; with
        ``atomic=True`` a failing item raises its error (``details["index"]``) and nothing
        is written."""
        return self._many(
            IssueBulkResult,
            "POST",
            f"/v1/projects/{project_id}/issues/bulk",
            json={"items": [dict(item) for item in items], "atomic": atomic},
            idempotency_key=idempotency_key,
        )

    def bulk_update(
        self, items: Sequence[Mapping[str, Any]], *, atomic: bool = False
    ) -> builtins.list[IssueBulkResult]:
        """Up to 100 issues changed at once, each item ``{"id": ..., **fields of update}``.
        One result per item, in order (``.status`` 200 and ``.data``, or ``.error``)."""
        return self._many(
            IssueBulkResult,
            "PATCH",
            "/v1/issues/bulk",
            json={"items": [dict(item) for item in items], "atomic": atomic},
        )

    def create(
        self,
        project_id: int,
        *,
        title: str,
        description: str = UNSET,
        type: str = UNSET,
        priority: str = UNSET,
        status: str = UNSET,
        assignee_id: int | None = UNSET,
        labels: Sequence[str] = UNSET,
        idempotency_key: str | None = None,
    ) -> Issue:
        return self._one(
            Issue,
            "POST",
            f"/v1/projects/{project_id}/issues",
            json={
                "title": title,
                "description": description,
                "type": type,
                "priority": priority,
                "status": status,
                "assignee_id": assignee_id,
                "labels": labels,
            },
            idempotency_key=idempotency_key,
        )

    def delete(self, issue_id: int, *, if_match: str | None = None) -> None:
        return self._none("DELETE", f"/v1/issues/{issue_id}", if_match=if_match)

    def get(self, issue_id: int) -> Issue:
        return self._one(Issue, "GET", f"/v1/issues/{issue_id}")

    def history(self, issue_id: int, *, per_page: int | None = None) -> Pager[IssueHistory]:
        return self._page(IssueHistory, f"/v1/issues/{issue_id}/history", per_page=per_page)

    def list(
        self,
        project_id: int | None = None,
        *,
        status: str | Sequence[str] | None = None,
        type: str | Sequence[str] | None = None,
        priority: str | Sequence[str] | None = None,
        assignee: int | str | None = None,
        labels: str | Sequence[str] | None = None,
        mentioned: int | str | None = None,
        q: str | None = None,
        highlight: bool | None = None,
        sort: str | None = None,
        created_after: str | None = None,
        created_before: str | None = None,
        updated_after: str | None = None,
        per_page: int | None = None,
        **filters: Any,
    ) -> Pager[Issue]:
        """Issues of one project, or (without ``project_id``) of every project you see.
        ``mentioned="me"`` (or a user id): those whose comments ``@mention`` that person.
        ``q``: full-text (``'login -flaky "two factor" auth*'``); with ``sort="relevance"``
        the best match first, with ``highlight=True`` each issue's ``highlights``."""
        path = f"/v1/projects/{project_id}/issues" if project_id is not None else "/v1/issues"
        return self._page(
            Issue,
            path,
            status=status,
            type=type,
            priority=priority,
            assignee=assignee,
            labels=labels,
            mentioned=mentioned,
            q=q,
            highlight=highlight,
            sort=sort,
            created_after=created_after,
            created_before=created_before,
            updated_after=updated_after,
            per_page=per_page,
            **filters,
        )

    def replace(
        self,
        issue_id: int,
        *,
        title: str,
        description: str = UNSET,
        type: str = UNSET,
        priority: str = UNSET,
        status: str = UNSET,
        assignee_id: int | None = UNSET,
        labels: Sequence[str] = UNSET,
        if_match: str | None = None,
    ) -> Issue:
        return self._one(
            Issue,
            "PUT",
            f"/v1/issues/{issue_id}",
            json={
                "title": title,
                "description": description,
                "type": type,
                "priority": priority,
                "status": status,
                "assignee_id": assignee_id,
                "labels": labels,
            },
            if_match=if_match,
        )

    def update(
        self,
        issue_id: int,
        *,
        title: str = UNSET,
        description: str = UNSET,
        type: str = UNSET,
        priority: str = UNSET,
        status: str = UNSET,
        assignee_id: int | None = UNSET,
        labels: Sequence[str] = UNSET,
        if_match: str | None = None,
    ) -> Issue:
        return self._one(
            Issue,
            "PATCH",
            f"/v1/issues/{issue_id}",
            json={
                "title": title,
                "description": description,
                "type": type,
                "priority": priority,
                "status": status,
                "assignee_id": assignee_id,
                "labels": labels,
            },
            if_match=if_match,
        )


class AsyncIssues(AsyncResource):
    def bulk_create(
        self,
        project_id: int,
        items: Sequence[Mapping[str, Any]],
        *,
        atomic: bool = False,
        idempotency_key: str | None = None,
    ) -> Awaitable[builtins.list[IssueBulkResult]]:
        """Up to 100 issues at once, each item the keyword arguments of ``create``. One result
        per item, in order: ``.status`` 201 and ``.data``, or the item's own ``.error``; with
        ``atomic=True`` a failing item raises its error (``details["index"]``) and nothing
        is written."""
        return self._many(
            IssueBulkResult,
            "POST",
            f"/v1/projects/{project_id}/issues/bulk",
            json={"items": [dict(item) for item in items], "atomic": atomic},
            idempotency_key=idempotency_key,
        )

    def bulk_update(
        self, items: Sequence[Mapping[str, Any]], *, atomic: bool = False
    ) -> Awaitable[builtins.list[IssueBulkResult]]:
        """Up to 100 issues changed at once, each item ``{"id": ..., **fields of update}``.
        One result per item, in order (``.status`` 200 and ``.data``, or ``.error``)."""
        return self._many(
            IssueBulkResult,
            "PATCH",
            "/v1/issues/bulk",
            json={"items": [dict(item) for item in items], "atomic": atomic},
        )

    def create(
        self,
        project_id: int,
        *,
        title: str,
        description: str = UNSET,
        type: str = UNSET,
        priority: str = UNSET,
        status: str = UNSET,
        assignee_id: int | None = UNSET,
        labels: Sequence[str] = UNSET,
        idempotency_key: str | None = None,
    ) -> Awaitable[Issue]:
        return self._one(
            Issue,
            "POST",
            f"/v1/projects/{project_id}/issues",
            json={
                "title": title,
                "description": description,
                "type": type,
                "priority": priority,
                "status": status,
                "assignee_id": assignee_id,
                "labels": labels,
            },
            idempotency_key=idempotency_key,
        )

    def delete(self, issue_id: int, *, if_match: str | None = None) -> Awaitable[None]:
        return self._none("DELETE", f"/v1/issues/{issue_id}", if_match=if_match)

    def get(self, issue_id: int) -> Awaitable[Issue]:
        return self._one(Issue, "GET", f"/v1/issues/{issue_id}")

    def history(self, issue_id: int, *, per_page: int | None = None) -> AsyncPager[IssueHistory]:
        return self._page(IssueHistory, f"/v1/issues/{issue_id}/history", per_page=per_page)

    def list(
        self,
        project_id: int | None = None,
        *,
        status: str | Sequence[str] | None = None,
        type: str | Sequence[str] | None = None,
        priority: str | Sequence[str] | None = None,
        assignee: int | str | None = None,
        labels: str | Sequence[str] | None = None,
        mentioned: int | str | None = None,
        q: str | None = None,
        highlight: bool | None = None,
        sort: str | None = None,
        created_after: str | None = None,
        created_before: str | None = None,
        updated_after: str | None = None,
        per_page: int | None = None,
        **filters: Any,
    ) -> AsyncPager[Issue]:
        """Issues of one project, or (without ``project_id``) of every project you see.
        ``mentioned="me"`` (or a user id): those whose comments ``@mention`` that person.
        ``q``: full-text (``'login -flaky "two factor" auth*'``); with ``sort="relevance"``
        the best match first, with ``highlight=True`` each issue's ``highlights``."""
        path = f"/v1/projects/{project_id}/issues" if project_id is not None else "/v1/issues"
        return self._page(
            Issue,
            path,
            status=status,
            type=type,
            priority=priority,
            assignee=assignee,
            labels=labels,
            mentioned=mentioned,
            q=q,
            highlight=highlight,
            sort=sort,
            created_after=created_after,
            created_before=created_before,
            updated_after=updated_after,
            per_page=per_page,
            **filters,
        )

    def replace(
        self,
        issue_id: int,
        *,
        title: str,
        description: str = UNSET,
        type: str = UNSET,
        priority: str = UNSET,
        status: str = UNSET,
        assignee_id: int | None = UNSET,
        labels: Sequence[str] = UNSET,
        if_match: str | None = None,
    ) -> Awaitable[Issue]:
        return self._one(
            Issue,
            "PUT",
            f"/v1/issues/{issue_id}",
            json={
                "title": title,
                "description": description,
                "type": type,
                "priority": priority,
                "status": status,
                "assignee_id": assignee_id,
                "labels": labels,
            },
            if_match=if_match,
        )

    def update(
        self,
        issue_id: int,
        *,
        title: str = UNSET,
        description: str = UNSET,
        type: str = UNSET,
        priority: str = UNSET,
        status: str = UNSET,
        assignee_id: int | None = UNSET,
        labels: Sequence[str] = UNSET,
        if_match: str | None = None,
    ) -> Awaitable[Issue]:
        return self._one(
            Issue,
            "PATCH",
            f"/v1/issues/{issue_id}",
            json={
                "title": title,
                "description": description,
                "type": type,
                "priority": priority,
                "status": status,
                "assignee_id": assignee_id,
                "labels": labels,
            },
            if_match=if_match,
        )


class Labels(Resource):
    def create(
        self,
        project_id: int,
        *,
        name: str,
        color: str = UNSET,
        description: str = UNSET,
        idempotency_key: str | None = None,
    ) -> Label:
        return self._one(
            Label,
            "POST",
            f"/v1/projects/{project_id}/labels",
            json={"name": name, "color": color, "description": description},
            idempotency_key=idempotency_key,
        )

    def delete(self, label_id: int, *, if_match: str | None = None) -> None:
        return self._none("DELETE", f"/v1/labels/{label_id}", if_match=if_match)

    def get(self, label_id: int) -> Label:
        return self._one(Label, "GET", f"/v1/labels/{label_id}")

    def list(self, project_id: int, *, per_page: int | None = None) -> Pager[Label]:
        return self._page(Label, f"/v1/projects/{project_id}/labels", per_page=per_page)

    def replace(
        self,
        label_id: int,
        *,
        name: str,
        color: str = UNSET,
        description: str = UNSET,
        if_match: str | None = None,
    ) -> Label:
        return self._one(
            Label,
            "PUT",
            f"/v1/labels/{label_id}",
            json={"name": name, "color": color, "description": description},
            if_match=if_match,
        )

    def update(
        self,
        label_id: int,
        *,
        name: str = UNSET,
        color: str = UNSET,
        description: str = UNSET,
        if_match: str | None = None,
    ) -> Label:
        return self._one(
            Label,
            "PATCH",
            f"/v1/labels/{label_id}",
            json={"name": name, "color": color, "description": description},
            if_match=if_match,
        )


class AsyncLabels(AsyncResource):
    def create(
        self,
        project_id: int,
        *,
        name: str,
        color: str = UNSET,
        description: str = UNSET,
        idempotency_key: str | None = None,
    ) -> Awaitable[Label]:
        return self._one(
            Label,
            "POST",
            f"/v1/projects/{project_id}/labels",
            json={"name": name, "color": color, "description": description},
            idempotency_key=idempotency_key,
        )

    def delete(self, label_id: int, *, if_match: str | None = None) -> Awaitable[None]:
        return self._none("DELETE", f"/v1/labels/{label_id}", if_match=if_match)

    def get(self, label_id: int) -> Awaitable[Label]:
        return self._one(Label, "GET", f"/v1/labels/{label_id}")

    def list(self, project_id: int, *, per_page: int | None = None) -> AsyncPager[Label]:
        return self._page(Label, f"/v1/projects/{project_id}/labels", per_page=per_page)

    def replace(
        self,
        label_id: int,
        *,
        name: str,
        color: str = UNSET,
        description: str = UNSET,
        if_match: str | None = None,
    ) -> Awaitable[Label]:
        return self._one(
            Label,
            "PUT",
            f"/v1/labels/{label_id}",
            json={"name": name, "color": color, "description": description},
            if_match=if_match,
        )

    def update(
        self,
        label_id: int,
        *,
        name: str = UNSET,
        color: str = UNSET,
        description: str = UNSET,
        if_match: str | None = None,
    ) -> Awaitable[Label]:
        return self._one(
            Label,
            "PATCH",
            f"/v1/labels/{label_id}",
            json={"name": name, "color": color, "description": description},
            if_match=if_match,
        )


class Members(Resource):
    def add(
        self, project_id: int, *, user_id: int, idempotency_key: str | None = None
    ) -> ProjectMember:
        return self._one(
            ProjectMember,
            "POST",
            f"/v1/projects/{project_id}/members",
            json={"user_id": user_id},
            idempotency_key=idempotency_key,
        )

    def list(
        self,
        *,
        project_id: int | None = None,
        workspace_id: int | None = None,
        role: str | None = None,
        status: str | None = None,
        q: str | None = None,
        per_page: int | None = None,
    ) -> Pager[ProjectMember] | Pager[User]:
        """A project's team (``project_id=``) or a workspace's members (``workspace_id=``)."""
        if (project_id is None) == (workspace_id is None):
            raise TypeError("members.list takes exactly one of project_id and workspace_id")
        if project_id is not None:
            return self._page(
                ProjectMember, f"/v1/projects/{project_id}/members", per_page=per_page
            )
        return self._page(
            User,
            f"/v1/workspaces/{workspace_id}/members",
            role=role,
            status=status,
            q=q,
            per_page=per_page,
        )

    def remove(
        self,
        *,
        user_id: int,
        project_id: int | None = None,
        workspace_id: int | None = None,
        if_match: str | None = None,
    ) -> None:
        """Removes a member of a project (``project_id=``) or a workspace (``workspace_id=``)."""
        if (project_id is None) == (workspace_id is None):
            raise TypeError("members.remove takes exactly one of project_id and workspace_id")
        parent = (
            f"projects/{project_id}" if project_id is not None else f"workspaces/{workspace_id}"
        )
        return self._none("DELETE", f"/v1/{parent}/members/{user_id}", if_match=if_match)

    def update(
        self, workspace_id: int, user_id: int, *, role: str = UNSET, if_match: str | None = None
    ) -> User:
        return self._one(
            User,
            "PATCH",
            f"/v1/workspaces/{workspace_id}/members/{user_id}",
            json={"role": role},
            if_match=if_match,
        )


class AsyncMembers(AsyncResource):
    def add(
        self, project_id: int, *, user_id: int, idempotency_key: str | None = None
    ) -> Awaitable[ProjectMember]:
        return self._one(
            ProjectMember,
            "POST",
            f"/v1/projects/{project_id}/members",
            json={"user_id": user_id},
            idempotency_key=idempotency_key,
        )

    def list(
        self,
        *,
        project_id: int | None = None,
        workspace_id: int | None = None,
        role: str | None = None,
        status: str | None = None,
        q: str | None = None,
        per_page: int | None = None,
    ) -> AsyncPager[ProjectMember] | AsyncPager[User]:
        """A project's team (``project_id=``) or a workspace's members (``workspace_id=``)."""
        if (project_id is None) == (workspace_id is None):
            raise TypeError("members.list takes exactly one of project_id and workspace_id")
        if project_id is not None:
            return self._page(
                ProjectMember, f"/v1/projects/{project_id}/members", per_page=per_page
            )
        return self._page(
            User,
            f"/v1/workspaces/{workspace_id}/members",
            role=role,
            status=status,
            q=q,
            per_page=per_page,
        )

    def remove(
        self,
        *,
        user_id: int,
        project_id: int | None = None,
        workspace_id: int | None = None,
        if_match: str | None = None,
    ) -> Awaitable[None]:
        """Removes a member of a project (``project_id=``) or a workspace (``workspace_id=``)."""
        if (project_id is None) == (workspace_id is None):
            raise TypeError("members.remove takes exactly one of project_id and workspace_id")
        parent = (
            f"projects/{project_id}" if project_id is not None else f"workspaces/{workspace_id}"
        )
        return self._none("DELETE", f"/v1/{parent}/members/{user_id}", if_match=if_match)

    def update(
        self, workspace_id: int, user_id: int, *, role: str = UNSET, if_match: str | None = None
    ) -> Awaitable[User]:
        return self._one(
            User,
            "PATCH",
            f"/v1/workspaces/{workspace_id}/members/{user_id}",
            json={"role": role},
            if_match=if_match,
        )


class MetricsResource(Resource):
    def get(self, project_id: int, *, period: str | None = None) -> Metrics:
        """Issue, commit and pull request figures over a period (docs/guide/analytics.md)."""
        return self._one(
            Metrics, "GET", f"/v1/projects/{project_id}/metrics", params={"period": period}
        )


class AsyncMetricsResource(AsyncResource):
    def get(self, project_id: int, *, period: str | None = None) -> Awaitable[Metrics]:
        """Issue, commit and pull request figures over a period (docs/guide/analytics.md)."""
        return self._one(
            Metrics, "GET", f"/v1/projects/{project_id}/metrics", params={"period": period}
        )


class OauthApps(Resource):
    def create(
        self,
        workspace_id: int,
        *,
        name: str,
        redirect_uris: Sequence[str],
        scopes: Sequence[str],
        client_type: str = UNSET,
        idempotency_key: str | None = None,
    ) -> OAuthAppCreated:
        return self._one(
            OAuthAppCreated,
            "POST",
            f"/v1/workspaces/{workspace_id}/oauth-apps",
            json={
                "name": name,
                "redirect_uris": redirect_uris,
                "scopes": scopes,
                "client_type": client_type,
            },
            idempotency_key=idempotency_key,
        )

    def delete(self, app_id: int, *, if_match: str | None = None) -> None:
        return self._none("DELETE", f"/v1/oauth-apps/{app_id}", if_match=if_match)

    def get(self, app_id: int) -> OAuthApp:
        return self._one(OAuthApp, "GET", f"/v1/oauth-apps/{app_id}")

    def list(self, workspace_id: int, *, per_page: int | None = None) -> Pager[OAuthApp]:
        return self._page(OAuthApp, f"/v1/workspaces/{workspace_id}/oauth-apps", per_page=per_page)

    def update(
        self,
        app_id: int,
        *,
        name: str = UNSET,
        redirect_uris: Sequence[str] = UNSET,
        scopes: Sequence[str] = UNSET,
        if_match: str | None = None,
    ) -> OAuthApp:
        return self._one(
            OAuthApp,
            "PATCH",
            f"/v1/oauth-apps/{app_id}",
            json={"name": name, "redirect_uris": redirect_uris, "scopes": scopes},
            if_match=if_match,
        )


class AsyncOauthApps(AsyncResource):
    def create(
        self,
        workspace_id: int,
        *,
        name: str,
        redirect_uris: Sequence[str],
        scopes: Sequence[str],
        client_type: str = UNSET,
        idempotency_key: str | None = None,
    ) -> Awaitable[OAuthAppCreated]:
        return self._one(
            OAuthAppCreated,
            "POST",
            f"/v1/workspaces/{workspace_id}/oauth-apps",
            json={
                "name": name,
                "redirect_uris": redirect_uris,
                "scopes": scopes,
                "client_type": client_type,
            },
            idempotency_key=idempotency_key,
        )

    def delete(self, app_id: int, *, if_match: str | None = None) -> Awaitable[None]:
        return self._none("DELETE", f"/v1/oauth-apps/{app_id}", if_match=if_match)

    def get(self, app_id: int) -> Awaitable[OAuthApp]:
        return self._one(OAuthApp, "GET", f"/v1/oauth-apps/{app_id}")

    def list(self, workspace_id: int, *, per_page: int | None = None) -> AsyncPager[OAuthApp]:
        return self._page(OAuthApp, f"/v1/workspaces/{workspace_id}/oauth-apps", per_page=per_page)

    def update(
        self,
        app_id: int,
        *,
        name: str = UNSET,
        redirect_uris: Sequence[str] = UNSET,
        scopes: Sequence[str] = UNSET,
        if_match: str | None = None,
    ) -> Awaitable[OAuthApp]:
        return self._one(
            OAuthApp,
            "PATCH",
            f"/v1/oauth-apps/{app_id}",
            json={"name": name, "redirect_uris": redirect_uris, "scopes": scopes},
            if_match=if_match,
        )


class Projects(Resource):
    def archive(self, project_id: int, *, if_match: str | None = None) -> Project:
        """PATCH the status to ``archived``."""
        return self.update(project_id, status="archived", if_match=if_match)

    def create(
        self,
        *,
        name: str,
        workspace_id: int = UNSET,
        description: str = UNSET,
        visibility: str = UNSET,
        idempotency_key: str | None = None,
    ) -> Project:
        return self._one(
            Project,
            "POST",
            "/v1/projects",
            json={
                "name": name,
                "workspace_id": workspace_id,
                "description": description,
                "visibility": visibility,
            },
            idempotency_key=idempotency_key,
        )

    def delete(self, project_id: int, *, if_match: str | None = None) -> None:
        return self._none("DELETE", f"/v1/projects/{project_id}", if_match=if_match)

    def get(self, project_id: int) -> Project:
        return self._one(Project, "GET", f"/v1/projects/{project_id}")

    def list(
        self,
        *,
        per_page: int | None = None,
        q: str | None = None,
        status: str | None = None,
        visibility: str | None = None,
        workspace_id: int | None = None,
    ) -> Pager[Project]:
        return self._page(
            Project,
            "/v1/projects",
            per_page=per_page,
            q=q,
            status=status,
            visibility=visibility,
            workspace_id=workspace_id,
        )

    def replace(
        self,
        project_id: int,
        *,
        name: str,
        description: str = UNSET,
        visibility: str = UNSET,
        status: str = UNSET,
        if_match: str | None = None,
    ) -> Project:
        return self._one(
            Project,
            "PUT",
            f"/v1/projects/{project_id}",
            json={
                "name": name,
                "description": description,
                "visibility": visibility,
                "status": status,
            },
            if_match=if_match,
        )

    def update(
        self,
        project_id: int,
        *,
        name: str = UNSET,
        description: str = UNSET,
        visibility: str = UNSET,
        status: str = UNSET,
        if_match: str | None = None,
    ) -> Project:
        return self._one(
            Project,
            "PATCH",
            f"/v1/projects/{project_id}",
            json={
                "name": name,
                "description": description,
                "visibility": visibility,
                "status": status,
            },
            if_match=if_match,
        )


class AsyncProjects(AsyncResource):
    def archive(self, project_id: int, *, if_match: str | None = None) -> Awaitable[Project]:
        """PATCH the status to ``archived``."""
        return self.update(project_id, status="archived", if_match=if_match)

    def create(
        self,
        *,
        name: str,
        workspace_id: int = UNSET,
        description: str = UNSET,
        visibility: str = UNSET,
        idempotency_key: str | None = None,
    ) -> Awaitable[Project]:
        return self._one(
            Project,
            "POST",
            "/v1/projects",
            json={
                "name": name,
                "workspace_id": workspace_id,
                "description": description,
                "visibility": visibility,
            },
            idempotency_key=idempotency_key,
        )

    def delete(self, project_id: int, *, if_match: str | None = None) -> Awaitable[None]:
        return self._none("DELETE", f"/v1/projects/{project_id}", if_match=if_match)

    def get(self, project_id: int) -> Awaitable[Project]:
        return self._one(Project, "GET", f"/v1/projects/{project_id}")

    def list(
        self,
        *,
        per_page: int | None = None,
        q: str | None = None,
        status: str | None = None,
        visibility: str | None = None,
        workspace_id: int | None = None,
    ) -> AsyncPager[Project]:
        return self._page(
            Project,
            "/v1/projects",
            per_page=per_page,
            q=q,
            status=status,
            visibility=visibility,
            workspace_id=workspace_id,
        )

    def replace(
        self,
        project_id: int,
        *,
        name: str,
        description: str = UNSET,
        visibility: str = UNSET,
        status: str = UNSET,
        if_match: str | None = None,
    ) -> Awaitable[Project]:
        return self._one(
            Project,
            "PUT",
            f"/v1/projects/{project_id}",
            json={
                "name": name,
                "description": description,
                "visibility": visibility,
                "status": status,
            },
            if_match=if_match,
        )

    def update(
        self,
        project_id: int,
        *,
        name: str = UNSET,
        description: str = UNSET,
        visibility: str = UNSET,
        status: str = UNSET,
        if_match: str | None = None,
    ) -> Awaitable[Project]:
        return self._one(
            Project,
            "PATCH",
            f"/v1/projects/{project_id}",
            json={
                "name": name,
                "description": description,
                "visibility": visibility,
                "status": status,
            },
            if_match=if_match,
        )


class Pulls(Resource):
    def create(
        self,
        repository_id: int,
        *,
        title: str,
        head: str,
        base: str,
        description: str = UNSET,
        idempotency_key: str | None = None,
    ) -> PullRequest:
        """Open a pull request of `head` into `base`: existing, different branches, with no other
        open pull request for the same pair."""
        return self._one(
            PullRequest,
            "POST",
            f"/v1/repositories/{repository_id}/pulls",
            json={"title": title, "head": head, "base": base, "description": description},
            idempotency_key=idempotency_key,
        )

    def get(self, pull_id: int) -> PullRequest:
        """``/v1/pulls/:id``: one pull request."""
        return self._one(PullRequest, "GET", f"/v1/pulls/{pull_id}")

    def list(
        self,
        repository_id: int,
        *,
        per_page: int | None = None,
        state: str | Sequence[str] | None = None,
    ) -> Pager[PullRequest]:
        """``/v1/repositories/:repository_id/pulls``."""
        return self._page(
            PullRequest, f"/v1/repositories/{repository_id}/pulls", per_page=per_page, state=state
        )

    def merge(
        self, pull_id: int, *, method: str = UNSET, idempotency_key: str | None = None
    ) -> PullRequest:
        """Merge for real: `merge` (a merge commit), `squash` (one commit) or `fast_forward`,
        pushed to the repository's origin. A conflict answers 409 and changes nothing."""
        return self._one(
            PullRequest,
            "POST",
            f"/v1/pulls/{pull_id}/merge",
            json={"method": method},
            idempotency_key=idempotency_key,
        )

    def review(
        self, pull_id: int, *, state: str, body: str = UNSET, idempotency_key: str | None = None
    ) -> Review:
        """Review: `approved`, `changes_requested` or `commented`, with a body."""
        return self._one(
            Review,
            "POST",
            f"/v1/pulls/{pull_id}/reviews",
            json={"state": state, "body": body},
            idempotency_key=idempotency_key,
        )

    def reviews(self, pull_id: int, *, per_page: int | None = None) -> Pager[Review]:
        """``/v1/pulls/:pull_id/reviews``."""
        return self._page(Review, f"/v1/pulls/{pull_id}/reviews", per_page=per_page)

    def update(
        self,
        pull_id: int,
        *,
        title: str = UNSET,
        description: str = UNSET,
        state: str = UNSET,
        if_match: str | None = None,
    ) -> PullRequest:
        """Change the title or description; `state` closed closes, open reopens."""
        return self._one(
            PullRequest,
            "PATCH",
            f"/v1/pulls/{pull_id}",
            json={"title": title, "description": description, "state": state},
            if_match=if_match,
        )


class AsyncPulls(AsyncResource):
    def create(
        self,
        repository_id: int,
        *,
        title: str,
        head: str,
        base: str,
        description: str = UNSET,
        idempotency_key: str | None = None,
    ) -> Awaitable[PullRequest]:
        """Open a pull request of `head` into `base`: existing, different branches, with no other
        open pull request for the same pair."""
        return self._one(
            PullRequest,
            "POST",
            f"/v1/repositories/{repository_id}/pulls",
            json={"title": title, "head": head, "base": base, "description": description},
            idempotency_key=idempotency_key,
        )

    def get(self, pull_id: int) -> Awaitable[PullRequest]:
        """``/v1/pulls/:id``: one pull request."""
        return self._one(PullRequest, "GET", f"/v1/pulls/{pull_id}")

    def list(
        self,
        repository_id: int,
        *,
        per_page: int | None = None,
        state: str | Sequence[str] | None = None,
    ) -> AsyncPager[PullRequest]:
        """``/v1/repositories/:repository_id/pulls``."""
        return self._page(
            PullRequest, f"/v1/repositories/{repository_id}/pulls", per_page=per_page, state=state
        )

    def merge(
        self, pull_id: int, *, method: str = UNSET, idempotency_key: str | None = None
    ) -> Awaitable[PullRequest]:
        """Merge for real: `merge` (a merge commit), `squash` (one commit) or `fast_forward`,
        pushed to the repository's origin. A conflict answers 409 and changes nothing."""
        return self._one(
            PullRequest,
            "POST",
            f"/v1/pulls/{pull_id}/merge",
            json={"method": method},
            idempotency_key=idempotency_key,
        )

    def review(
        self, pull_id: int, *, state: str, body: str = UNSET, idempotency_key: str | None = None
    ) -> Awaitable[Review]:
        """Review: `approved`, `changes_requested` or `commented`, with a body."""
        return self._one(
            Review,
            "POST",
            f"/v1/pulls/{pull_id}/reviews",
            json={"state": state, "body": body},
            idempotency_key=idempotency_key,
        )

    def reviews(self, pull_id: int, *, per_page: int | None = None) -> AsyncPager[Review]:
        """``/v1/pulls/:pull_id/reviews``."""
        return self._page(Review, f"/v1/pulls/{pull_id}/reviews", per_page=per_page)

    def update(
        self,
        pull_id: int,
        *,
        title: str = UNSET,
        description: str = UNSET,
        state: str = UNSET,
        if_match: str | None = None,
    ) -> Awaitable[PullRequest]:
        """Change the title or description; `state` closed closes, open reopens."""
        return self._one(
            PullRequest,
            "PATCH",
            f"/v1/pulls/{pull_id}",
            json={"title": title, "description": description, "state": state},
            if_match=if_match,
        )


class RateLimitResource(Resource):
    def get(self) -> RateLimit:
        """The caller's rate limit: tier, limit and the current window. Reading it is free: it does
        not count against the limit. The same figures come on every response as
        `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Used` and
        `X-RateLimit-Reset`."""
        return self._one(RateLimit, "GET", "/v1/rate_limit")


class AsyncRateLimitResource(AsyncResource):
    def get(self) -> Awaitable[RateLimit]:
        """The caller's rate limit: tier, limit and the current window. Reading it is free: it does
        not count against the limit. The same figures come on every response as
        `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Used` and
        `X-RateLimit-Reset`."""
        return self._one(RateLimit, "GET", "/v1/rate_limit")


class Reports(Resource):
    def issues(
        self, project_id: int, *, format: str = "csv", **filters: Any
    ) -> str | builtins.list[Issue]:
        """Every issue matching the issue list's filters: CSV text, or (``format="json"``)
        a list of records."""
        path = f"/v1/projects/{project_id}/reports/issues"
        params = {"format": format, **filters}
        if format == "csv":
            return self._one(str, "GET", path, params=params)
        return self._many(Issue, "GET", path, params=params)


class AsyncReports(AsyncResource):
    def issues(
        self, project_id: int, *, format: str = "csv", **filters: Any
    ) -> Awaitable[str] | Awaitable[builtins.list[Issue]]:
        """Every issue matching the issue list's filters: CSV text, or (``format="json"``)
        a list of records."""
        path = f"/v1/projects/{project_id}/reports/issues"
        params = {"format": format, **filters}
        if format == "csv":
            return self._one(str, "GET", path, params=params)
        return self._many(Issue, "GET", path, params=params)


class Repositories(Resource):
    def branches(self, repository_id: int, *, per_page: int | None = None) -> Pager[Branch]:
        """The branches as of the last sync, the default one first."""
        return self._page(Branch, f"/v1/repositories/{repository_id}/branches", per_page=per_page)

    def commits(
        self, repository_id: int, *, branch: str | None = None, per_page: int | None = None
    ) -> Pager[Commit]:
        return self._page(
            Commit, f"/v1/repositories/{repository_id}/commits", branch=branch, per_page=per_page
        )

    def create(
        self, project_id: int, *, name: str, clone_url: str, idempotency_key: str | None = None
    ) -> RepositoryCreated:
        """Register a git repository by its clone URL; its first sync runs in the background. The
        answer carries the push notification secret, shown this once."""
        return self._one(
            RepositoryCreated,
            "POST",
            f"/v1/projects/{project_id}/repositories",
            json={"name": name, "clone_url": clone_url},
            idempotency_key=idempotency_key,
        )

    def delete(self, repository_id: int, *, if_match: str | None = None) -> None:
        """Unregister the repository (its mirror, commits and pull requests go with it)."""
        return self._none("DELETE", f"/v1/repositories/{repository_id}", if_match=if_match)

    def get(self, repository_id: int) -> Repository:
        return self._one(Repository, "GET", f"/v1/repositories/{repository_id}")

    def list(self, project_id: int, *, per_page: int | None = None) -> Pager[Repository]:
        """``/v1/projects/:project_id/repositories``."""
        return self._page(Repository, f"/v1/projects/{project_id}/repositories", per_page=per_page)

    def push(
        self, repository_id: int, *, secret: str, payload: dict[str, Any] | None = None
    ) -> PushAccepted:
        """What a git server sends on a push: the body signed with the repository's secret."""
        body = json.dumps(payload or {}).encode()
        signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return self._one(
            PushAccepted,
            "POST",
            f"/v1/repositories/{repository_id}/push",
            content=body,
            headers={"X-Hub-Signature-256": signature, "Content-Type": "application/json"},
        )

    def sync(self, repository_id: int, *, idempotency_key: str | None = None) -> Repository:
        """Ask for a sync now; `sync_status` and `last_synced_at` tell when it is done."""
        return self._one(
            Repository,
            "POST",
            f"/v1/repositories/{repository_id}/sync",
            idempotency_key=idempotency_key,
        )


class AsyncRepositories(AsyncResource):
    def branches(self, repository_id: int, *, per_page: int | None = None) -> AsyncPager[Branch]:
        """The branches as of the last sync, the default one first."""
        return self._page(Branch, f"/v1/repositories/{repository_id}/branches", per_page=per_page)

    def commits(
        self, repository_id: int, *, branch: str | None = None, per_page: int | None = None
    ) -> AsyncPager[Commit]:
        return self._page(
            Commit, f"/v1/repositories/{repository_id}/commits", branch=branch, per_page=per_page
        )

    def create(
        self, project_id: int, *, name: str, clone_url: str, idempotency_key: str | None = None
    ) -> Awaitable[RepositoryCreated]:
        """Register a git repository by its clone URL; its first sync runs in the background. The
        answer carries the push notification secret, shown this once."""
        return self._one(
            RepositoryCreated,
            "POST",
            f"/v1/projects/{project_id}/repositories",
            json={"name": name, "clone_url": clone_url},
            idempotency_key=idempotency_key,
        )

    def delete(self, repository_id: int, *, if_match: str | None = None) -> Awaitable[None]:
        """Unregister the repository (its mirror, commits and pull requests go with it)."""
        return self._none("DELETE", f"/v1/repositories/{repository_id}", if_match=if_match)

    def get(self, repository_id: int) -> Awaitable[Repository]:
        return self._one(Repository, "GET", f"/v1/repositories/{repository_id}")

    def list(self, project_id: int, *, per_page: int | None = None) -> AsyncPager[Repository]:
        """``/v1/projects/:project_id/repositories``."""
        return self._page(Repository, f"/v1/projects/{project_id}/repositories", per_page=per_page)

    def push(
        self, repository_id: int, *, secret: str, payload: dict[str, Any] | None = None
    ) -> Awaitable[PushAccepted]:
        """What a git server sends on a push: the body signed with the repository's secret."""
        body = json.dumps(payload or {}).encode()
        signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return self._one(
            PushAccepted,
            "POST",
            f"/v1/repositories/{repository_id}/push",
            content=body,
            headers={"X-Hub-Signature-256": signature, "Content-Type": "application/json"},
        )

    def sync(
        self, repository_id: int, *, idempotency_key: str | None = None
    ) -> Awaitable[Repository]:
        """Ask for a sync now; `sync_status` and `last_synced_at` tell when it is done."""
        return self._one(
            Repository,
            "POST",
            f"/v1/repositories/{repository_id}/sync",
            idempotency_key=idempotency_key,
        )


class Search(Resource):
    def query(
        self,
        q: str,
        *,
        per_page: int | None = None,
        project_id: int | None = None,
        sort: str | Sequence[str] | None = None,
        type: str | Sequence[str] | None = None,
        workspace_id: int | None = None,
    ) -> Pager[SearchHit]:
        """Ranked, best match first: every term must match the title or the text. A key sees the
        kinds its scopes read (`issues:read`: issues and their comments; `projects:read`: pull
        requests and theirs)."""
        return self._page(
            SearchHit,
            "/v1/search",
            q=q,
            per_page=per_page,
            project_id=project_id,
            sort=sort,
            type=type,
            workspace_id=workspace_id,
        )


class AsyncSearch(AsyncResource):
    def query(
        self,
        q: str,
        *,
        per_page: int | None = None,
        project_id: int | None = None,
        sort: str | Sequence[str] | None = None,
        type: str | Sequence[str] | None = None,
        workspace_id: int | None = None,
    ) -> AsyncPager[SearchHit]:
        """Ranked, best match first: every term must match the title or the text. A key sees the
        kinds its scopes read (`issues:read`: issues and their comments; `projects:read`: pull
        requests and theirs)."""
        return self._page(
            SearchHit,
            "/v1/search",
            q=q,
            per_page=per_page,
            project_id=project_id,
            sort=sort,
            type=type,
            workspace_id=workspace_id,
        )


class ServiceAccounts(Resource):
    def create(
        self,
        workspace_id: int,
        *,
        name: str,
        role: str = UNSET,
        projects: Sequence[int] = UNSET,
        tier: str = UNSET,
        idempotency_key: str | None = None,
    ) -> ServiceAccount:
        return self._one(
            ServiceAccount,
            "POST",
            f"/v1/workspaces/{workspace_id}/service-accounts",
            json={"name": name, "role": role, "projects": projects, "tier": tier},
            idempotency_key=idempotency_key,
        )

    def create_key(
        self,
        account_id: int,
        *,
        name: str,
        scopes: Sequence[str],
        expires_in: str | None = UNSET,
        projects: Sequence[int] | None = UNSET,
        idempotency_key: str | None = None,
    ) -> ApiKeyCreated:
        return self._one(
            ApiKeyCreated,
            "POST",
            f"/v1/service-accounts/{account_id}/keys",
            json={"name": name, "scopes": scopes, "expiresIn": expires_in, "projects": projects},
            idempotency_key=idempotency_key,
        )

    def delete(self, account_id: int, *, if_match: str | None = None) -> None:
        return self._none("DELETE", f"/v1/service-accounts/{account_id}", if_match=if_match)

    def get(self, account_id: int) -> ServiceAccount:
        return self._one(ServiceAccount, "GET", f"/v1/service-accounts/{account_id}")

    def keys(self, account_id: int, *, per_page: int | None = None) -> Pager[ApiKey]:
        return self._page(ApiKey, f"/v1/service-accounts/{account_id}/keys", per_page=per_page)

    def list(self, workspace_id: int, *, per_page: int | None = None) -> Pager[ServiceAccount]:
        return self._page(
            ServiceAccount, f"/v1/workspaces/{workspace_id}/service-accounts", per_page=per_page
        )

    def revoke_key(self, account_id: int, key_id: int, *, if_match: str | None = None) -> None:
        return self._none(
            "DELETE", f"/v1/service-accounts/{account_id}/keys/{key_id}", if_match=if_match
        )

    def update(
        self,
        account_id: int,
        *,
        name: str = UNSET,
        role: str = UNSET,
        projects: Sequence[int] = UNSET,
        tier: str = UNSET,
        if_match: str | None = None,
    ) -> ServiceAccount:
        return self._one(
            ServiceAccount,
            "PATCH",
            f"/v1/service-accounts/{account_id}",
            json={"name": name, "role": role, "projects": projects, "tier": tier},
            if_match=if_match,
        )


class AsyncServiceAccounts(AsyncResource):
    def create(
        self,
        workspace_id: int,
        *,
        name: str,
        role: str = UNSET,
        projects: Sequence[int] = UNSET,
        tier: str = UNSET,
        idempotency_key: str | None = None,
    ) -> Awaitable[ServiceAccount]:
        return self._one(
            ServiceAccount,
            "POST",
            f"/v1/workspaces/{workspace_id}/service-accounts",
            json={"name": name, "role": role, "projects": projects, "tier": tier},
            idempotency_key=idempotency_key,
        )

    def create_key(
        self,
        account_id: int,
        *,
        name: str,
        scopes: Sequence[str],
        expires_in: str | None = UNSET,
        projects: Sequence[int] | None = UNSET,
        idempotency_key: str | None = None,
    ) -> Awaitable[ApiKeyCreated]:
        return self._one(
            ApiKeyCreated,
            "POST",
            f"/v1/service-accounts/{account_id}/keys",
            json={"name": name, "scopes": scopes, "expiresIn": expires_in, "projects": projects},
            idempotency_key=idempotency_key,
        )

    def delete(self, account_id: int, *, if_match: str | None = None) -> Awaitable[None]:
        return self._none("DELETE", f"/v1/service-accounts/{account_id}", if_match=if_match)

    def get(self, account_id: int) -> Awaitable[ServiceAccount]:
        return self._one(ServiceAccount, "GET", f"/v1/service-accounts/{account_id}")

    def keys(self, account_id: int, *, per_page: int | None = None) -> AsyncPager[ApiKey]:
        return self._page(ApiKey, f"/v1/service-accounts/{account_id}/keys", per_page=per_page)

    def list(self, workspace_id: int, *, per_page: int | None = None) -> AsyncPager[ServiceAccount]:
        return self._page(
            ServiceAccount, f"/v1/workspaces/{workspace_id}/service-accounts", per_page=per_page
        )

    def revoke_key(
        self, account_id: int, key_id: int, *, if_match: str | None = None
    ) -> Awaitable[None]:
        return self._none(
            "DELETE", f"/v1/service-accounts/{account_id}/keys/{key_id}", if_match=if_match
        )

    def update(
        self,
        account_id: int,
        *,
        name: str = UNSET,
        role: str = UNSET,
        projects: Sequence[int] = UNSET,
        tier: str = UNSET,
        if_match: str | None = None,
    ) -> Awaitable[ServiceAccount]:
        return self._one(
            ServiceAccount,
            "PATCH",
            f"/v1/service-accounts/{account_id}",
            json={"name": name, "role": role, "projects": projects, "tier": tier},
            if_match=if_match,
        )


class Users(Resource):
    def get(self, user_id: int, *, workspace_id: int | None = None) -> User:
        """A member of the workspace, by user id."""
        return self._one(User, "GET", f"/v1/users/{user_id}", params={"workspace_id": workspace_id})

    def list(
        self,
        *,
        per_page: int | None = None,
        q: str | None = None,
        role: str | None = None,
        status: str | None = None,
        workspace_id: int | None = None,
    ) -> Pager[User]:
        return self._page(
            User,
            "/v1/users",
            per_page=per_page,
            q=q,
            role=role,
            status=status,
            workspace_id=workspace_id,
        )

    def me(self) -> Me:
        return self._one(Me, "GET", "/v1/users/me")

    def update_me(
        self, *, name: str = UNSET, handle: str = UNSET, if_match: str | None = None
    ) -> Me:
        """Change your own name or handle (the `@handle` others mention you by)."""
        return self._one(
            Me, "PATCH", "/v1/users/me", json={"name": name, "handle": handle}, if_match=if_match
        )


class AsyncUsers(AsyncResource):
    def get(self, user_id: int, *, workspace_id: int | None = None) -> Awaitable[User]:
        """A member of the workspace, by user id."""
        return self._one(User, "GET", f"/v1/users/{user_id}", params={"workspace_id": workspace_id})

    def list(
        self,
        *,
        per_page: int | None = None,
        q: str | None = None,
        role: str | None = None,
        status: str | None = None,
        workspace_id: int | None = None,
    ) -> AsyncPager[User]:
        return self._page(
            User,
            "/v1/users",
            per_page=per_page,
            q=q,
            role=role,
            status=status,
            workspace_id=workspace_id,
        )

    def me(self) -> Awaitable[Me]:
        return self._one(Me, "GET", "/v1/users/me")

    def update_me(
        self, *, name: str = UNSET, handle: str = UNSET, if_match: str | None = None
    ) -> Awaitable[Me]:
        """Change your own name or handle (the `@handle` others mention you by)."""
        return self._one(
            Me, "PATCH", "/v1/users/me", json={"name": name, "handle": handle}, if_match=if_match
        )


class Webhooks(Resource):
    def create(
        self,
        project_id: int,
        *,
        url: str,
        events: Sequence[str],
        secret: str = UNSET,
        description: str = UNSET,
        idempotency_key: str | None = None,
    ) -> Webhook:
        return self._one(
            Webhook,
            "POST",
            f"/v1/projects/{project_id}/webhooks",
            json={"url": url, "events": events, "secret": secret, "description": description},
            idempotency_key=idempotency_key,
        )

    def create_for_workspace(
        self,
        workspace_id: int,
        *,
        url: str,
        events: Sequence[str],
        secret: str = UNSET,
        description: str = UNSET,
        idempotency_key: str | None = None,
    ) -> Webhook:
        return self._one(
            Webhook,
            "POST",
            f"/v1/workspaces/{workspace_id}/webhooks",
            json={"url": url, "events": events, "secret": secret, "description": description},
            idempotency_key=idempotency_key,
        )

    def delete(self, webhook_id: int, *, if_match: str | None = None) -> None:
        return self._none("DELETE", f"/v1/webhooks/{webhook_id}", if_match=if_match)

    def get(self, webhook_id: int) -> Webhook:
        return self._one(Webhook, "GET", f"/v1/webhooks/{webhook_id}")

    def list(self, project_id: int, *, per_page: int | None = None) -> Pager[Webhook]:
        return self._page(Webhook, f"/v1/projects/{project_id}/webhooks", per_page=per_page)

    def list_for_workspace(
        self, workspace_id: int, *, per_page: int | None = None
    ) -> Pager[Webhook]:
        return self._page(Webhook, f"/v1/workspaces/{workspace_id}/webhooks", per_page=per_page)

    def ping(self, webhook_id: int, *, idempotency_key: str | None = None) -> Delivery:
        return self._one(
            Delivery, "POST", f"/v1/webhooks/{webhook_id}/ping", idempotency_key=idempotency_key
        )

    def update(
        self,
        webhook_id: int,
        *,
        url: str = UNSET,
        events: Sequence[str] = UNSET,
        secret: str = UNSET,
        description: str = UNSET,
        active: bool = UNSET,
        if_match: str | None = None,
    ) -> Webhook:
        return self._one(
            Webhook,
            "PATCH",
            f"/v1/webhooks/{webhook_id}",
            json={
                "url": url,
                "events": events,
                "secret": secret,
                "description": description,
                "active": active,
            },
            if_match=if_match,
        )


class AsyncWebhooks(AsyncResource):
    def create(
        self,
        project_id: int,
        *,
        url: str,
        events: Sequence[str],
        secret: str = UNSET,
        description: str = UNSET,
        idempotency_key: str | None = None,
    ) -> Awaitable[Webhook]:
        return self._one(
            Webhook,
            "POST",
            f"/v1/projects/{project_id}/webhooks",
            json={"url": url, "events": events, "secret": secret, "description": description},
            idempotency_key=idempotency_key,
        )

    def create_for_workspace(
        self,
        workspace_id: int,
        *,
        url: str,
        events: Sequence[str],
        secret: str = UNSET,
        description: str = UNSET,
        idempotency_key: str | None = None,
    ) -> Awaitable[Webhook]:
        return self._one(
            Webhook,
            "POST",
            f"/v1/workspaces/{workspace_id}/webhooks",
            json={"url": url, "events": events, "secret": secret, "description": description},
            idempotency_key=idempotency_key,
        )

    def delete(self, webhook_id: int, *, if_match: str | None = None) -> Awaitable[None]:
        return self._none("DELETE", f"/v1/webhooks/{webhook_id}", if_match=if_match)

    def get(self, webhook_id: int) -> Awaitable[Webhook]:
        return self._one(Webhook, "GET", f"/v1/webhooks/{webhook_id}")

    def list(self, project_id: int, *, per_page: int | None = None) -> AsyncPager[Webhook]:
        return self._page(Webhook, f"/v1/projects/{project_id}/webhooks", per_page=per_page)

    def list_for_workspace(
        self, workspace_id: int, *, per_page: int | None = None
    ) -> AsyncPager[Webhook]:
        return self._page(Webhook, f"/v1/workspaces/{workspace_id}/webhooks", per_page=per_page)

    def ping(self, webhook_id: int, *, idempotency_key: str | None = None) -> Awaitable[Delivery]:
        return self._one(
            Delivery, "POST", f"/v1/webhooks/{webhook_id}/ping", idempotency_key=idempotency_key
        )

    def update(
        self,
        webhook_id: int,
        *,
        url: str = UNSET,
        events: Sequence[str] = UNSET,
        secret: str = UNSET,
        description: str = UNSET,
        active: bool = UNSET,
        if_match: str | None = None,
    ) -> Awaitable[Webhook]:
        return self._one(
            Webhook,
            "PATCH",
            f"/v1/webhooks/{webhook_id}",
            json={
                "url": url,
                "events": events,
                "secret": secret,
                "description": description,
                "active": active,
            },
            if_match=if_match,
        )


class Workspaces(Resource):
    def create(self, *, name: str, idempotency_key: str | None = None) -> Workspace:
        return self._one(
            Workspace,
            "POST",
            "/v1/workspaces",
            json={"name": name},
            idempotency_key=idempotency_key,
        )

    def get(self, workspace_id: int) -> Workspace:
        return self._one(Workspace, "GET", f"/v1/workspaces/{workspace_id}")

    def list(self, *, per_page: int | None = None) -> Pager[Workspace]:
        return self._page(Workspace, "/v1/workspaces", per_page=per_page)


class AsyncWorkspaces(AsyncResource):
    def create(self, *, name: str, idempotency_key: str | None = None) -> Awaitable[Workspace]:
        return self._one(
            Workspace,
            "POST",
            "/v1/workspaces",
            json={"name": name},
            idempotency_key=idempotency_key,
        )

    def get(self, workspace_id: int) -> Awaitable[Workspace]:
        return self._one(Workspace, "GET", f"/v1/workspaces/{workspace_id}")

    def list(self, *, per_page: int | None = None) -> AsyncPager[Workspace]:
        return self._page(Workspace, "/v1/workspaces", per_page=per_page)


def _thread(issue_id: int | None, pull_id: int | None, method: str) -> str:
    # A comment belongs to exactly one parent: guessing one of two ids would post to the
    # wrong thread, so naming neither or both is the caller's mistake.
    if (issue_id is None) == (pull_id is None):
        raise TypeError(f"comments.{method} takes exactly one of issue_id and pull_id")
    if issue_id is not None:
        return f"/v1/issues/{issue_id}/comments"
    return f"/v1/pulls/{pull_id}/comments"
