"""Writes for comments.

Each service locks the comment's parent (the issue or pull request row) for its transaction,
keeps the parent's ``comment_count`` there, writes the comment, its mentions, the issue's
history row and the event in it, and queues the mention emails only after commit.
"""

from datetime import datetime, timedelta
from functools import partial
from typing import Any, cast

from celery import current_app
from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import User
from collab.api.exceptions import NotFound
from events.services import event_record
from gitintegration.models import PullRequest
from gitintegration.records import pull_request_record
from issues.models import Issue, IssueHistory
from issues.records import issue_record
from projects.models import Project
from projects.selectors import project_audience_q

from . import markdown
from .models import Comment, CommentRevision, Mention
from .records import CommentRecord, comment_record
from .selectors import mention_audience

Parent = Issue | PullRequest


def _parent_lock(parent: Parent) -> Parent:
    """The parent again, its row locked until commit: comments on one issue or pull request
    are counted one after another."""
    found: Parent | None
    if isinstance(parent, Issue):
        found = (
            Issue.objects.select_for_update(of=("self",))
            .select_related("project")
            .filter(pk=parent.pk)
            .first()
        )
    else:
        found = (
            PullRequest.objects.select_for_update(of=("self",))
            .select_related("repository__project")
            .filter(pk=parent.pk)
            .first()
        )
    if found is None:
        raise NotFound()
    return found


def parent_project(parent: Parent) -> Project:
    return parent.project if isinstance(parent, Issue) else parent.repository.project


def _count(parent: Parent, delta: int, *, at: datetime | None = None) -> None:
    parent.comment_count += delta
    # A comment dated in the past (an import) moves the parent's time on, never back.
    parent.updated_at = timezone.now() if at is None else max(parent.updated_at, at)
    parent.save(update_fields=["comment_count", "updated_at"])


def _event(
    kind: str,
    *,
    parent: Parent,
    record: CommentRecord,
    actor: User | None,
    changes: dict[str, Any] | None = None,
) -> None:
    project = parent_project(parent)
    data: dict[str, Any] = {"comment": record}
    if isinstance(parent, Issue):
        data["issue"] = issue_record(parent)
    else:
        data["pull_request"] = pull_request_record(parent)
    event_record(
        type=kind,
        workspace_id=project.workspace_id,
        project_id=project.pk,
        actor=actor,
        data=data,
        changes=changes,
    )


def _timeline(
    parent: Parent,
    *,
    actor: User | None,
    old: Any = None,
    new: Any = None,
    at: datetime | None = None,
) -> None:
    """A row in the issue's history, where the conversation sits beside the changes it led to
    (pull requests keep no history)."""
    if isinstance(parent, Issue):
        IssueHistory.objects.create(
            issue=parent,
            field="comment",
            old_value=old,
            new_value=new,
            actor=actor,
            created_at=at or timezone.now(),
        )


def _mention(
    comment: Comment,
    parent: Parent,
    project: Project,
    author: User | None,
    *,
    notify: bool = True,
) -> None:
    """Mention rows for the members this body names who may see the parent; the people already
    mentioned in an earlier version keep their row (and are not notified again). The emails
    go out after commit; without ``notify`` the rows are made settled (an imported
    conversation owes nobody an email, and the sweep must not send one either)."""
    users = mention_audience(
        project=project, handles=markdown.mentions(comment.body), author=author
    )
    if not users:
        return
    Mention.objects.bulk_create(
        [
            Mention(
                comment=comment,
                user=user,
                issue_id=comment.issue_id,
                pull_request_id=comment.pull_request_id,
                notified_at=None if notify else timezone.now(),
            )
            for user in users
        ],
        ignore_conflicts=True,
    )
    if notify:
        task = current_app.tasks["comments.tasks.mentions_notify"]
        transaction.on_commit(partial(task.delay, comment_id=comment.pk))


def comment_create(
    *,
    parent: Parent,
    actor: User | None,
    body: str,
    at: datetime | None = None,
    notify: bool = True,
) -> CommentRecord:
    """A new comment on an issue or a pull request; returns its record.

    An import gives ``at``, the time the comment was written in its source (the parent's
    ``updated_at`` moves to it only forward), and ``notify=False``: its mentions are recorded
    and nobody is emailed about an old conversation. ``actor`` is None for an author who has
    no account here."""
    with transaction.atomic():
        parent = _parent_lock(parent)
        project = parent_project(parent)
        now = at or timezone.now()
        comment = Comment.objects.create(
            project=project,
            issue=parent if isinstance(parent, Issue) else None,
            pull_request=parent if isinstance(parent, PullRequest) else None,
            author=actor,
            body=body,
            body_html=markdown.render(body),
            created_at=now,
            updated_at=now,
        )
        _count(parent, +1, at=at)
        _mention(comment, parent, project, actor, notify=notify)
        record = comment_record(comment)
        _timeline(parent, actor=actor, new=record, at=at)
        _event("comment.created", parent=parent, record=record, actor=actor)
    return record


def _comment_lock(comment: Comment) -> tuple[Comment, Parent]:
    parent = _parent_lock(cast(Parent, comment.issue or comment.pull_request))
    locked = Comment.objects.select_for_update().filter(pk=comment.pk).first()
    if locked is None:
        raise NotFound()
    return locked, parent


