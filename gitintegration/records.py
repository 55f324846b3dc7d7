"""The JSON of repositories, branches, commits, pull requests and reviews: one ``TypedDict``
and one builder each, used by the views, the services' event payloads and the schema's
serializers' test (``tests/test_records.py``). A value the server has not filled yet is
``None``, never ``""``."""

from typing import TypedDict
from urllib.parse import urlsplit, urlunsplit

from collab.api.renderers import iso_z

from .models import Branch, Commit, PullRequest, Repository, Review


def clone_url_display(url: str) -> str:
    """The clone URL without the password or token it may carry (``https://user:***@host``)."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class RepositoryRecord(TypedDict):
    id: int
    project_id: int
    name: str
    clone_url: str
    default_branch: str | None
    sync_status: str
    sync_error: str | None
    last_synced_at: str | None
    created_at: str
    updated_at: str


class BranchRecord(TypedDict):
    name: str
    commit_sha: str
    is_default: bool


class CommitRecord(TypedDict):
    sha: str
    repository_id: int
    author_name: str
    author_email: str
    message: str
    authored_at: str
    committed_at: str


class PullRequestRecord(TypedDict):
    id: int
    repository_id: int
    number: int
    title: str
    description: str
    head: str
    base: str
    state: str
    author_id: int | None
    head_sha: str | None
    base_sha: str | None
    merge_commit_sha: str | None
    merge_method: str | None
    merged_by_id: int | None
    created_at: str
    updated_at: str
    merged_at: str | None
    closed_at: str | None
    comment_count: int


class ReviewRecord(TypedDict):
    id: int
    pull_request_id: int
    author_id: int | None
    state: str
    body: str
    created_at: str


def repository_record(repository: Repository) -> RepositoryRecord:
    return {
        "id": repository.pk,
        "project_id": repository.project_id,
        "name": repository.name,
        "clone_url": clone_url_display(repository.clone_url),
        "default_branch": repository.default_branch or None,
        "sync_status": repository.sync_status,
        "sync_error": repository.sync_error or None,
        "last_synced_at": iso_z(repository.last_synced_at),
        "created_at": iso_z(repository.created_at),
        "updated_at": iso_z(repository.updated_at),
    }


def branch_record(branch: Branch) -> BranchRecord:
    return {"name": branch.name, "commit_sha": branch.commit_sha, "is_default": branch.is_default}


def commit_record(commit: Commit) -> CommitRecord:
    # Names, addresses and messages are what the commit's author wrote in git: kept as given.
    return {
        "sha": commit.sha,
        "repository_id": commit.repository_id,
        "author_name": commit.author_name,
        "author_email": commit.author_email,
        "message": commit.message,
        "authored_at": iso_z(commit.authored_at),
        "committed_at": iso_z(commit.committed_at),
    }


def pull_request_record(pull: PullRequest) -> PullRequestRecord:
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
        "head_sha": pull.head_sha or None,
        "base_sha": pull.base_sha or None,
        # Before a merge there is no merge commit nor method: null, not "".
        "merge_commit_sha": pull.merge_commit_sha or None,
        "merge_method": pull.merge_method or None,
        "merged_by_id": pull.merged_by_id,
        "created_at": iso_z(pull.created_at),
        "updated_at": iso_z(pull.updated_at),
        "merged_at": iso_z(pull.merged_at),
        "closed_at": iso_z(pull.closed_at),
        "comment_count": pull.comment_count,
    }


def review_record(review: Review) -> ReviewRecord:
    return {
        "id": review.pk,
        "pull_request_id": review.pull_request_id,
        "author_id": review.author_id,
        "state": review.state,
        "body": review.body,
        "created_at": iso_z(review.created_at),
    }
