"""Every operation of the API, grouped by resource: ``client.issues.create(...)``.

A method builds its call and hands it to the client: ``Collab`` answers with the result,
``AsyncCollab`` with an awaitable of it (lists: a ``Pager`` or ``AsyncPager``). Write
methods take the API's field names as keyword arguments; one left out is not sent (PATCH
changes only what is given). ``if_match=`` (a record's ``.etag``) makes an update or delete
answer ``PreconditionFailed`` instead of overwriting a change made since it was read.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._core import UNSET, ListOf
from .errors import ResyncRequired
from .models import (
    ApiKey,
    ApiKeyCreated,
    Branch,
    Comment,
    CommentRevision,
    Commit,
    Dashboard,
    Delivery,
    DeliveryDetail,
    Event,
    EventKind,
    Invitation,
    Issue,
    IssueBulkResult,
    IssueHistory,
    Label,
    Me,
    Metrics,
    Project,
    ProjectMember,
    PullRequest,
    PushAccepted,
    RateLimit,
    Repository,
    RepositoryCreated,
    Review,
    SearchHit,
    TokenPair,
    User,
    Webhook,
    Workspace,
    WorkspaceDashboard,
)

if TYPE_CHECKING:
    from ._core import BaseClient
    from .pagination import Pager

Id = int


class Resource:
    def __init__(self, client: BaseClient):
        self._client = client

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._client.request(method, path, **kwargs)  # type: ignore[attr-defined]

    def _list(self, path: str, model: Any, **params: Any) -> Any:
        return self._client.paginate(path, params, model)  # type: ignore[attr-defined]


class Projects(Resource):
    def list(
        self,
        *,
        workspace_id: Id | None = None,
        status: str | None = None,
        visibility: str | None = None,
        q: str | None = None,
        per_page: int | None = None,
    ) -> Pager[Project]:
        return self._list(
            "/v1/projects",
            Project,
            workspace_id=workspace_id,
            status=status,
            visibility=visibility,
            q=q,
            per_page=per_page,
        )

    def create(
        self,
        *,
        name: str,
        description: str = UNSET,
        visibility: str = UNSET,
        workspace_id: Id = UNSET,
        idempotency_key: str | None = None,
    ) -> Project:
        body = {
            "name": name,
            "description": description,
            "visibility": visibility,
            "workspace_id": workspace_id,
        }
        return self._request(
            "POST", "/v1/projects", json=body, model=Project, idempotency_key=idempotency_key
        )

    def get(self, project_id: Id) -> Project:
        return self._request("GET", f"/v1/projects/{project_id}", model=Project)

    def update(
        self,
        project_id: Id,
        *,
        name: str = UNSET,
        description: str = UNSET,
        visibility: str = UNSET,
        status: str = UNSET,
        if_match: str | None = None,
    ) -> Project:
        """PATCH: changes only the fields given."""
        body = {
            "name": name,
            "description": description,
            "visibility": visibility,
            "status": status,
        }
        return self._request(
            "PATCH", f"/v1/projects/{project_id}", json=body, model=Project, if_match=if_match
        )

    def replace(
        self,
        project_id: Id,
        *,
        name: str,
        description: str = UNSET,
        visibility: str = UNSET,
        status: str = UNSET,
        if_match: str | None = None,
    ) -> Project:
        """PUT: fields left out go back to their defaults."""
        body = {
            "name": name,
            "description": description,
            "visibility": visibility,
            "status": status,
        }
        return self._request(
            "PUT", f"/v1/projects/{project_id}", json=body, model=Project, if_match=if_match
        )

    def delete(self, project_id: Id, *, if_match: str | None = None) -> None:
        return self._request("DELETE", f"/v1/projects/{project_id}", if_match=if_match)

    def archive(self, project_id: Id, *, if_match: str | None = None) -> Project:
        return self.update(project_id, status="archived", if_match=if_match)


class Members(Resource):
    """A project's team (``project_id=``) or a workspace's members (``workspace_id=``)."""

    def list(
        self,
        *,
        project_id: Id | None = None,
        workspace_id: Id | None = None,
        role: str | None = None,
        status: str | None = None,
        q: str | None = None,
        per_page: int | None = None,
    ) -> Pager[ProjectMember] | Pager[User]:
        if (project_id is None) == (workspace_id is None):
            raise TypeError("members.list takes exactly one of project_id and workspace_id")
        if project_id is not None:
            return self._list(
                f"/v1/projects/{project_id}/members", ProjectMember, per_page=per_page
            )
        return self._list(
            f"/v1/workspaces/{workspace_id}/members",
            User,
            role=role,
            status=status,
            q=q,
            per_page=per_page,
        )

    def add(self, project_id: Id, *, user_id: Id) -> ProjectMember:
        return self._request(
            "POST",
            f"/v1/projects/{project_id}/members",
            json={"user_id": user_id},
            model=ProjectMember,
        )

    def remove(
        self,
        *,
        user_id: Id,
        project_id: Id | None = None,
        workspace_id: Id | None = None,
        if_match: str | None = None,
    ) -> None:
        if (project_id is None) == (workspace_id is None):
            raise TypeError("members.remove takes exactly one of project_id and workspace_id")
        parent = (
            f"projects/{project_id}" if project_id is not None else f"workspaces/{workspace_id}"
        )
        return self._request("DELETE", f"/v1/{parent}/members/{user_id}", if_match=if_match)

    def update(
        self, workspace_id: Id, user_id: Id, *, role: str, if_match: str | None = None
    ) -> User:
        """A workspace member's role."""
        return self._request(
            "PATCH",
            f"/v1/workspaces/{workspace_id}/members/{user_id}",
            json={"role": role},
            model=User,
            if_match=if_match,
        )


