"""Bringing a GitHub repository's issues into a project: its labels, its issues and pull
requests, and their comments, through the issues' and comments' own services, so history,
events, counters and search documents are as if the work had been done here.

What becomes of what:

- an issue becomes an issue with its GitHub number (where the project has handed out no number
  as high: ``issues.services.issue_import``), its title, body, state, labels, creation and
  update times, and a first line naming where it came from and who opened it;
- a pull request becomes an issue as well (GitHub numbers issues and pull requests in one
  sequence, so the numbers stay as people know them), its first line saying it was a pull
  request and whether it was merged; its conversation comes along. An open one stays open,
  a merged or closed one is closed. Its code, reviews and branches stay on GitHub;
- people are matched to accounts by the public email of their GitHub profile, then by login
  against handles; the assignee is the first of GitHub's assignees matched who may be
  assigned here. Whoever has no account here is named in the text instead;
- labels keep their name, color and description.

Each GitHub record is linked to what it became (``GithubLink``): a second run updates what
changed on GitHub since (its ``updated_at`` moved) and makes nothing twice. Nothing is deleted
here for what was deleted on GitHub.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.models import User
from collab.api.exceptions import ValidationFailed
from comments.models import BODY_MAX_LENGTH, Comment
from comments.services import comment_create, comment_update
from issues.models import Issue, IssueType, Label, Status
from issues.selectors import assignee_id_allowed
from issues.services import issue_import, issue_update, label_create, label_update
from projects.models import Project

from .github import GithubClient, GithubNotFound
from .models import GithubLink

SOURCE = "github"
TITLE_MAX = Issue._meta.get_field("title").max_length or 500
LABEL_NAME_MAX = Label._meta.get_field("name").max_length or 50
LABEL_DESCRIPTION_MAX = Label._meta.get_field("description").max_length or 200
# GitHub's customary labels that say what kind of work an issue is.
TYPE_LABELS = {
    "bug": IssueType.BUG,
    "enhancement": IssueType.FEATURE,
    "feature": IssueType.FEATURE,
    "feature request": IssueType.FEATURE,
    "improvement": IssueType.IMPROVEMENT,
}

Progress = Callable[[str], object]


@dataclass
class ImportReport:
    repository: str
    created: dict[str, int] = field(default_factory=lambda: dict.fromkeys(GithubLink.Kind, 0))
    updated: dict[str, int] = field(default_factory=lambda: dict.fromkeys(GithubLink.Kind, 0))
    unchanged: dict[str, int] = field(default_factory=lambda: dict.fromkeys(GithubLink.Kind, 0))
    pull_requests: int = 0
    skipped_comments: int = 0
    unmatched: set[str] = field(default_factory=set)


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _login(person: dict[str, Any] | None) -> str:
    return str((person or {}).get("login") or "ghost")


@dataclass
class _Links:
    """The project's links of one kind: GitHub id -> (link id, target id, GitHub's time)."""

    rows: dict[int, tuple[int, int, datetime | None]]

    @classmethod
    def of(cls, project: Project, kind: str) -> "_Links":
        target = f"{kind}_id"
        rows = GithubLink.objects.filter(project=project, kind=kind).values_list(
            "github_id", "pk", target, "github_updated_at"
        )
        return cls({github_id: (pk, target_id, at) for github_id, pk, target_id, at in rows})


class GithubImport:
    """One run of the import of ``repository`` (``owner/name``) into ``project``."""

    def __init__(
        self,
        *,
        client: GithubClient,
        repository: str,
        project: Project,
        progress: Progress | None = None,
    ) -> None:
        self.client = client
        self.repository = repository
        self.project = project
        self.progress = progress or (lambda kind: None)
        self.report = ImportReport(repository=repository)
        self.people: dict[str, User | None] = {}
        self.label_names: dict[int, str] = {}  # GitHub label id -> the label's name here
        self.issue_ids: dict[int, int] = {}  # GitHub number -> the issue's id here
        self.assignable: dict[int, bool] = {}  # user id -> may be assigned in the project

    def run(self) -> ImportReport:
        # Read first: a repository that is not there (or not visible) writes nothing.
        repo = self.client.one(f"/repos/{self.repository}")
        self.repository = str(repo.get("full_name") or self.repository)
        self.report.repository = self.repository
        self._labels()
        self._issues()
        self._comments()
        return self.report

    # People -------------------------------------------------------------------------------

    def _person(self, person: dict[str, Any] | None) -> User | None:
        """The account of a GitHub user: by their profile's public email, else by login."""
        login = _login(person)
        if login in self.people:
            return self.people[login]
        user = None
        try:
            profile = self.client.one(f"/users/{login}")
        except GithubNotFound:
            profile = {}
        email = profile.get("email") if isinstance(profile, dict) else None
        if email:
            user = User.objects.filter(email__iexact=email).first()
        if user is None:
            user = User.objects.filter(handle=login.lower()).first()
        if user is None:
            self.report.unmatched.add(login)
        self.people[login] = user
        return user

    def _assignee_id(self, item: dict[str, Any]) -> int | None:
        people = item.get("assignees") or ([item["assignee"]] if item.get("assignee") else [])
        for person in people:
            user = self._person(person)
            if user is None:
                continue
            if user.pk not in self.assignable:
                self.assignable[user.pk] = assignee_id_allowed(
                    project=self.project, user_id=user.pk
                )
            if self.assignable[user.pk]:
                return user.pk
        return None

    # Labels -------------------------------------------------------------------------------

    def _labels(self) -> None:
        links = _Links.of(self.project, GithubLink.Kind.LABEL)
        for item in self.client.items(f"/repos/{self.repository}/labels"):
            self._label(item, links)
            self.progress("labels")

    def _label(self, item: dict[str, Any], links: _Links) -> str:
        """The name here of a GitHub label, brought in (or updated) first."""
        github_id = int(item["id"])
        if github_id in self.label_names:
            return self.label_names[github_id]
        name = str(item["name"])[:LABEL_NAME_MAX]
        color = "#" + str(item.get("color") or "6b7280").lower()
        description = str(item.get("description") or "")[:LABEL_DESCRIPTION_MAX]
        kind = GithubLink.Kind.LABEL
        link = links.rows.get(github_id)
        label = Label.objects.filter(pk=link[1]).first() if link else None
        if label is None:
            with transaction.atomic():
                # A label of that name here already is the same label (GitHub's "bug" is ours).
                label = Label.objects.filter(project=self.project, name=name).first()
                if label is None:
                    label = label_create(
                        project=self.project,
                        actor=None,
                        name=name,
                        color=color,
                        description=description,
                    )
                    self.report.created[kind] += 1
                else:
                    self.report.unchanged[kind] += 1
                GithubLink.objects.create(
                    project=self.project,
                    kind=kind,
                    github_id=github_id,
                    label=label,
                    node_id=str(item.get("node_id") or ""),
                )
        elif (label.name, label.color, label.description) != (name, color, description):
            try:
                label_update(
                    label=label, actor=None, name=name, color=color, description=description
                )
                self.report.updated[kind] += 1
            except ValidationFailed:
                # Renamed on GitHub to a name another label here has: kept as it is.
                self.report.unchanged[kind] += 1
        else:
            self.report.unchanged[kind] += 1
        self.label_names[github_id] = label.name
        return label.name

    # Issues and pull requests -------------------------------------------------------------

    def _issues(self) -> None:
        links = _Links.of(self.project, GithubLink.Kind.ISSUE)
        label_links = _Links.of(self.project, GithubLink.Kind.LABEL)
        params = {"state": "all", "sort": "created", "direction": "asc"}
        for item in self.client.items(f"/repos/{self.repository}/issues", params):
            self._issue(item, links, label_links)
            self.progress("issues")

    def _note(self, item: dict[str, Any]) -> str:
        where = f"[{self.repository}#{item['number']}]({item.get('html_url', '')})"
        by = f"**{_login(item.get('user'))}**"
        pull = item.get("pull_request")
        if pull is None:
            return f"*From GitHub: issue {where}, opened by {by}.*"
        merged = (pull.get("merged_at") or "")[:10]
        if merged:
            state = f"merged on {merged}"
        elif item.get("state") == "closed":
            state = "closed without merging"
        else:
            state = "open"
        return f"*From GitHub: pull request {where} by {by}, {state}. Its code stays on GitHub.*"

    def _fields(self, item: dict[str, Any], label_links: _Links) -> dict[str, Any]:
        body, note = str(item.get("body") or "").strip(), self._note(item)
        return {
            "title": str(item.get("title") or f"#{item['number']}")[:TITLE_MAX],
            "description": f"{note}\n\n{body}" if body else note,
            "status": Status.CLOSED if item.get("state") == "closed" else Status.OPEN,
            "assignee_id": self._assignee_id(item),
            "labels": [self._label(label, label_links) for label in item.get("labels") or []],
        }

    def _issue(self, item: dict[str, Any], links: _Links, label_links: _Links) -> None:
        github_id, number = int(item["id"]), int(item["number"])
        updated_at = _time(item.get("updated_at"))
        kind = GithubLink.Kind.ISSUE
        if item.get("pull_request") is not None:
            self.report.pull_requests += 1
        # A link's issue is there: deleting it here deletes the link (a cascade).
        link = links.rows.get(github_id)
        if link is not None:
            self.issue_ids[number] = link[1]
            if link[2] == updated_at:
                self.report.unchanged[kind] += 1
                return
            fields = self._fields(item, label_links)
            with transaction.atomic():
                issue = Issue.objects.get(pk=link[1])
                before = issue.updated_at
                issue, _record = issue_update(
                    issue=issue, actor=None, source=SOURCE, at=updated_at, **fields
                )
                GithubLink.objects.filter(pk=link[0]).update(github_updated_at=updated_at)
            changed = issue.updated_at != before
            (self.report.updated if changed else self.report.unchanged)[kind] += 1
            return
        fields = self._fields(item, label_links)
        # GitHub sends both times; a record without them is dated now rather than refused.
        created_at = _time(item.get("created_at")) or updated_at or timezone.now()
        updated_at = updated_at or created_at
        with transaction.atomic():
            issue = issue_import(
                project=self.project,
                actor=self._person(item.get("user")),
                number=number,
                type=self._type(item),
                created_at=created_at,
                updated_at=updated_at,
                closed_at=_time(item.get("closed_at")),
                source=SOURCE,
                **fields,
            )
            GithubLink.objects.create(
                project=self.project,
                kind=kind,
                github_id=github_id,
                node_id=str(item.get("node_id") or ""),
                github_updated_at=updated_at,
                issue=issue,
            )
        self.issue_ids[number] = issue.pk
        self.report.created[kind] += 1

    @staticmethod
    def _type(item: dict[str, Any]) -> str | None:
        for label in item.get("labels") or []:
            kind = TYPE_LABELS.get(str(label.get("name", "")).lower())
            if kind is not None:
                return str(kind)
        return None

    # Comments -----------------------------------------------------------------------------

    def _comments(self) -> None:
        links = _Links.of(self.project, GithubLink.Kind.COMMENT)
        params = {"sort": "created", "direction": "asc"}
        for item in self.client.items(f"/repos/{self.repository}/issues/comments", params):
            self._comment(item, links)
            self.progress("comments")

    def _comment_body(self, item: dict[str, Any], author: User | None) -> str:
        body = str(item.get("body") or "")
        if author is None:
            body = f"*{_login(item.get('user'))} on GitHub:*\n\n{body}"
        return body[:BODY_MAX_LENGTH]

    def _comment(self, item: dict[str, Any], links: _Links) -> None:
        github_id = int(item["id"])
        number = str(item.get("issue_url", "")).rstrip("/").rsplit("/", 1)[-1]
        issue_id = self.issue_ids.get(int(number)) if number.isdigit() else None
        if issue_id is None:
            # On an issue the list did not give (transferred away meanwhile).
            self.report.skipped_comments += 1
            return
        kind = GithubLink.Kind.COMMENT
        updated_at = _time(item.get("updated_at"))
        link = links.rows.get(github_id)
        if link is not None:
            if link[2] == updated_at:
                self.report.unchanged[kind] += 1
                return
            comment = Comment.objects.get(pk=link[1])
            author = self._person(item.get("user"))
            body = self._comment_body(item, author)
            with transaction.atomic():
                comment_update(
                    comment=comment, actor=author, body=body, at=updated_at, notify=False
                )
                GithubLink.objects.filter(pk=link[0]).update(github_updated_at=updated_at)
            changed = body != comment.body
            (self.report.updated if changed else self.report.unchanged)[kind] += 1
            return
        author = self._person(item.get("user"))
        with transaction.atomic():
            record = comment_create(
                parent=Issue.objects.get(pk=issue_id),
                actor=author,
                body=self._comment_body(item, author),
                at=_time(item.get("created_at")),
                notify=False,
            )
            GithubLink.objects.create(
                project=self.project,
                kind=kind,
                github_id=github_id,
                node_id=str(item.get("node_id") or ""),
                github_updated_at=updated_at,
                comment_id=record["id"],
            )
        self.report.created[kind] += 1


def github_import(
    *,
    client: GithubClient,
    repository: str,
    project: Project,
    progress: Progress | None = None,
) -> ImportReport:
    """Bring ``repository`` (``owner/name``) on ``client``'s server into ``project``; returns
    what was created, updated and left unchanged. A GithubError (the repository is not there,
    the token is refused, the rate limit is spent for too long) stops it: what was brought in
    before stays, each record whole, and a run again carries on."""
    return GithubImport(
        client=client, repository=repository, project=project, progress=progress
    ).run()
