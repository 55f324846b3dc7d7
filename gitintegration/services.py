"""Writes for repositories, pull requests and reviews.

Git work (fetch, merge, push) happens under the mirror's lock and before the database
transaction commits, so a refused merge or push changes no row, and every row change comes
with its event in one transaction. Pull request numbers come from a per-repository counter
row advanced with ``UPDATE ... RETURNING``, as issue numbers do.
"""

import hashlib
import hmac
import logging
import re
import secrets
import shutil
import time
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from celery import current_app
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import User
from collab.api.exceptions import Conflict, NotFound, ValidationFailed, foreign_key_violation
from collab.db.sequences import sequence_next
from collab.unset import UNSET, Maybe, given
from events.services import changes_diff, event_record, model_update
from issues.models import Issue
from issues.models import Status as IssueStatus
from issues.services import issue_update
from projects.models import Project

from . import git
from .metrics import GIT_SYNC_DURATION, GIT_SYNC_FAILURES
from .mirrors import clone_url_check, mirror_ready, mirror_unavailable
from .models import Branch, Commit, PullRequest, PullRequestSequence, Repository, Review
from .records import (
    clone_url_display,
    pull_request_record,
    repository_record,
    review_record,
)

logger = logging.getLogger("collab.git")

# "fixes #12", "Closes: #3", "resolved #7" (GitHub's keywords and their usual variants).
CLOSING_KEYWORDS = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b\s*:?\s*#(\d+)\b", re.IGNORECASE
)


# Repositories -----------------------------------------------------------------------------


def repository_create(
    *, project: Project, actor: User | None, name: str, clone_url: str
) -> Repository:
    """Register a repository and queue its first sync; returns it with its push secret."""
    clone_url = clone_url_check(clone_url=clone_url)
    try:
        with transaction.atomic():
            now = timezone.now()
            repository = Repository.objects.create(
                project=project,
                name=name,
                clone_url=clone_url,
                created_by=actor,
                created_at=now,
                updated_at=now,
            )
            event_record(
                type="repository.created",
                workspace_id=project.workspace_id,
                project_id=project.pk,
                actor=actor,
                data={"repository": repository_record(repository)},
            )
            _queue_sync(repository.pk)
    except IntegrityError as exc:
        if foreign_key_violation(exc):
            raise  # what it belongs to was deleted meanwhile: a 404
        raise ValidationFailed.field(
            "name", "This project has a repository of this name already."
        ) from None
    return repository


def repository_delete(*, repository: Repository, actor: User | None) -> None:
    repository_id = repository.pk
    with transaction.atomic():
        locked = Repository.objects.select_for_update().filter(pk=repository_id).first()
        if locked is None:
            raise NotFound()
        repository = locked
        event_record(
            type="repository.deleted",
            workspace_id=repository.project.workspace_id,
            project_id=repository.project_id,
            actor=actor,
            data={"repository": repository_record(repository)},
        )
        repository.delete()
        transaction.on_commit(lambda: _mirror_remove(repository_id))


def _mirror_remove(repository_id: int) -> None:
    with git.mirror_lock(repository_id):
        shutil.rmtree(git.mirror_path(repository_id), ignore_errors=True)


def mirrors_prune() -> list[int]:
    """Remove the mirrors whose repository is gone without ``repository_delete`` (a deleted
    project cascades its repositories in the database only)."""
    found = {
        int(path.name.removesuffix(".git")): path
        for path in git.storage_dir().glob("*.git")
        if path.name.removesuffix(".git").isdigit()
    }
    alive = set(Repository.objects.filter(pk__in=list(found)).values_list("pk", flat=True))
    gone = sorted(set(found) - alive)
    for repository_id in gone:
        _mirror_remove(repository_id)
        (git.storage_dir() / f"{repository_id}.lock").unlink(missing_ok=True)
    return gone


def _queue_sync(repository_id: int) -> None:
    # By name: the tasks module imports this one, so importing it back would close a cycle.
    sync = current_app.tasks["gitintegration.tasks.repository_sync_task"]
    transaction.on_commit(lambda: sync.delay(repository_id=repository_id))


def repository_sync_request(*, repository: Repository) -> None:
    """Ask for a sync after this transaction (the sync itself runs in a worker)."""
    with transaction.atomic():
        # ``updated_at``: when it was asked for, which the sweeper below times from.
        Repository.objects.filter(pk=repository.pk).exclude(
            sync_status=Repository.SyncStatus.SYNCING
        ).update(sync_status=Repository.SyncStatus.PENDING, updated_at=timezone.now())
        _queue_sync(repository.pk)


# Repositories a sweep queues again, at most.
SWEEP_REPOSITORIES = 100


