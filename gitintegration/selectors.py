"""Reads for repositories, branches, commits and pull requests.

Everything is reached through the projects the user may see (one visibility rule, in
``projects.selectors``), so another workspace's repository or pull request is a 404.
"""

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.db.models import QuerySet

from collab.api.renderers import iso_z
from projects.selectors import project_visibility_q

from . import git
from .mirrors import mirror_ready, mirror_unavailable
from .models import Branch, Commit, PullRequest, Repository, Review


def clone_url_display(url: str) -> str:
    """The clone URL without the password or token it may carry (``https://user:***@host``)."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def repository_record(repository: Repository) -> dict:
    return {
        "id": repository.pk,
        "project_id": repository.project_id,
        "name": repository.name,
        "clone_url": clone_url_display(repository.clone_url),
        "default_branch": repository.default_branch,
        "sync_status": repository.sync_status,
        "sync_error": repository.sync_error,
        "last_synced_at": iso_z(repository.last_synced_at),
        "created_at": iso_z(repository.created_at),
        "updated_at": iso_z(repository.updated_at),
    }


def pull_request_record(pull: PullRequest) -> dict:
    return {
        "id": pull.pk,
        "repository_id": pull.repository_id,
        "number": pull.number,
        "title": pull.title,
        "description": pull.description,
        "head": pull.head,
        "base": pull.base,
        "state": pull.state,
        "author_id": pull.author_id,
        "head_sha": pull.head_sha,
        "base_sha": pull.base_sha,
        "merge_commit_sha": pull.merge_commit_sha,
        "merge_method": pull.merge_method,
        "merged_by_id": pull.merged_by_id,
        "created_at": iso_z(pull.created_at),
        "updated_at": iso_z(pull.updated_at),
        "merged_at": iso_z(pull.merged_at),
        "closed_at": iso_z(pull.closed_at),
    }


def review_record(review: Review) -> dict:
    return {
        "id": review.pk,
        "pull_request_id": review.pull_request_id,
        "author_id": review.author_id,
        "state": review.state,
        "body": review.body,
        "created_at": iso_z(review.created_at),
    }


def commit_record(commit: Commit) -> dict:
    return {
        "sha": commit.sha,
        "repository_id": commit.repository_id,
        "author_name": commit.author_name,
        "author_email": commit.author_email,
        "message": commit.message,
        "authored_at": iso_z(commit.authored_at),
        "committed_at": iso_z(commit.committed_at),
    }


def branch_record(branch: Branch) -> dict:
    return {"name": branch.name, "commit_sha": branch.commit_sha, "is_default": branch.is_default}


def repository_list(*, project) -> QuerySet:
    return Repository.objects.filter(project=project).order_by("id")


def repository_get(*, user, repository_id) -> Repository | None:
    return (
        Repository.objects.filter(project_visibility_q(user, prefix="project__"))
        .select_related("project")
        .filter(pk=repository_id)
        .first()
    )


def branch_list(*, repository: Repository) -> QuerySet:
    return Branch.objects.filter(repository=repository).order_by("-is_default", "name")


def branch_get(*, repository: Repository, name: str) -> Branch | None:
    return Branch.objects.filter(repository=repository, name=name).first()


def commit_list(*, repository: Repository) -> QuerySet:
    return Commit.objects.filter(repository=repository).order_by("-committed_at", "-id")


class BranchHistory:
    """The commits of one branch, newest first, as git orders them: a sequence the paginator
    slices. Git says which commits (``rev-list`` from the branch's tip at the last sync, so
    the page and the index agree); their records come from the index in one query."""

    def __init__(self, repository: Repository, tip: str):
        self.repository = repository
        self.tip = tip
        self._count: int | None = None
        self._path: Path | None = None

    def count(self) -> int:
        if self._count is None:
            self._count = self._git(git.rev_count, self.tip)
        return self._count

    def _git(self, function, *args, **kwargs):
        # Reads the node's mirror, filled from the origin first when this node has none yet.
        if self._path is None:
            self._path = mirror_ready(repository=self.repository, needs=[self.tip])
        try:
            return function(self._path, *args, **kwargs)
        except git.GitError as exc:
            raise mirror_unavailable(exc) from None

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, window: slice) -> list[Commit]:
        start = window.start or 0
        shas = self._git(
            git.rev_list,
            self.tip,
            skip=start,
            limit=(window.stop - start) if window.stop is not None else None,
        )
        rows = {c.sha: c for c in Commit.objects.filter(repository=self.repository, sha__in=shas)}
        return [rows[sha] for sha in shas if sha in rows]


def pull_request_list(*, repository: Repository) -> QuerySet:
    return PullRequest.objects.filter(repository=repository).order_by("-created_at", "-id")


def pull_request_get(*, user, pull_id) -> PullRequest | None:
    return (
        PullRequest.objects.filter(project_visibility_q(user, prefix="repository__project__"))
        .select_related("repository__project")
        .filter(pk=pull_id)
        .first()
    )


def review_list(*, pull: PullRequest) -> QuerySet:
    return Review.objects.filter(pull_request=pull).order_by("created_at", "id")
