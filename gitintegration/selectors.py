"""Reads for repositories, branches, commits and pull requests.

Everything is reached through the projects the user may see (one visibility rule, in
``projects.selectors``), so another workspace's repository or pull request is a 404.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from django.db.models import QuerySet

from accounts.models import User
from projects.models import Project
from projects.selectors import project_visibility_q

from . import git
from .mirrors import mirror_ready, mirror_unavailable
from .models import Branch, Commit, PullRequest, Repository, Review

T = TypeVar("T")


def repository_list(*, project: Project) -> QuerySet[Repository]:
    return Repository.objects.filter(project=project).order_by("id")


def repository_get(*, user: User, repository_id: int | str) -> Repository | None:
    return (
        Repository.objects.filter(project_visibility_q(user, prefix="project__"))
        .select_related("project")
        .filter(pk=repository_id)
        .first()
    )


def branch_list(*, repository: Repository) -> QuerySet[Branch]:
    return Branch.objects.filter(repository=repository).order_by("-is_default", "name")


def branch_get(*, repository: Repository, name: str) -> Branch | None:
    return Branch.objects.filter(repository=repository, name=name).first()


def commit_list(*, repository: Repository) -> QuerySet[Commit]:
    return Commit.objects.filter(repository=repository).order_by("-committed_at", "-id")


class BranchHistory:
    """The commits of one branch, newest first, as git orders them: a sequence the paginator
    slices. Git says which commits (``rev-list`` from the branch's tip at the last sync, so
    the page and the index agree); their records come from the index in one query.

    Cursors pin the tip (``collab.api.pagination.Pinnable``) and hold an offset: git skips to
    it by walking, which costs little next to the page's query, and has no keyset to seek."""

    def __init__(self, repository: Repository, tip: str) -> None:
        self.repository = repository
        self.tip = tip
        self._count: int | None = None
        self._path: Path | None = None

    @property
    def snapshot(self) -> str:
        return self.tip

    def at(self, snapshot: str) -> "BranchHistory":
        """The same branch's history from an earlier tip (a cursor's): a commit's ancestry never
        changes, so a walk begun before a push goes on without shifting."""
        return BranchHistory(self.repository, snapshot)

    def count(self) -> int:
        if self._count is None:
            self._count = self._git(git.rev_count, self.tip)
        return self._count

    def _git(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
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


def pull_request_list(*, repository: Repository) -> QuerySet[PullRequest]:
    return PullRequest.objects.filter(repository=repository).order_by("-created_at", "-id")


def pull_request_get(*, user: User, pull_id: int | str) -> PullRequest | None:
    return (
        PullRequest.objects.filter(project_visibility_q(user, prefix="repository__project__"))
        .select_related("repository__project")
        .filter(pk=pull_id)
        .first()
    )


def review_list(*, pull: PullRequest) -> QuerySet[Review]:
    return Review.objects.filter(pull_request=pull).order_by("created_at", "id")