def repositories_sync_stuck() -> list[int]:
    """Queue again the syncs nobody is working on: repositories left ``pending`` or
    ``syncing`` (a worker killed mid-sync, a message lost with it) for GIT_SYNC_STUCK_SECONDS,
    which is longer than a sync may run before its time limit kills it, so no sync still in
    progress is taken. Each is taken with a conditional UPDATE of ``updated_at`` (a lease: a
    second sweeper, or the next sweep, leaves it for another period). Returns their ids."""
    now = timezone.now()
    waiting = (Repository.SyncStatus.PENDING, Repository.SyncStatus.SYNCING)
    stuck = list(
        Repository.objects.filter(
            sync_status__in=waiting,
            updated_at__lt=now - timedelta(seconds=settings.GIT_SYNC_STUCK_SECONDS),
            project__status="active",
        )
        .order_by("updated_at")
        .values_list("pk", "updated_at")[:SWEEP_REPOSITORIES]
    )
    sync = current_app.tasks["gitintegration.tasks.repository_sync_task"]
    taken = []
    for repository_id, seen in stuck:
        if Repository.objects.filter(pk=repository_id, updated_at=seen).update(
            sync_status=Repository.SyncStatus.PENDING, updated_at=now
        ):
            sync.delay(repository_id=repository_id)
            taken.append(repository_id)
    if taken:
        logger.warning("Syncs of repositories %s were left undone; queued again", taken)
    return taken


def push_signature_valid(*, repository: Repository | None, body: bytes, signature: str) -> bool:
    """Whether ``signature`` is ``sha256=<hex HMAC-SHA256 of body>`` under the repository's
    secret (GitHub's ``X-Hub-Signature-256``), compared in constant time.

    Compared as bytes, so any header value (non-ASCII included) is simply wrong; a missing
    repository costs the same HMAC as an existing one, so neither the answer nor its timing
    tells which ids exist.
    """
    secret = repository.webhook_secret if repository is not None else _NO_REPOSITORY_SECRET
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    given = signature.strip().encode("utf-8", "replace")
    return hmac.compare_digest(expected.encode(), given) and repository is not None


_NO_REPOSITORY_SECRET = secrets.token_hex(32)


def repository_sync(*, repository_id: int) -> None:
    """Fetch the origin into the mirror, then in one transaction: new commits indexed,
    branches replaced, open pull requests brought up to date (merged ones marked merged),
    the repository's status, and the events. A failure keeps git's message in
    ``sync_error``. Safe to run twice: a second run finds nothing new."""
    repository = Repository.objects.select_related("project").filter(pk=repository_id).first()
    if repository is None or repository.project.is_archived:
        return
    Repository.objects.filter(pk=repository_id).update(
        sync_status=Repository.SyncStatus.SYNCING, updated_at=timezone.now()
    )
    started = time.perf_counter()
    try:
        with git.mirror_lock(repository_id):
            clone_url_check(clone_url=repository.clone_url)
            path = git.mirror_fetch(repository_id=repository_id, url=repository.clone_url)
            _sync_store(repository, path, was=(repository.sync_status, repository.default_branch))
        GIT_SYNC_DURATION.labels("synced").observe(time.perf_counter() - started)
    except (git.GitError, ValidationFailed, OSError) as exc:
        GIT_SYNC_DURATION.labels("failed").observe(time.perf_counter() - started)
        GIT_SYNC_FAILURES.inc()
        # OSError: the storage directory itself (full disk, permissions), kept as the error.
        message = (
            _validation_text(exc)
            if isinstance(exc, ValidationFailed)
            else _redacted(exc, repository)
        )
        logger.warning("Sync of repository %s failed: %s", repository_id, message)
        Repository.objects.filter(pk=repository_id).update(
            sync_status=Repository.SyncStatus.FAILED,
            sync_error=message[:4000],
            updated_at=timezone.now(),
        )


def _redacted(exc: Exception, repository: Repository) -> str:
    """git's message, without the password or token the clone URL may carry."""
    text = str(exc)
    password = urlsplit(repository.clone_url).password
    if password:
        text = text.replace(repository.clone_url, clone_url_display(repository.clone_url))
        text = text.replace(password, "***")
    return text


def _validation_text(exc: ValidationFailed) -> str:
    return " ".join(message for messages in exc.details.values() for message in messages)