class Issues(Resource):
    def list(
        self,
        project_id: Id | None = None,
        *,
        status: str | Sequence[str] | None = None,
        type: str | Sequence[str] | None = None,
        priority: str | Sequence[str] | None = None,
        assignee: Id | str | None = None,
        labels: str | Sequence[str] | None = None,
        mentioned: Id | str | None = None,
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
        return self._list(
            path,
            Issue,
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

    def create(
        self,
        project_id: Id,
        *,
        title: str,
        description: str = UNSET,
        type: str = UNSET,
        priority: str = UNSET,
        status: str = UNSET,
        assignee_id: Id | None = UNSET,
        labels: Sequence[str] = UNSET,
        idempotency_key: str | None = None,
    ) -> Issue:
        body = {
            "title": title,
            "description": description,
            "type": type,
            "priority": priority,
            "status": status,
            "assignee_id": assignee_id,
            "labels": list(labels) if labels else labels,
        }
        return self._request(
            "POST",
            f"/v1/projects/{project_id}/issues",
            json=body,
            model=Issue,
            idempotency_key=idempotency_key,
        )

    def bulk_create(
        self,
        project_id: Id,
        items: Sequence[Mapping[str, Any]],
        *,
        atomic: bool = False,
        idempotency_key: str | None = None,
    ) -> builtins.list[IssueBulkResult]:
        """Up to 100 issues at once, each item the keyword arguments of ``create``. One result
        per item, in order: ``.status`` 201 and ``.data``, or the item's own ``.error``; with
        ``atomic=True`` a failing item raises its error (``details["index"]``) and nothing
        is written."""
        return self._request(
            "POST",
            f"/v1/projects/{project_id}/issues/bulk",
            json={"items": [dict(item) for item in items], "atomic": atomic},
            model=ListOf(IssueBulkResult),
            idempotency_key=idempotency_key,
        )

    def get(self, issue_id: Id) -> Issue:
        return self._request("GET", f"/v1/issues/{issue_id}", model=Issue)

    def update(
        self,
        issue_id: Id,
        *,
        title: str = UNSET,
        description: str = UNSET,
        type: str = UNSET,
        priority: str = UNSET,
        status: str = UNSET,
        assignee_id: Id | None = UNSET,
        labels: Sequence[str] = UNSET,
        if_match: str | None = None,
    ) -> Issue:
        """PATCH: changes only the fields given (``assignee_id=None`` unassigns)."""
        body = {
            "title": title,
            "description": description,
            "type": type,
            "priority": priority,
            "status": status,
            "assignee_id": assignee_id,
            "labels": list(labels) if labels else labels,
        }
        return self._request(
            "PATCH", f"/v1/issues/{issue_id}", json=body, model=Issue, if_match=if_match
        )

    def bulk_update(
        self, items: Sequence[Mapping[str, Any]], *, atomic: bool = False
    ) -> builtins.list[IssueBulkResult]:
        """Up to 100 issues changed at once, each item ``{"id": ..., **fields of update}``.
        One result per item, in order (``.status`` 200 and ``.data``, or ``.error``)."""
        return self._request(
            "PATCH",
            "/v1/issues/bulk",
            json={"items": [dict(item) for item in items], "atomic": atomic},
            model=ListOf(IssueBulkResult),
        )

    def replace(
        self,
        issue_id: Id,
        *,
        title: str,
        description: str = UNSET,
        type: str = UNSET,
        priority: str = UNSET,
        status: str = UNSET,
        assignee_id: Id | None = UNSET,
        labels: Sequence[str] = UNSET,
        if_match: str | None = None,
    ) -> Issue:
        """PUT: fields left out go back to their defaults."""
        body = {
            "title": title,
            "description": description,
            "type": type,
            "priority": priority,
            "status": status,
            "assignee_id": assignee_id,
            "labels": list(labels) if labels else labels,
        }
        return self._request(
            "PUT", f"/v1/issues/{issue_id}", json=body, model=Issue, if_match=if_match
        )

    def delete(self, issue_id: Id, *, if_match: str | None = None) -> None:
        return self._request("DELETE", f"/v1/issues/{issue_id}", if_match=if_match)

    def history(self, issue_id: Id, *, per_page: int | None = None) -> Pager[IssueHistory]:
        return self._list(f"/v1/issues/{issue_id}/history", IssueHistory, per_page=per_page)


class Labels(Resource):
    def list(self, project_id: Id, *, per_page: int | None = None) -> Pager[Label]:
        return self._list(f"/v1/projects/{project_id}/labels", Label, per_page=per_page)

    def create(
        self,
        project_id: Id,
        *,
        name: str,
        color: str = UNSET,
        description: str = UNSET,
        idempotency_key: str | None = None,
    ) -> Label:
        return self._request(
            "POST",
            f"/v1/projects/{project_id}/labels",
            json={"name": name, "color": color, "description": description},
            model=Label,
            idempotency_key=idempotency_key,
        )

    def get(self, label_id: Id) -> Label:
        return self._request("GET", f"/v1/labels/{label_id}", model=Label)

    def update(
        self,
        label_id: Id,
        *,
        name: str = UNSET,
        color: str = UNSET,
        description: str = UNSET,
        if_match: str | None = None,
    ) -> Label:
        body = {"name": name, "color": color, "description": description}
        return self._request(
            "PATCH", f"/v1/labels/{label_id}", json=body, model=Label, if_match=if_match
        )

    def replace(
        self,
        label_id: Id,
        *,
        name: str,
        color: str = UNSET,
        description: str = UNSET,
        if_match: str | None = None,
    ) -> Label:
        body = {"name": name, "color": color, "description": description}
        return self._request(
            "PUT", f"/v1/labels/{label_id}", json=body, model=Label, if_match=if_match
        )

    def delete(self, label_id: Id, *, if_match: str | None = None) -> None:
        return self._request("DELETE", f"/v1/labels/{label_id}", if_match=if_match)


class Repositories(Resource):
    def list(self, project_id: Id, *, per_page: int | None = None) -> Pager[Repository]:
        return self._list(f"/v1/projects/{project_id}/repositories", Repository, per_page=per_page)

    def create(
        self, project_id: Id, *, name: str, clone_url: str, idempotency_key: str | None = None
    ) -> RepositoryCreated:
        """Registers a git repository; the result's ``webhook_secret`` is shown once."""
        return self._request(
            "POST",
            f"/v1/projects/{project_id}/repositories",
            json={"name": name, "clone_url": clone_url},
            model=RepositoryCreated,
            idempotency_key=idempotency_key,
        )

    def get(self, repository_id: Id) -> Repository:
        return self._request("GET", f"/v1/repositories/{repository_id}", model=Repository)

    def delete(self, repository_id: Id, *, if_match: str | None = None) -> None:
        return self._request("DELETE", f"/v1/repositories/{repository_id}", if_match=if_match)

    def branches(self, repository_id: Id, *, per_page: int | None = None) -> Pager[Branch]:
        return self._list(f"/v1/repositories/{repository_id}/branches", Branch, per_page=per_page)

    def commits(
        self, repository_id: Id, *, branch: str | None = None, per_page: int | None = None
    ) -> Pager[Commit]:
        return self._list(
            f"/v1/repositories/{repository_id}/commits", Commit, branch=branch, per_page=per_page
        )

    def sync(self, repository_id: Id) -> Repository:
        """Queues a fetch of the repository (202): its ``sync_status`` says when done."""
        return self._request("POST", f"/v1/repositories/{repository_id}/sync", model=Repository)

    def push(self, repository_id: Id, *, secret: str, payload: dict | None = None) -> PushAccepted:
        """What a git server sends on a push: the body signed with the repository's secret."""
        body = json.dumps(payload or {}).encode()
        signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return self._request(
            "POST",
            f"/v1/repositories/{repository_id}/push",
            content=body,
            headers={"X-Hub-Signature-256": signature, "Content-Type": "application/json"},
            model=PushAccepted,
        )


class Pulls(Resource):
    def list(
        self, repository_id: Id, *, state: str | None = None, per_page: int | None = None
    ) -> Pager[PullRequest]:
        return self._list(
            f"/v1/repositories/{repository_id}/pulls", PullRequest, state=state, per_page=per_page
        )

    def create(
        self,
        repository_id: Id,
        *,
        title: str,
        head: str,
        base: str = UNSET,
        description: str = UNSET,
        idempotency_key: str | None = None,
    ) -> PullRequest:
        body = {"title": title, "head": head, "base": base, "description": description}
        return self._request(
            "POST",
            f"/v1/repositories/{repository_id}/pulls",
            json=body,
            model=PullRequest,
            idempotency_key=idempotency_key,
        )

    def get(self, pull_id: Id) -> PullRequest:
        return self._request("GET", f"/v1/pulls/{pull_id}", model=PullRequest)

    def update(
        self,
        pull_id: Id,
        *,
        title: str = UNSET,
        description: str = UNSET,
        state: str = UNSET,
        if_match: str | None = None,
    ) -> PullRequest:
        body = {"title": title, "description": description, "state": state}
        return self._request(
            "PATCH", f"/v1/pulls/{pull_id}", json=body, model=PullRequest, if_match=if_match
        )

    def merge(
        self, pull_id: Id, *, method: str = UNSET, idempotency_key: str | None = None
    ) -> PullRequest:
        """Merges for real (``merge``, ``squash`` or ``fast_forward``); ``Conflict`` if not."""
        return self._request(
            "POST",
            f"/v1/pulls/{pull_id}/merge",
            json={"method": method},
            model=PullRequest,
            idempotency_key=idempotency_key,
        )

    def reviews(self, pull_id: Id, *, per_page: int | None = None) -> Pager[Review]:
        return self._list(f"/v1/pulls/{pull_id}/reviews", Review, per_page=per_page)

    def review(
        self, pull_id: Id, *, state: str, body: str = UNSET, idempotency_key: str | None = None
    ) -> Review:
        return self._request(
            "POST",
            f"/v1/pulls/{pull_id}/reviews",
            json={"state": state, "body": body},
            model=Review,
            idempotency_key=idempotency_key,
        )


class Comments(Resource):
    """The thread of an issue (``issue_id=``) or a pull request (``pull_id=``), oldest
    first, and each comment by its own id. A body is Markdown; ``@handle`` mentions a member
    who can see the parent."""

    def list(
        self,
        *,
        issue_id: Id | None = None,
        pull_id: Id | None = None,
        since: str | None = None,
        per_page: int | None = None,
    ) -> Pager[Comment]:
        """``since`` (ISO 8601): only comments written or edited at or after it."""
        return self._list(
            self._thread(issue_id, pull_id, "list"), Comment, since=since, per_page=per_page
        )

    def create(
        self,
        *,
        body: str,
        issue_id: Id | None = None,
        pull_id: Id | None = None,
        idempotency_key: str | None = None,
    ) -> Comment:
        return self._request(
            "POST",
            self._thread(issue_id, pull_id, "create"),
            json={"body": body},
            model=Comment,
            idempotency_key=idempotency_key,
        )

    def get(self, comment_id: Id) -> Comment:
        return self._request("GET", f"/v1/comments/{comment_id}", model=Comment)

    def update(self, comment_id: Id, *, body: str, if_match: str | None = None) -> Comment:
        """A new body for your own comment; the one it replaces goes to its ``history``."""
        return self._request(
            "PATCH",
            f"/v1/comments/{comment_id}",
            json={"body": body},
            model=Comment,
            if_match=if_match,
        )

    def delete(self, comment_id: Id, *, if_match: str | None = None) -> None:
        return self._request("DELETE", f"/v1/comments/{comment_id}", if_match=if_match)

    def history(self, comment_id: Id, *, per_page: int | None = None) -> Pager[CommentRevision]:
        """The bodies the comment had before each edit, oldest first."""
        return self._list(f"/v1/comments/{comment_id}/history", CommentRevision, per_page=per_page)

    @staticmethod
    def _thread(issue_id: Id | None, pull_id: Id | None, method: str) -> str:
        # A comment belongs to exactly one parent: guessing one of two ids would post to
        # the wrong thread, so naming neither or both is the caller's mistake.
        if (issue_id is None) == (pull_id is None):
            raise TypeError(f"comments.{method} takes exactly one of issue_id and pull_id")
        if issue_id is not None:
            return f"/v1/issues/{issue_id}/comments"
        return f"/v1/pulls/{pull_id}/comments"


class Webhooks(Resource):
    def list(self, project_id: Id, *, per_page: int | None = None) -> Pager[Webhook]:
        return self._list(f"/v1/projects/{project_id}/webhooks", Webhook, per_page=per_page)

    def create(
        self,
        project_id: Id,
        *,
        url: str,
        events: Sequence[str],
        secret: str,
        description: str = UNSET,
        idempotency_key: str | None = None,
    ) -> Webhook:
        body = {"url": url, "events": list(events), "secret": secret, "description": description}
        return self._request(
            "POST",
            f"/v1/projects/{project_id}/webhooks",
            json=body,
            model=Webhook,
            idempotency_key=idempotency_key,
        )

    def get(self, webhook_id: Id) -> Webhook:
        return self._request("GET", f"/v1/webhooks/{webhook_id}", model=Webhook)

    def update(
        self,
        webhook_id: Id,
        *,
        url: str = UNSET,
        events: Sequence[str] = UNSET,
        secret: str = UNSET,
        description: str = UNSET,
        active: bool = UNSET,
        if_match: str | None = None,
    ) -> Webhook:
        body = {
            "url": url,
            "events": list(events) if events else events,
            "secret": secret,
            "description": description,
            "active": active,
        }
        return self._request(
            "PATCH", f"/v1/webhooks/{webhook_id}", json=body, model=Webhook, if_match=if_match
        )

    def delete(self, webhook_id: Id, *, if_match: str | None = None) -> None:
        return self._request("DELETE", f"/v1/webhooks/{webhook_id}", if_match=if_match)

    def ping(self, webhook_id: Id) -> Delivery:
        """Sends a ``webhook.ping`` to this webhook only."""
        return self._request("POST", f"/v1/webhooks/{webhook_id}/ping", model=Delivery)


class Deliveries(Resource):
    def list(
        self,
        webhook_id: Id,
        *,
        status: str | None = None,
        event_type: str | None = None,
        per_page: int | None = None,
    ) -> Pager[Delivery]:
        return self._list(
            f"/v1/webhooks/{webhook_id}/deliveries",
            Delivery,
            status=status,
            event_type=event_type,
            per_page=per_page,
        )

    def get(self, webhook_id: Id, delivery_id: Id) -> DeliveryDetail:
        return self._request(
            "GET", f"/v1/webhooks/{webhook_id}/deliveries/{delivery_id}", model=DeliveryDetail
        )

    def redeliver(self, webhook_id: Id, delivery_id: Id) -> Delivery:
        return self._request(
            "POST",
            f"/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver",
            model=Delivery,
        )


class Events(Resource):
    def list(
        self,
        *,
        project_id: Id | None = None,
        types: Sequence[str] | str | None = None,
        after_id: Id | None = None,
        sort: str | None = None,
        per_page: int | None = None,
    ) -> Pager[Event]:
        return self._list(
            "/v1/events",
            Event,
            project_id=project_id,
            types=types,
            after_id=after_id,
            sort=sort,
            per_page=per_page,
        )

    def kinds(self) -> builtins.list[EventKind]:
        return self._request("GET", "/v1/events/kinds", model=ListOf(EventKind))

    def stream(
        self,
        *,
        project_id: Id | None = None,
        types: Sequence[str] | str | None = None,
        last_event_id: Id | None = None,
        on_resync: Callable[[ResyncRequired], Any] | None = None,
        max_reconnects: int = 20,
    ) -> Any:
        """Events as they happen (``for event in ...``; ``async for`` on ``AsyncCollab``)."""
        return self._client.stream(  # type: ignore[attr-defined]
            {"project_id": project_id, "types": types},
            last_event_id=last_event_id,
            on_resync=on_resync,
            max_reconnects=max_reconnects,
        )


class MetricsResource(Resource):
    def get(self, project_id: Id, *, period: str | None = None) -> Metrics:
        return self._request(
            "GET", f"/v1/projects/{project_id}/metrics", params={"period": period}, model=Metrics
        )


class Reports(Resource):
    def issues(self, project_id: Id, *, format: str = "csv", **filters: Any) -> Any:
        """Every issue matching the issue list's filters: CSV text, or (``format="json"``)
        a list of records."""
        path = f"/v1/projects/{project_id}/reports/issues"
        params = {"format": format, **filters}
        if format == "csv":
            return self._request("GET", path, params=params, model=str)
        return self._request("GET", path, params=params, model=ListOf(Issue))


class DashboardResource(Resource):
    def project(self, project_id: Id, *, period: str | None = None) -> Dashboard:
        return self._request(
            "GET",
            f"/v1/projects/{project_id}/dashboard",
            params={"period": period},
            model=Dashboard,
        )

    def workspace(self, workspace_id: Id, *, period: str | None = None) -> WorkspaceDashboard:
        return self._request(
            "GET",
            f"/v1/workspaces/{workspace_id}/dashboard",
            params={"period": period},
            model=WorkspaceDashboard,
        )


class Search(Resource):
    def query(
        self,
        q: str,
        *,
        type: str | Sequence[str] | None = None,
        project_id: Id | None = None,
        sort: str | None = None,
        per_page: int | None = None,
    ) -> Pager[SearchHit]:
        """Issues, pull requests and comments across every project you see, best match
        first: ``client.search.query("login -flaky", type="issue")``."""
        return self._list(
            "/v1/search",
            SearchHit,
            q=q,
            type=type,
            project_id=project_id,
            sort=sort,
            per_page=per_page,
        )


class Users(Resource):
    def list(
        self,
        *,
        workspace_id: Id | None = None,
        role: str | None = None,
        status: str | None = None,
        q: str | None = None,
        per_page: int | None = None,
    ) -> Pager[User]:
        return self._list(
            "/v1/users",
            User,
            workspace_id=workspace_id,
            role=role,
            status=status,
            q=q,
            per_page=per_page,
        )

    def get(self, user_id: Id, *, workspace_id: Id | None = None) -> User:
        return self._request(
            "GET", f"/v1/users/{user_id}", params={"workspace_id": workspace_id}, model=User
        )

    def me(self) -> Me:
        return self._request("GET", "/v1/users/me", model=Me)

    def update_me(
        self, *, name: str = UNSET, handle: str = UNSET, if_match: str | None = None
    ) -> Me:
        """PATCH your own name or ``handle`` (what others ``@mention``); a taken or malformed
        handle is a ``ValidationError``."""
        return self._request(
            "PATCH",
            "/v1/users/me",
            json={"name": name, "handle": handle},
            model=Me,
            if_match=if_match,
        )


class Workspaces(Resource):
    def list(self, *, per_page: int | None = None) -> Pager[Workspace]:
        return self._list("/v1/workspaces", Workspace, per_page=per_page)

    def create(self, *, name: str, idempotency_key: str | None = None) -> Workspace:
        return self._request(
            "POST",
            "/v1/workspaces",
            json={"name": name},
            model=Workspace,
            idempotency_key=idempotency_key,
        )

    def get(self, workspace_id: Id) -> Workspace:
        return self._request("GET", f"/v1/workspaces/{workspace_id}", model=Workspace)


class Invitations(Resource):
    def list(
        self, workspace_id: Id, *, status: str | None = None, per_page: int | None = None
    ) -> Pager[Invitation]:
        return self._list(
            f"/v1/workspaces/{workspace_id}/invitations",
            Invitation,
            status=status,
            per_page=per_page,
        )

    def create(
        self,
        workspace_id: Id,
        *,
        email: str,
        role: str = UNSET,
        projects: Sequence[Id] = UNSET,
        idempotency_key: str | None = None,
    ) -> Invitation:
        body = {"email": email, "role": role, "projects": list(projects) if projects else projects}
        return self._request(
            "POST",
            f"/v1/workspaces/{workspace_id}/invitations",
            json=body,
            model=Invitation,
            idempotency_key=idempotency_key,
        )

    def revoke(self, workspace_id: Id, invitation_id: Id, *, if_match: str | None = None) -> None:
        return self._request(
            "DELETE",
            f"/v1/workspaces/{workspace_id}/invitations/{invitation_id}",
            if_match=if_match,
        )

    def accept(self, *, token: str, name: str, password: str) -> Me:
        """Accepts an emailed invitation: the new user's account (sign in with ``login``)."""
        return self._request(
            "POST",
            "/v1/invitations/accept",
            json={"token": token, "name": name, "password": password},
            model=Me,
        )


class ApiKeys(Resource):
    """Your API keys (the server requires a JWT sign-in: ``Collab.login``)."""

    def list(self, *, per_page: int | None = None) -> Pager[ApiKey]:
        return self._list("/v1/api-keys", ApiKey, per_page=per_page)

    def create(
        self,
        *,
        name: str,
        scopes: Sequence[str],
        expires_in: str | int | None = UNSET,
        idempotency_key: str | None = None,
    ) -> ApiKeyCreated:
        """A new key; ``.key`` holds it, shown this once. ``expires_in``: ``"90d"``,
        ``"1y"``, seconds, or ``None`` / ``"never"`` where allowed."""
        body = {"name": name, "scopes": list(scopes), "expiresIn": expires_in}
        return self._request(
            "POST",
            "/v1/api-keys",
            json=body,
            model=ApiKeyCreated,
            idempotency_key=idempotency_key,
        )

    def get(self, key_id: Id) -> ApiKey:
        return self._request("GET", f"/v1/api-keys/{key_id}", model=ApiKey)

    def revoke(self, key_id: Id, *, if_match: str | None = None) -> None:
        return self._request("DELETE", f"/v1/api-keys/{key_id}", if_match=if_match)


class RateLimitResource(Resource):
    def get(self) -> RateLimit:
        """Your tier and window, without counting against it."""
        return self._request("GET", "/v1/rate_limit", model=RateLimit)


class Auth(Resource):
    """The sign-in calls themselves (``Collab.login`` and ``logout`` use them for you)."""

    def login(self, *, email: str, password: str) -> TokenPair:
        return self._request(
            "POST", "/v1/auth/login", json={"email": email, "password": password}, model=TokenPair
        )

    def refresh(self, *, refresh_token: str) -> TokenPair:
        return self._request(
            "POST", "/v1/auth/refresh", json={"refresh_token": refresh_token}, model=TokenPair
        )

    def logout(self, *, refresh_token: str) -> None:
        return self._request("POST", "/v1/auth/logout", json={"refresh_token": refresh_token})


RESOURCES: dict[str, type[Resource]] = {
    "projects": Projects,
    "members": Members,
    "issues": Issues,
    "labels": Labels,
    "repositories": Repositories,
    "pulls": Pulls,
    "comments": Comments,
    "webhooks": Webhooks,
    "deliveries": Deliveries,
    "events": Events,
    "metrics": MetricsResource,
    "reports": Reports,
    "dashboard": DashboardResource,
    "search": Search,
    "users": Users,
    "workspaces": Workspaces,
    "invitations": Invitations,
    "api_keys": ApiKeys,
    "rate_limit": RateLimitResource,
    "auth": Auth,
}


def attach_resources(client: BaseClient) -> None:
    for name, resource in RESOURCES.items():
        setattr(client, name, resource(client))
