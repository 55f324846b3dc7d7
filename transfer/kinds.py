"""What a workspace archive holds: one record type (a JSON Lines member) per model, in the
order an import writes them, and every other model with the reason it stays out.

A record is the model's row as ``.values()`` reads it (columns by attribute name, so foreign
keys as ``<name>_id``), less what ``omit`` names, and less what ``secret`` names unless the
export includes credentials. ``refs`` says which record type each foreign key points into:
an import gives every record a new id and rewrites these columns through the ids it gave.

``tests/transfer/test_completeness.py`` lists every model of every installed app and fails on
one that is neither here nor in ``LEFT_OUT``: a model added later is exported, or left out on
purpose with its reason, never forgotten.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Model

from accounts.models import Invitation, Membership, User, Workspace
from comments.models import Comment, CommentRevision, Mention
from events.models import Event
from gitintegration.models import (
    Branch,
    Commit,
    PullRequest,
    PullRequestSequence,
    Repository,
    Review,
)
from integrations.models import ServiceAccount
from issues.models import Issue, IssueHistory, IssueSequence, Label
from notifications.models import Webhook
from projects.models import Project, ProjectMember

from .models import GithubLink

USERS = "users"


@dataclass(frozen=True)
class Kind:
    name: str
    model: type[Model]
    # The lookup from a row to its workspace's id.
    scope: str
    refs: dict[str, str] = field(default_factory=dict)
    secret: tuple[str, ...] = ()
    omit: tuple[str, ...] = ()
    # Only in an export with events.
    events: bool = False
    # A reference to a record the archive lacks is dropped (null) rather than refused: the
    # event log keeps plain ids that outlive what they named.
    loose: bool = False
    # References to the workspace added after format 1: an older archive's records lack them,
    # and name the archive's workspace.
    workspace_added: tuple[str, ...] = ()
    # The format version whose archives first hold this member: an older one has none.
    since: int = 1

    @property
    def member(self) -> str:
        return f"{self.name}.jsonl"

    @property
    def label(self) -> str:
        return self.model._meta.label

    @property
    def own_id(self) -> bool:
        """Whether the row has an id of its own (not one borrowed from its parent)."""
        return not self.model._meta.pk.is_relation

    def fields(self, *, credentials: bool) -> list[str]:
        """The exported columns, by attribute name, the primary key first."""
        skip = set(self.omit) | (set() if credentials else set(self.secret))
        names = [
            f.attname
            for f in self.model._meta.concrete_fields
            if not f.generated and f.attname not in skip
        ]
        pk = self.model._meta.pk.attname
        return [pk] + [name for name in names if name != pk]


def _through(model: type[Model], name: str) -> type[Model]:
    through: type[Model] = getattr(model, name).through
    return through


_WS_PROJECT = "project__workspace_id"
_WS_REPOSITORY = "repository__project__workspace_id"

KINDS: tuple[Kind, ...] = (
    Kind(
        USERS,
        User,
        scope="",  # the people the other records name (see exporting)
        secret=("password",),
        # Privileges over the whole instance, not over a workspace.
        omit=("is_staff", "is_superuser"),
    ),
    Kind("workspace", Workspace, scope="pk"),
    Kind(
        "memberships",
        Membership,
        scope="workspace_id",
        refs={"workspace_id": "workspace", "user_id": USERS},
    ),
    Kind(
        "service_accounts",
        ServiceAccount,
        scope="workspace_id",
        refs={"user_id": USERS, "workspace_id": "workspace", "created_by_id": USERS},
        since=3,
    ),
    Kind(
        "projects",
        Project,
        scope="workspace_id",
        refs={"workspace_id": "workspace", "created_by_id": USERS},
    ),
    Kind(
        "project_members",
        ProjectMember,
        scope=_WS_PROJECT,
        refs={"project_id": "projects", "user_id": USERS},
    ),
    Kind("issue_sequences", IssueSequence, scope=_WS_PROJECT, refs={"project_id": "projects"}),
    Kind("labels", Label, scope=_WS_PROJECT, refs={"project_id": "projects"}),
    Kind(
        "issues",
        Issue,
        scope=_WS_PROJECT,
        refs={"project_id": "projects", "assignee_id": USERS, "reporter_id": USERS},
    ),
    Kind(
        "issue_labels",
        _through(Issue, "labels"),
        scope="issue__project__workspace_id",
        refs={"issue_id": "issues", "label_id": "labels"},
    ),
    Kind(
        "repositories",
        Repository,
        scope=_WS_PROJECT,
        refs={"project_id": "projects", "created_by_id": USERS},
        # Signs the origin's push notifications.
        secret=("webhook_secret",),
    ),
    Kind(
        "pull_request_sequences",
        PullRequestSequence,
        scope=_WS_REPOSITORY,
        refs={"repository_id": "repositories"},
    ),
    Kind("branches", Branch, scope=_WS_REPOSITORY, refs={"repository_id": "repositories"}),
    Kind("commits", Commit, scope=_WS_REPOSITORY, refs={"repository_id": "repositories"}),
    Kind(
        "pull_requests",
        PullRequest,
        scope=_WS_REPOSITORY,
        refs={"repository_id": "repositories", "author_id": USERS, "merged_by_id": USERS},
    ),
    Kind(
        "reviews",
        Review,
        scope="pull_request__repository__project__workspace_id",
        refs={"pull_request_id": "pull_requests", "author_id": USERS},
    ),
    Kind(
        "comments",
        Comment,
        scope=_WS_PROJECT,
        refs={
            "project_id": "projects",
            "issue_id": "issues",
            "pull_request_id": "pull_requests",
            "author_id": USERS,
        },
    ),
    Kind(
        "comment_revisions",
        CommentRevision,
        scope="comment__project__workspace_id",
        refs={"comment_id": "comments", "author_id": USERS},
    ),
    Kind(
        "mentions",
        Mention,
        scope="comment__project__workspace_id",
        refs={
            "comment_id": "comments",
            "user_id": USERS,
            "issue_id": "issues",
            "pull_request_id": "pull_requests",
        },
    ),
    # After the comments: a history row of a comment holds the comment's record.
    Kind(
        "issue_history",
        IssueHistory,
        scope="issue__project__workspace_id",
        refs={"issue_id": "issues", "actor_id": USERS},
        # The credential the actor acted through names this instance's keys and apps.
        omit=("actor_detail",),
    ),
    Kind(
        "invitations",
        Invitation,
        scope="workspace_id",
        refs={"workspace_id": "workspace", "invited_by_id": USERS, "user_id": USERS},
        # Tokens are made with the instance's SECRET_KEY: an import issues new ones.
        omit=("token_hash", "token_nonce"),
    ),
    Kind(
        "invitation_projects",
        _through(Invitation, "projects"),
        scope="invitation__workspace_id",
        refs={"invitation_id": "invitations", "project_id": "projects"},
    ),
    Kind(
        "webhooks",
        Webhook,
        scope="workspace_id",
        # A workspace's own webhook has no project.
        refs={"workspace_id": "workspace", "project_id": "projects", "created_by_id": USERS},
        workspace_added=("workspace_id",),
        # Encrypted with this instance's key; an export with credentials carries the secret
        # itself as ``secret``, which the importing instance encrypts with its own.
        omit=("secret_encrypted",),
    ),
    # What GitHub records became here: a GitHub import run again on the copy updates them
    # instead of making them twice.
    Kind(
        "github_links",
        GithubLink,
        scope=_WS_PROJECT,
        refs={
            "project_id": "projects",
            "issue_id": "issues",
            "comment_id": "comments",
            "label_id": "labels",
        },
    ),
    Kind(
        "events",
        Event,
        scope="workspace_id",
        refs={"workspace_id": "workspace", "project_id": "projects", "actor_id": USERS},
        events=True,
        loose=True,
        # The credential the actor acted through names this instance's keys and apps.
        omit=("actor_detail",),
    ),
)

KIND_BY_NAME = {kind.name: kind for kind in KINDS}

# Every other model, by label, and why an archive does without it.
LEFT_OUT: dict[str, str] = {
    "accounts.ApiKey": "a credential of one instance; people make new keys on the new one",
    "accounts.AppAuthorization": "a user's consent to an app of this instance, with its tokens",
    "accounts.AuditEntry": "the credentials of this instance, which the other does not have",
    "accounts.OAuthApp": "an app's registration holds its client secret: registered anew there",
    "accounts.DeniedToken": "signed-out tokens of this instance, which the other never issued",
    "accounts.User_groups": "Django groups grant privileges over the whole instance",
    "accounts.User_user_permissions": "permissions over the whole instance, not a workspace",
    "admin.LogEntry": "the admin site's log of this instance",
    "analytics.BreakdownSnapshot": "a rollup: recomputed by the import",
    "analytics.ProjectDashboard": "a proxy of projects.Project, with no table of its own",
    "analytics.ProjectDay": "a rollup: recomputed by the import",
    "analytics.ReopenRollup": "a rollup: recomputed by the import",
    "analytics.RollupState": "how far the rollups went: recomputed by the import",
    "auth.Group": "privileges over the whole instance",
    "oauth2_provider.AccessToken": "a credential of one instance",
    "oauth2_provider.Application": "an app's client and secret: registered anew there",
    "oauth2_provider.DeviceGrant": "the device grant is not offered",
    "oauth2_provider.Grant": "a code of one instance, valid for a minute",
    "oauth2_provider.IDToken": "OpenID Connect is not offered",
    "oauth2_provider.RefreshToken": "a credential of one instance",
    "auth.Group_permissions": "privileges over the whole instance",
    "auth.Permission": "made by migrate on every instance",
    "contenttypes.ContentType": "made by migrate on every instance",
    "events.EventLogState": "how far this instance purged its own log",
    "idempotency.IdempotencyKey": "answers replayed for 24 hours to retried requests",
    "issues.IssueFacetCount": "counters: rebuilt from the issues by the import",
    "issues.IssueStatusCount": "counters: rebuilt from the issues by the import",
    "notifications.Delivery": "sends of this instance to the receivers; events go with "
    "--include-events, and webhooks with their settings",
    "notifications.DeliveryAttempt": "the log of those sends",
    "ratelimits.RateLimitCounter": "rate-limit windows of minutes",
    "search.SearchHit": "a view over issues, pull requests and comments",
    "sessions.Session": "sign-ins to this instance's admin site",
    "token_blacklist.BlacklistedToken": "refresh tokens of this instance",
    "token_blacklist.OutstandingToken": "refresh tokens of this instance",
    "transfer.Export": "archives of this instance's exports, kept for days in its own storage",
}


# Ids inside the JSON of an issue's history: a change of the assignee holds user ids, and the
# record a "created" or "comment" row holds names its issue, comment, project and people.
_HISTORY_VALUE_IDS = {"assignee_id": USERS}
_RECORD_IDS = {
    "project_id": "projects",
    "issue_id": "issues",
    "pull_request_id": "pull_requests",
    "assignee_id": USERS,
    "reporter_id": USERS,
    "author_id": USERS,
}
_RECORD_OWN_ID = {"created": "issues", "comment": "comments"}

# Every record type an issue history value may name.
HISTORY_REFERENCES = {*_HISTORY_VALUE_IDS.values(), *_RECORD_IDS.values(), *_RECORD_OWN_ID.values()}

Lookup = Callable[[str, int], int | None]


def history_value_remap(field_name: str, value: Any, lookup: Lookup) -> Any:
    """An issue history value with the ids it holds rewritten by ``lookup(kind, old id)``."""
    if value is None:
        return None
    kind = _HISTORY_VALUE_IDS.get(field_name)
    if kind is not None:
        return lookup(kind, value) if isinstance(value, int) else value
    if isinstance(value, dict):
        keys = dict(_RECORD_IDS)
        own = _RECORD_OWN_ID.get(field_name)
        if own is not None:
            keys["id"] = own
        return {
            key: lookup(keys[key], item) if key in keys and isinstance(item, int) else item
            for key, item in value.items()
        }
    return value