def _sync_store(repository: Repository, path: Path, *, was: tuple[str, str]) -> None:
    tips = git.branches(path)
    default = git.default_branch(path)
    stored = dict(Branch.objects.filter(repository=repository).values_list("name", "commit_sha"))
    known = sorted(set(stored.values()))
    new_commits = git.commits_between(path, tips=sorted(set(tips.values())), known=known)
    with transaction.atomic():
        locked = Repository.objects.select_for_update().filter(pk=repository.pk).first()
        if locked is None:
            return
        repository = locked
        Commit.objects.bulk_create(
            [Commit(repository=repository, **asdict(commit)) for commit in new_commits],
            batch_size=1000,
            ignore_conflicts=True,
        )
        Branch.objects.filter(repository=repository).exclude(name__in=list(tips)).delete()
        Branch.objects.bulk_create(
            [
                Branch(repository=repository, name=name, commit_sha=sha, is_default=name == default)
                for name, sha in tips.items()
            ],
            update_conflicts=True,
            unique_fields=["repository", "name"],
            update_fields=["commit_sha", "is_default"],
        )
        repository.default_branch = default
        repository.sync_status = Repository.SyncStatus.SYNCED
        repository.sync_error = ""
        repository.last_synced_at = repository.updated_at = timezone.now()
        repository.save()
        # A periodic sync that finds nothing new records nothing.
        if stored != tips or new_commits or was != (Repository.SyncStatus.SYNCED, default):
            event_record(
                type="repository.synced",
                workspace_id=repository.project.workspace_id,
                project_id=repository.project_id,
                data={
                    "repository": repository_record(repository),
                    "new_commits": len(new_commits),
                    "branches": len(tips),
                },
            )
        _pull_requests_refresh(repository, path, tips)


def _pull_requests_refresh(repository: Repository, path: Path, tips: dict[str, str]) -> None:
    """Open pull requests follow their branches; one whose head the base now contains was
    merged outside the service and is marked merged."""
    for pull in PullRequest.objects.select_for_update().filter(
        repository=repository, state=PullRequest.State.OPEN
    ):
        base_tip = tips.get(pull.base)
        head_tip = tips.get(pull.head) or pull.head_sha
        if not base_tip or not head_tip or not git.object_exists(path, head_tip):
            continue
        if git.is_ancestor(path, head_tip, base_tip):
            messages = (
                git.messages_between(path, pull.base_sha, head_tip)
                if pull.base_sha and git.object_exists(path, pull.base_sha)
                else []
            )
            _mark_merged(
                pull,
                actor=None,
                merge_commit_sha=git.first_descendant(path, head_tip, base_tip),
                head_sha=head_tip,
                base_sha=pull.base_sha or base_tip,
                method="",
                messages=messages,
            )
        elif (pull.head_sha, pull.base_sha) != (head_tip, base_tip):
            before = {"head_sha": pull.head_sha, "base_sha": pull.base_sha}
            pull.head_sha, pull.base_sha = head_tip, base_tip
            pull.updated_at = timezone.now()
            pull.save(update_fields=["head_sha", "base_sha", "updated_at"])
            _event(
                pull, "pull_request.updated", actor=None, changes=changes_diff(before, _shas(pull))
            )


def _shas(pull: PullRequest) -> dict[str, Any]:
    return {"head_sha": pull.head_sha, "base_sha": pull.base_sha}


# Pull requests ----------------------------------------------------------------------------


def _event(
    pull: PullRequest,
    type: str,
    *,
    actor: User | None,
    changes: dict[str, Any] | None = None,
    **extra: Any,
) -> None:
    repository = pull.repository
    event_record(
        type=type,
        workspace_id=repository.project.workspace_id,
        project_id=repository.project_id,
        actor=actor,
        data={"pull_request": pull_request_record(pull), **extra},
        changes=changes,
    )


def _open_pair_taken(
    repository: Repository, head: str, base: str, *, exclude: int | None
) -> int | None:
    queryset = PullRequest.objects.filter(
        repository=repository, head=head, base=base, state=PullRequest.State.OPEN
    )
    if exclude is not None:
        queryset = queryset.exclude(pk=exclude)
    return queryset.values_list("number", flat=True).first()