def comment_update(
    *,
    comment: Comment,
    actor: User | None,
    body: str,
    at: datetime | None = None,
    notify: bool = True,
) -> CommentRecord:
    """A new body; the one it replaces is kept (``comment_revisions``). The same body again
    changes nothing and records nothing. ``at`` and ``notify`` as for ``comment_create``."""
    with transaction.atomic():
        comment, parent = _comment_lock(comment)
        if body == comment.body:
            return comment_record(comment)
        now = at or timezone.now()
        CommentRevision.objects.create(
            comment=comment,
            body=comment.body,
            author_id=comment.author_id,
            created_at=comment.updated_at,
            replaced_at=now,
        )
        previous = comment.body
        comment.body = body
        comment.body_html = markdown.render(body)
        comment.edited = True
        comment.updated_at = now
        comment.save(update_fields=["body", "body_html", "edited", "updated_at"])
        _mention(comment, parent, parent_project(parent), actor, notify=notify)
        record = comment_record(comment)
        _timeline(
            parent,
            actor=actor,
            old={"comment_id": comment.pk, "body": previous},
            new={"comment_id": comment.pk, "body": body},
            at=at,
        )
        changes = {"body": {"previous": previous, "current": body}}
        _event("comment.updated", parent=parent, record=record, actor=actor, changes=changes)
    return record


def comment_delete(*, comment: Comment, actor: User) -> None:
    with transaction.atomic():
        comment, parent = _comment_lock(comment)
        record = comment_record(comment)
        comment.delete()
        _count(parent, -1)
        _timeline(parent, actor=actor, old=record)
        _event("comment.deleted", parent=parent, record=record, actor=actor)


def _mention_email(mention: Mention) -> tuple[str, str]:
    comment = mention.comment
    author = comment.author
    who = (author.name or f"@{author.handle}") if author else "Someone"
    parent: Parent = mention.issue or mention.pull_request  # type: ignore[assignment]  # one is set
    if isinstance(parent, Issue):
        what, path = f"issue #{parent.number}", f"/v1/issues/{parent.pk}/comments"
    else:
        what, path = f"pull request #{parent.number}", f"/v1/pulls/{parent.pk}/comments"
    subject = f"{who} mentioned you on {what} in {comment.project.name}: {parent.title}"
    message = (
        f"{who} mentioned you in a comment on {what} ({parent.title}) "
        f"in {comment.project.name}:\n\n{comment.body}\n\n"
        f"The conversation: {settings.PUBLIC_BASE_URL}{path}\n"
    )
    return subject, message


# Comments a sweep queues again, at most; mentions older than this are let go (their email
# failed for a day: it is news no more).
SWEEP_COMMENTS = 500
MENTION_REDRIVE_MAX_AGE = timedelta(days=1)


def mentions_sweep() -> int:
    """Queue again the mention emails nobody is sending: mentions not yet emailed
    MENTIONS_SWEEP_GRACE_SECONDS after they were made (their task was lost with a killed
    worker, or its retries ran out). ``mentions_notify`` claims each before it sends it, so one
    run twice, or beside a task still on its way, emails once. Returns how many comments were
    queued."""
    now = timezone.now()
    comment_ids = list(
        Mention.objects.filter(
            notified_at__isnull=True,
            created_at__lte=now - timedelta(seconds=settings.MENTIONS_SWEEP_GRACE_SECONDS),
            created_at__gte=now - MENTION_REDRIVE_MAX_AGE,
        )
        .order_by("comment_id")
        .values_list("comment_id", flat=True)
        .distinct()[:SWEEP_COMMENTS]
    )
    notify = current_app.tasks["comments.tasks.mentions_notify"]
    for comment_id in comment_ids:
        notify.delay(comment_id=comment_id)
    return len(comment_ids)


def mentions_notify(*, comment_id: int) -> int:
    """Email each person mentioned in the comment who has not been emailed for it yet; returns
    how many were.

    Each mention is first claimed for MENTIONS_SWEEP_GRACE_SECONDS by a conditional UPDATE,
    and its email sent with no transaction open: a mail server that hangs holds no lock (on
    SQLite, the one write lock every request needs). It is marked sent after the send; a
    failed send gives the claim back (the task retries), and one whose worker was killed
    lapses, for the sweep to send again. A second run finds nothing left to send."""
    sent = 0
    while True:
        mention = _mention_claim(comment_id=comment_id)
        if mention is None:
            return sent
        project = mention.comment.project
        # Whoever lost sight of the project since the comment was written hears nothing.
        still_sees = User.objects.filter(
            project_audience_q(project), pk=mention.user_id, status=User.Status.ACTIVE
        ).exists()
        try:
            if still_sees:
                subject, message = _mention_email(mention)
                send_mail(subject, message, None, [mention.user.email])
                sent += 1
        except BaseException:
            Mention.objects.filter(pk=mention.pk).update(notify_claimed_until=None)
            raise
        Mention.objects.filter(pk=mention.pk).update(notified_at=timezone.now())


def _mention_claim(*, comment_id: int) -> Mention | None:
    """The comment's next mention not yet emailed nor claimed by a live sender, claimed."""
    while True:
        now = timezone.now()
        unclaimed = Q(notify_claimed_until__isnull=True) | Q(notify_claimed_until__lt=now)
        mention = (
            Mention.objects.filter(unclaimed, comment_id=comment_id, notified_at__isnull=True)
            .select_related("user", "comment__author", "comment__project", "issue")
            .select_related("pull_request")
            .order_by("id")
            .first()
        )
        if mention is None:
            return None
        lease = now + timedelta(seconds=settings.MENTIONS_SWEEP_GRACE_SECONDS)
        taken = Mention.objects.filter(unclaimed, pk=mention.pk, notified_at__isnull=True).update(
            notify_claimed_until=lease
        )
        if taken:
            return mention