def pull_request_create(
    *,
    repository: Repository,
    actor: User | None,
    title: str,
    head: str,
    base: str,
    description: str | None = "",
) -> PullRequest:
    """Open a pull request of ``head`` into ``base``, both branches of the last sync."""
    tips = dict(Branch.objects.filter(repository=repository).values_list("name", "commit_sha"))
    errors: dict[str, list[str]] = {}
    if head not in tips:
        errors["head"] = [f"The repository has no branch '{head}'."]
    if base not in tips:
        errors["base"] = [f"The repository has no branch '{base}'."]
    if not errors and head == base:
        errors["head"] = ["The head and the base must be different branches."]
    if errors:
        raise ValidationFailed(details=errors)
    with git.mirror_lock(repository.pk):
        path = mirror_ready(repository=repository, needs=[tips[head], tips[base]])
        try:
            contained = git.is_ancestor(path, tips[head], tips[base])
        except git.GitError as exc:
            raise mirror_unavailable(exc) from None
        if contained:
            raise ValidationFailed.field(
                "head", f"'{base}' already contains every commit of '{head}': nothing to merge."
            )
    try:
        with transaction.atomic():
            taken = _open_pair_taken(repository, head, base, exclude=None)
            if taken is not None:
                raise ValidationFailed.field(
                    "head", f"Pull request #{taken} from '{head}' into '{base}' is open already."
                )
            now = timezone.now()
            pull = PullRequest.objects.create(
                repository=repository,
                number=sequence_next(
                    PullRequestSequence, parent_field="repository", parent_id=repository.pk
                ),
                title=title,
                description=description or "",
                head=head,
                base=base,
                author=actor,
                head_sha=tips[head],
                base_sha=tips[base],
                created_at=now,
                updated_at=now,
            )
            _event(pull, "pull_request.opened", actor=actor)
    except IntegrityError as exc:
        if foreign_key_violation(exc):
            raise  # what it belongs to was deleted meanwhile: a 404
        # Another request opened the same pair between the check and the insert.
        raise ValidationFailed.field(
            "head", f"A pull request from '{head}' into '{base}' is open already."
        ) from None
    return pull


def _pull_lock(pull_id: int) -> PullRequest:
    pull = (
        PullRequest.objects.select_for_update(of=("self",))
        .select_related("repository__project")
        .filter(pk=pull_id)
        .first()
    )
    if pull is None:
        raise NotFound()
    return pull


def _snapshot(pull: PullRequest) -> dict[str, Any]:
    return {"title": pull.title, "description": pull.description, "state": pull.state}


def pull_request_update(
    *,
    pull: PullRequest,
    actor: User | None,
    title: Maybe[str] = UNSET,
    description: Maybe[str | None] = UNSET,
    state: Maybe[str] = UNSET,
) -> PullRequest:
    """Title, description, and ``state`` closed (close) or open (reopen). No change, no event."""
    texts = given(title=title, description=description)
    with transaction.atomic():
        pull = _pull_lock(pull.pk)
        repository = pull.repository
        with model_update(
            pull,
            snapshot=_snapshot,
            event_type=lambda changes: (
                "pull_request.closed"
                if changes.get("state", {}).get("current") == PullRequest.State.CLOSED
                else "pull_request.updated"
            ),
            payload=lambda pull: {"pull_request": pull_request_record(pull)},
            workspace_id=repository.project.workspace_id,
            project_id=repository.project_id,
            actor=actor,
            stamp="updated_at",
        ):
            if state is not UNSET and state != pull.state:
                _pull_state_check(pull, state)
                pull.closed_at = None if state == PullRequest.State.OPEN else timezone.now()
                pull.state = state
            for name, value in texts.items():
                setattr(pull, name, value or "")
    return pull


def _pull_state_check(pull: PullRequest, state: str) -> None:
    """409 unless the pull request may go from its state to ``state``."""
    if pull.state == PullRequest.State.MERGED or state == PullRequest.State.MERGED:
        raise Conflict(
            "A merged pull request stays merged; merge with POST /v1/pulls/:id/merge.",
            details={"state": pull.state},
        )
    if state == PullRequest.State.OPEN:
        taken = _open_pair_taken(pull.repository, pull.head, pull.base, exclude=pull.pk)
        if taken is not None:
            raise Conflict(
                f"Pull request #{taken} from '{pull.head}' into '{pull.base}' is open.",
                details={"open_pull_request": taken},
            )


def review_create(
    *, pull: PullRequest, actor: User | None, state: str, body: str | None = ""
) -> Review:
    with transaction.atomic():
        pull = _pull_lock(pull.pk)
        review = Review.objects.create(
            pull_request=pull, author=actor, state=state, body=body or ""
        )
        _event(pull, "pull_request.reviewed", actor=actor, review=review_record(review))
    return review


def _identity(user: User | None) -> git.Identity:
    if user is None:
        return _committer()
    return git.Identity(name=user.name or user.email, email=user.email)


def _committer() -> git.Identity:
    return git.Identity(name=settings.GIT_COMMITTER_NAME, email=settings.GIT_COMMITTER_EMAIL)


def _merge_message(pull: PullRequest, method: str) -> str:
    if method == "squash":
        return f"{pull.title} (#{pull.number})\n\n{pull.description}".rstrip() + "\n"
    return (
        f"Merge pull request #{pull.number} from {pull.head}\n\n{pull.title}\n\n"
        f"{pull.description}".rstrip()
        + "\n"
    )


def pull_request_merge(*, pull: PullRequest, actor: User | None, method: str) -> PullRequest:
    """Merge ``head`` into ``base`` by ``method`` (merge, squash, fast_forward) and push the
    result to the origin. A conflict, a branch gone, a base moved at the origin during the
    merge or a pull request no longer open answers 409, and nothing changes."""
    repository = pull.repository
    with git.mirror_lock(repository.pk):
        if pull.state != PullRequest.State.OPEN:
            raise Conflict(
                f"This pull request is {pull.state}; only open ones can be merged.",
                details={"state": pull.state},
            )
        try:
            clone_url_check(clone_url=repository.clone_url)
            path = git.mirror_fetch(repository_id=repository.pk, url=repository.clone_url)
            tips = git.branches(path)
        except git.GitError as exc:
            raise Conflict(
                f"The repository cannot be fetched: {_redacted(exc, repository)}"
            ) from None
        missing = [name for name in (pull.head, pull.base) if name not in tips]
        if missing:
            raise Conflict(
                f"The branch '{missing[0]}' no longer exists.", details={"branch": missing[0]}
            )
        head_sha, base_sha = tips[pull.head], tips[pull.base]
        if git.is_ancestor(path, head_sha, base_sha):
            raise Conflict(
                f"'{pull.base}' already contains '{pull.head}': nothing to merge. The next sync "
                "marks the pull request merged."
            )
        with transaction.atomic():
            pull = _pull_lock(pull.pk)
            if pull.state != PullRequest.State.OPEN:
                raise Conflict(
                    f"This pull request is {pull.state}; only open ones can be merged.",
                    details={"state": pull.state},
                )
            try:
                new_sha = git.merge_commit_create(
                    path,
                    base_sha=base_sha,
                    head_sha=head_sha,
                    method=method,
                    message=_merge_message(pull, method),
                    author=_identity(actor) if method != "squash" else _squash_author(pull),
                    committer=_committer(),
                )
            except git.MergeConflict as exc:
                raise Conflict(str(exc), details={"head": pull.head, "base": pull.base}) from None
            messages = git.messages_between(path, base_sha, head_sha)
            _mark_merged(
                pull,
                actor=actor,
                merge_commit_sha=new_sha,
                head_sha=head_sha,
                base_sha=base_sha,
                method=method,
                messages=messages,
            )
            try:
                # Last, so that a refused push rolls every row back with it.
                git.push_branch(
                    path,
                    url=repository.clone_url,
                    branch=pull.base,
                    new_sha=new_sha,
                    expected_sha=base_sha,
                )
            except git.GitError as exc:
                raise Conflict(
                    f"The origin refused the push (has '{pull.base}' moved?): "
                    f"{_redacted(exc, repository)}",
                    details={"base": pull.base},
                ) from None
            _queue_sync(repository.pk)
    return pull


def _squash_author(pull: PullRequest) -> git.Identity:
    return _identity(pull.author)


def _mark_merged(
    pull: PullRequest,
    *,
    actor: User | None,
    merge_commit_sha: str,
    head_sha: str,
    base_sha: str,
    method: str,
    messages: list[str],
) -> None:
    now = timezone.now()
    before = _snapshot(pull)
    pull.state = PullRequest.State.MERGED
    pull.merge_commit_sha = merge_commit_sha
    pull.merge_method = method
    pull.head_sha, pull.base_sha = head_sha, base_sha
    pull.merged_by = actor
    pull.merged_at = pull.updated_at = now
    pull.save()
    _event(pull, "pull_request.merged", actor=actor, changes=changes_diff(before, _snapshot(pull)))
    _issues_close(pull, actor=actor, texts=[pull.title, pull.description, *messages])


def closing_references(texts: list[str]) -> list[int]:
    """Issue numbers named after a closing keyword, in order of first mention."""
    numbers = (int(match) for text in texts for match in CLOSING_KEYWORDS.findall(text or ""))
    return list(dict.fromkeys(number for number in numbers if 0 < number < 2**31))


def _issues_close(pull: PullRequest, *, actor: User | None, texts: list[str]) -> None:
    numbers = closing_references(texts)
    if not numbers:
        return
    issues = Issue.objects.filter(
        project_id=pull.repository.project_id, number__in=numbers
    ).exclude(status=IssueStatus.CLOSED)
    for issue in issues.order_by("number"):
        issue_update(
            issue=issue,
            actor=actor,
            status=IssueStatus.CLOSED,
            source=f"pull_request #{pull.number}",
        )
