"""Writes for issues and labels.

Each service owns its transaction and writes, in it, the change, the issue's history rows,
the per-status counters and the event. Issue numbers come from a per-project counter row
advanced with ``UPDATE ... RETURNING``: concurrent creates queue on that row and each gets
the next number, with no gaps and no duplicates.
"""

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, QuerySet
from django.utils import timezone

from accounts.models import User
from collab.api import bulk
from collab.api.acting import actor_detail_of
from collab.api.exceptions import ApiError, NotFound, ValidationFailed, foreign_key_violation
from collab.api.routers import id_or_none
from collab.db.prepared import PreparedQuery
from collab.db.sequences import sequence_next, sequence_next_with_id, sequence_take
from collab.db.writebatch import WriteBatch
from collab.unset import UNSET, Maybe, given
from events.services import changes_diff, event_record, event_record_many, model_update
from projects.models import Project
from projects.selectors import project_seen

from .models import (
    PRIORITY_RANK,
    Issue,
    IssueHistory,
    IssueSequence,
    IssueStatusCount,
    Label,
    Status,
)
from .records import IssueRecord, issue_record_from, issue_records, label_record
from .selectors import (
    assignee_allowed,
    assignee_id_allowed,
    issue_from_row,
    issue_rows,
    labels_named,
)

TRACKED_FIELDS = ("title", "description", "type", "priority", "status", "assignee_id", "labels")


def _adjust_counts(
    project_id: int, deltas: dict[str, int], *, batch: WriteBatch | None = None
) -> None:
    """Add ``deltas`` (``{status: delta}``) to the project's counters in one statement (in
    ``batch`` when given), making the rows missing (``INSERT ... ON CONFLICT DO UPDATE``, on
    PostgreSQL and SQLite alike).

    The rows are written in the order of their statuses, so concurrent transactions lock them
    in the same order. (On PostgreSQL each such insert draws an id from the table's sequence
    even when it updates: a bigint, it will not run out.)
    """
    rows = [(status, delta) for status, delta in sorted(deltas.items()) if delta]
    if not rows:
        return
    table = IssueStatusCount._meta.db_table
    # Table and columns are the model's own, never input; the values go as parameters.
    sql = (
        f'INSERT INTO {table} (project_id, status, "count") '  # noqa: S608
        f"VALUES {', '.join(['(%s, %s, %s)'] * len(rows))} "
        f'ON CONFLICT (project_id, status) DO UPDATE SET "count" = {table}."count" + '
        'EXCLUDED."count"'
    )
    params = [value for status, delta in rows for value in (project_id, status, delta)]
    if batch is not None:
        batch.add(sql, params)
        return
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def issue_counts_rebuild(*, project: Project) -> None:
    """Recount a project's issues per status (after bulk loads that bypass the services)."""
    with transaction.atomic():
        IssueStatusCount.objects.filter(project=project).delete()
        counts = dict.fromkeys(Status.values, 0)
        counts.update(
            Issue.objects.filter(project=project)
            .order_by()
            .values_list("status")
            .annotate(count=Count("id"))
        )
        IssueStatusCount.objects.bulk_create(
            IssueStatusCount(project=project, status=status, count=count)
            for status, count in counts.items()
        )
        last = (
            Issue.objects.filter(project=project)
            .order_by("-number")
            .values_list("number", flat=True)
            .first()
        )
        IssueSequence.objects.update_or_create(project=project, defaults={"last_number": last or 0})


def _check_assignee(project: Project, assignee_id: int | None) -> None:
    refusal = _assignee_refusal(project, assignee_id)
    if refusal is not None:
        raise refusal


def _resolve_assignee(project: Project, assignee_id: int | None) -> User | None:
    if assignee_id is None:
        return None
    assignee = User.objects.filter(pk=assignee_id).first()
    if assignee is None or not assignee_allowed(project=project, user=assignee):
        raise ValidationFailed.field(
            "assignee_id", "The assignee must be an active user who can see this project."
        )
    return assignee


def _resolve_labels(project: Project, names: list[str]) -> list[Label]:
    """The project's labels of these names, creating the missing ones."""
    wanted = list(dict.fromkeys(name.strip() for name in names if name.strip()))
    if not wanted:
        return []
    found = labels_named(project_id=project.pk, names=wanted)
    if len(found) < len(wanted):
        have = {label.name for label in found}
        Label.objects.bulk_create(
            [Label(project=project, name=name) for name in wanted if name not in have],
            ignore_conflicts=True,
        )
        found = labels_named(project_id=project.pk, names=wanted)
    # In the database's order of names: the order the issue's record lists them in.
    return found


def _link_labels(issue_id: int, label_ids: Sequence[int], batch: WriteBatch) -> None:
    through = Issue.labels.through
    batch.insert([through(issue_id=issue_id, label_id=label_id) for label_id in label_ids])


def _snapshot(issue: Issue, labels: list[str]) -> dict[str, Any]:
    return {
        "title": issue.title,
        "description": issue.description,
        "type": issue.type,
        "priority": issue.priority,
        "status": issue.status,
        "assignee_id": issue.assignee_id,
        "labels": sorted(labels),
    }


def _apply_status(issue: Issue, status: str, now: datetime) -> None:
    if status == issue.status:
        return
    if status == Status.CLOSED:
        issue.closed_at = now
    elif issue.status == Status.CLOSED:
        issue.closed_at = None
    issue.status = status


def issue_create(
    *,
    project: Project,
    actor: User | None,
    title: str,
    description: str | None = "",
    type: str | None = None,
    priority: str | None = None,
    status: str | None = None,
    assignee_id: int | None = None,
    labels: list[str] | None = None,
) -> Issue:
    """A new issue with the next number of its project; ``None`` takes the default.

    The issue carries its ``record`` as written (for the answer, without reading it back).
    Its writes (the row, its label links, the counter, its history row and its event) go to
    the database as one batch once its number and id are drawn (``collab.db.writebatch``).
    """
    # Refused before the transaction begins: it makes no savepoint of its own (see _atomic).
    _check_assignee(project, assignee_id)
    with _atomic():
        label_rows = _resolve_labels(project, labels or [])
        now = timezone.now()
        status = status or Status.OPEN
        priority = priority or Issue._meta.get_field("priority").default
        issue = Issue(
            project=project,
            title=title,
            description=description or "",
            type=type or Issue._meta.get_field("type").default,
            priority=priority,
            priority_rank=PRIORITY_RANK[priority],
            status=status,
            assignee_id=assignee_id,
            reporter=actor,
            created_at=now,
            updated_at=now,
            closed_at=now if status == Status.CLOSED else None,
        )
        # The project's number as late as can be: the sequence row stays locked until
        # commit, and concurrent creates in the project wait for it from here on.
        issue.number, issue.pk = sequence_next_with_id(
            IssueSequence, parent_field="project", parent_id=project.pk, id_of=Issue
        )
        batch = WriteBatch()
        if issue.pk is None:
            # No id drawn beforehand (not PostgreSQL): the insert gives it, and goes alone.
            issue.save(force_insert=True)
        else:
            batch.insert([issue])
        _created_write(issue, label_rows, actor=actor, batch=batch)
    return issue


def issue_import(
    *,
    project: Project,
    actor: User | None,
    number: int,
    title: str,
    description: str = "",
    type: str | None = None,
    status: str = Status.OPEN,
    assignee_id: int | None = None,
    labels: list[str] | None = None,
    created_at: datetime,
    updated_at: datetime,
    closed_at: datetime | None = None,
    source: str = "",
) -> Issue:
    """An issue brought in from another tracker, with its number and its times: written as
    ``issue_create`` writes one (its label links, the counter, its "created" history row, at
    the time it was created there, and its ``issue.created`` event, marked with ``source``).

    It keeps ``number`` when that is above every number the project handed out, and takes the
    next one otherwise (``sequence_take``): no number a deleted issue held comes back.
    """
    _check_assignee(project, assignee_id)
    with _atomic():
        label_rows = _resolve_labels(project, labels or [])
        priority = Issue._meta.get_field("priority").default
        issue = Issue(
            project=project,
            title=title,
            description=description,
            type=type or Issue._meta.get_field("type").default,
            priority=priority,
            priority_rank=PRIORITY_RANK[priority],
            status=status,
            assignee_id=assignee_id,
            reporter=actor,
            created_at=created_at,
            updated_at=updated_at,
            closed_at=(closed_at or updated_at) if status == Status.CLOSED else None,
        )
        issue.number = sequence_take(
            IssueSequence, parent_field="project", parent_id=project.pk, wanted=number
        )
        issue.save(force_insert=True)
        _created_write(issue, label_rows, actor=actor, batch=WriteBatch(), source=source)
    return issue


def _created_write(
    issue: Issue,
    label_rows: list[Label],
    *,
    actor: User | None,
    batch: WriteBatch,
    source: str = "",
) -> None:
    """What every new issue brings beside its row, in ``batch`` (run here): its label links,
    the project's counter, its "created" history row at its ``created_at`` and its
    ``issue.created`` event (marked with ``source`` when it came from elsewhere)."""
    _link_labels(issue.pk, [label.pk for label in label_rows], batch)
    _adjust_counts(issue.project_id, {issue.status: 1}, batch=batch)
    record = issue_record_from(issue, [label.name for label in label_rows])
    issue.record = dict(record)
    batch.insert(
        [
            IssueHistory(
                issue_id=issue.pk,
                field="created",
                new_value=record,
                actor=actor,
                actor_detail=actor_detail_of(actor),
                source=source,
                created_at=issue.created_at,
            )
        ]
    )
    event_record(
        type="issue.created",
        workspace_id=issue.project.workspace_id,
        project_id=issue.project_id,
        actor=actor,
        data={"issue": record, **({"source": source} if source else {})},
        batch=batch,
    )
    batch.run()


def issue_create_many(
    *,
    project: Project,
    actor: User | None,
    items: Sequence[tuple[int, dict[str, Any]]],
    atomic: bool,
) -> list[dict[str, Any]]:
    """Several new issues of one project, validated items ``(index, fields)`` of a bulk
    request, written in a handful of statements whatever their number: their labels at once,
    their numbers in one step (consecutive, in input order), one insert each for the issues,
    their label links, their history and their events. An item whose assignee may not be
    assigned is answered with that error (``atomic``: the request is, before any write)."""
    results: list[dict[str, Any]] = []
    assignees: dict[int, User | None] = {}
    accepted: list[tuple[int, dict[str, Any]]] = []
    for index, fields in items:
        assignee_id = fields.get("assignee_id")
        try:
            if assignee_id is not None and assignee_id not in assignees:
                assignees[assignee_id] = _resolve_assignee(project, assignee_id)
        except ValidationFailed as exc:
            results.append(bulk.failure(index, exc))
            continue
        accepted.append((index, fields))
    if atomic:
        bulk.raise_first(results)
    if not accepted:
        return results
    with transaction.atomic():
        names = [name for _, fields in accepted for name in fields.get("labels") or []]
        labels = _resolve_labels(project, names)  # in the database's order of names
        label_ids = {label.name: label.pk for label in labels}
        now = timezone.now()
        issues = [
            Issue(
                project=project,
                title=fields["title"],
                description=fields.get("description") or "",
                type=fields.get("type") or Issue._meta.get_field("type").default,
                priority=fields.get("priority") or Issue._meta.get_field("priority").default,
                status=fields.get("status") or Status.OPEN,
                assignee=assignees.get(fields.get("assignee_id")),  # type: ignore[arg-type]
                reporter=actor,
                created_at=now,
                updated_at=now,
            )
            for _, fields in accepted
        ]
        last = sequence_next(
            IssueSequence, parent_field="project", parent_id=project.pk, count=len(issues)
        )
        for offset, issue in enumerate(issues):
            issue.number = last - len(issues) + 1 + offset
            issue.priority_rank = PRIORITY_RANK[issue.priority]
            issue.closed_at = now if issue.status == Status.CLOSED else None
        Issue.objects.bulk_create(issues)
        own_labels = [
            [label.name for label in labels if label.name in set(fields.get("labels") or [])]
            for _, fields in accepted
        ]
        through = Issue.labels.through
        through.objects.bulk_create(
            through(issue_id=issue.pk, label_id=label_ids[name])
            for issue, names_of in zip(issues, own_labels, strict=True)
            for name in names_of
        )
        _adjust_counts(project.pk, dict(Counter(issue.status for issue in issues)))
        records = [
            issue_record_from(issue, names_of)
            for issue, names_of in zip(issues, own_labels, strict=True)
        ]
        detail = actor_detail_of(actor)
        IssueHistory.objects.bulk_create(
            IssueHistory(
                issue=issue,
                field="created",
                new_value=record,
                actor=actor,
                actor_detail=detail,
                created_at=now,
            )
            for issue, record in zip(issues, records, strict=True)
        )
        event_record_many(
            [
                {
                    "type": "issue.created",
                    "workspace_id": project.workspace_id,
                    "project_id": project.pk,
                    "actor": actor,
                    "data": {"issue": record},
                }
                for record in records
            ]
        )
    for (index, _), record in zip(accepted, records, strict=True):
        results.append(bulk.item_result(index, 201, dict(record)))
    return sorted(results, key=lambda result: result["index"])


def issue_update_many(
    *,
    actor: User | None,
    items: Sequence[tuple[int, tuple[Issue, dict[str, Any]]]],
    atomic: bool,
) -> list[dict[str, Any]]:
    """``issue_update`` of each ``(index, (issue, fields))`` of a bulk request, each in its own
    savepoint, all in one transaction: one history row and one event per change, as alone."""

    def apply(pair: tuple[Issue, dict[str, Any]]) -> tuple[int, dict[str, Any]]:
        issue, fields = pair
        return 200, dict(issue_update(issue=issue, actor=actor, **fields)[1])

    return bulk.apply_each(items, apply, atomic=atomic)


def _atomic() -> transaction.Atomic:
    """The transaction of one issue write.

    Inside another transaction (an idempotent request's, a conditional write's, a bulk item's
    savepoint) it makes no savepoint of its own, which would add two statements to every
    write. That is safe because the services raise their refusals (an assignee who may not be
    assigned, an issue deleted meanwhile) only outside it, before anything is written: an
    exception from within is a failure the enclosing transaction cannot carry on from anyway
    (PostgreSQL refuses every statement after a failed one until the rollback).
    """
    return transaction.atomic(savepoint=False)


@dataclass
class LockedIssue:
    """An issue read for a change, its row locked until the transaction ends."""

    issue: Issue  # with its project
    labels: list[tuple[int, str]]  # (id, name) of its labels, in the database's order of names


def _locking_rows(*, pk: int, reader_id: int | None = None) -> QuerySet[Issue, dict[str, Any]]:
    issues = Issue.objects.select_for_update(of=("self",)).filter(pk=pk)
    labels = issues.annotate(label_pk=F("labels__id"), label_name=F("labels__name"))
    return issue_rows(
        labels.order_by("label_name"), reader_id=reader_id, extra=("label_pk", "label_name")
    )


# Compiled once (collab.db.prepared): every change of an issue reads it so.
_LOCKING_READ = PreparedQuery(_locking_rows, pk=int)
_LOCKING_READ_FOR = PreparedQuery(_locking_rows, pk=int, reader_id=int)


def _issue_lock(issue_id: int | str, *, reader: User | None = None) -> LockedIssue | None:
    """The issue, its row locked until the transaction ends, with its project and its labels,
    in one query (a row per label); None when it is gone (deleted by another request since
    the caller read it). With ``reader``, the reader's role and team seat come with it, as
    ``issues.selectors.issue_get`` reads them, and None also when they may not see it.

    Only the issue's row is locked: a lock on the project's row would hold up every create in
    the project, whose foreign key check takes a share lock on it at commit, and with the
    counter rows it deadlocks. Its label links change only under this lock, so the names
    read with it are the issue's until the transaction ends.
    """
    pk = id_or_none(issue_id)
    if pk is None:
        return None
    if reader is None:
        read, rows = _LOCKING_READ, _LOCKING_READ.rows(pk=pk)
    else:
        read, rows = _LOCKING_READ_FOR, _LOCKING_READ_FOR.rows(pk=pk, reader_id=reader.pk)
    if not rows:
        return None
    issue = issue_from_row(rows[0], alias=read.alias)
    if reader is not None and not project_seen(issue.project, user=reader):
        return None
    labels = [(row["label_pk"], row["label_name"]) for row in rows if row["label_pk"] is not None]
    return LockedIssue(issue, labels)


@contextmanager
def issue_locked(*, issue_id: int | str, reader: User) -> Iterator[LockedIssue | None]:
    """The issue as ``reader`` may see it (None when they may not, or it is not there), locked
    until the block ends: one query where a read and then ``issue_update``'s own locking read
    would be two. Hand it to ``issue_update`` within the block; an exception from the block
    writes nothing (inside another transaction the block is a savepoint)."""
    with transaction.atomic():
        yield _issue_lock(issue_id, reader=reader)


def _assignee_refusal(project: Project, assignee_id: int | None) -> ValidationFailed | None:
    if assignee_id is None or assignee_id_allowed(project=project, user_id=assignee_id):
        return None
    return ValidationFailed.field(
        "assignee_id", "The assignee must be an active user who can see this project."
    )


def _update_refusal(locked: LockedIssue | None, data: dict[str, Any]) -> ApiError | None:
    if locked is None:
        return NotFound()
    # Checked only for a new assignee: keeping one who has since lost sight of the project is
    # allowed.
    if "assignee_id" in data and data["assignee_id"] != locked.issue.assignee_id:
        return _assignee_refusal(locked.issue.project, data["assignee_id"])
    return None


def issue_update(
    *,
    issue: Issue | LockedIssue,
    actor: User | None,
    title: Maybe[str] = UNSET,
    description: Maybe[str | None] = UNSET,
    type: Maybe[str | None] = UNSET,
    priority: Maybe[str] = UNSET,
    status: Maybe[str] = UNSET,
    assignee_id: Maybe[int | None] = UNSET,
    labels: Maybe[list[str] | None] = UNSET,
    source: str = "",
    at: datetime | None = None,
) -> tuple[Issue, IssueRecord]:
    """Apply the fields given (``None`` clears a text field); returns the issue and its
    record. No change, no event. ``at`` dates the change (an import keeps the time it was made
    in its source); now by default.

    Costs, besides the assignee's check and the labels' lookup when they are given, the
    locking read (none for an issue from ``issue_locked``, within its block) and, when
    something changed, one batch of writes (``collab.db.writebatch``): the row, its label links,
    the counters, the history rows and the event.
    """
    data = given(
        title=title,
        description=description,
        type=type,
        priority=priority,
        status=status,
        assignee_id=assignee_id,
        labels=labels,
    )
    with _atomic():
        locked = issue if isinstance(issue, LockedIssue) else _issue_lock(issue.pk)
        refusal = _update_refusal(locked, data)
        changed = None
        if locked is not None and refusal is None:
            changed = _issue_change(locked, data, actor=actor, source=source, at=at)
    if changed is None:
        # Nothing was written: the refusal leaves the transaction as it found it (_atomic).
        raise refusal or NotFound()
    return changed


def _issue_change(
    locked: LockedIssue,
    data: dict[str, Any],
    *,
    actor: User | None,
    source: str,
    at: datetime | None = None,
) -> tuple[Issue, IssueRecord]:
    issue, project = locked.issue, locked.issue.project
    current_labels = [name for _pk, name in locked.labels]
    before = _snapshot(issue, current_labels)
    now = at or timezone.now()
    if "assignee_id" in data:
        issue.assignee_id = data["assignee_id"]
    for name in ("title", "description", "type"):
        if name in data:
            setattr(issue, name, data[name] if data[name] is not None else "")
    if "priority" in data:
        issue.priority = data["priority"]
        issue.priority_rank = PRIORITY_RANK[issue.priority]
    if "status" in data:
        _apply_status(issue, data["status"], now)
    new_labels: list[Label] | None = None
    if "labels" in data:
        new_labels = _resolve_labels(project, data["labels"] or [])
    labels_now = [label.name for label in new_labels] if new_labels is not None else current_labels
    after = _snapshot(issue, labels_now)
    changes = changes_diff(before, after)
    if not changes:
        return issue, issue_record_from(issue, current_labels)
    issue.updated_at = now
    batch = WriteBatch()
    batch.update(Issue.objects.filter(pk=issue.pk), **_changed_columns(issue, changes))
    if new_labels is not None and "labels" in changes:
        _relink_labels(issue.pk, [pk for pk, _name in locked.labels], new_labels, batch)
    if "status" in changes:
        _adjust_counts(project.pk, {before["status"]: -1, after["status"]: 1}, batch=batch)
    detail = actor_detail_of(actor)
    batch.insert(
        [
            IssueHistory(
                issue_id=issue.pk,
                field=name,
                old_value=change["previous"],
                new_value=change["current"],
                actor=actor,
                actor_detail=detail,
                source=source,
                created_at=now,
            )
            for name, change in changes.items()
        ]
    )
    record = issue_record_from(issue, labels_now)
    event_record(
        type=_event_type(changes),
        workspace_id=project.workspace_id,
        project_id=project.pk,
        actor=actor,
        data={"issue": record, **({"source": source} if source else {})},
        changes=changes,
        batch=batch,
    )
    batch.run()
    return issue, record


def _changed_columns(issue: Issue, changes: dict[str, Any]) -> dict[str, Any]:
    """The columns a change writes: those of the fields changed, what follows from them, and
    the time of the change (the other columns are left as they are, a comment count too)."""
    columns = {
        name: getattr(issue, name)
        for name in ("title", "description", "type", "priority", "status", "assignee_id")
        if name in changes
    }
    if "priority" in changes:
        columns["priority_rank"] = issue.priority_rank
    if "status" in changes:
        columns["closed_at"] = issue.closed_at
    columns["updated_at"] = issue.updated_at
    return columns


def _relink_labels(
    issue_id: int, current_ids: list[int], labels: list[Label], batch: WriteBatch
) -> None:
    """``issue.labels.set(labels)`` in the batch: the links gone deleted, the new ones made."""
    wanted = [label.pk for label in labels]
    gone = sorted(set(current_ids) - set(wanted))
    if gone:
        batch.delete(Issue.labels.through.objects.filter(issue_id=issue_id, label_id__in=gone))
    _link_labels(issue_id, [pk for pk in wanted if pk not in set(current_ids)], batch)


def _event_type(changes: dict[str, Any]) -> str:
    status = changes.get("status")
    if status and status["current"] == Status.CLOSED:
        return "issue.closed"
    if status and status["previous"] == Status.CLOSED:
        return "issue.reopened"
    return "issue.updated"


def issue_delete(*, issue: Issue, actor: User | None) -> None:
    with transaction.atomic():
        locked = _issue_lock(issue.pk)
        if locked is None:
            raise NotFound()
        issue = locked.issue
        record = issue_record_from(issue, [name for _pk, name in locked.labels])
        _adjust_counts(issue.project_id, {issue.status: -1})
        event_record(
            type="issue.deleted",
            workspace_id=issue.project.workspace_id,
            project_id=issue.project_id,
            actor=actor,
            data={"issue": record},
        )
        issue.delete()


# Labels ---------------------------------------------------------------------------------


def label_create(
    *,
    project: Project,
    actor: User | None,
    name: str,
    color: str | None = None,
    description: str = "",
) -> Label:
    try:
        with transaction.atomic():
            label = Label.objects.create(
                project=project,
                name=name,
                color=color or Label._meta.get_field("color").default,
                description=description,
            )
            event_record(
                type="label.created",
                workspace_id=project.workspace_id,
                project_id=project.pk,
                actor=actor,
                data={"label": label_record(label)},
            )
    except IntegrityError as exc:
        if foreign_key_violation(exc):
            raise  # what it belongs to was deleted meanwhile: a 404
        raise ValidationFailed.field("name", "A label with this name exists already.") from None
    return label


def label_update(
    *,
    label: Label,
    actor: User | None,
    name: Maybe[str] = UNSET,
    color: Maybe[str] = UNSET,
    description: Maybe[str] = UNSET,
) -> Label:
    fields = ("name", "color", "description")
    data = given(name=name, color=color, description=description)
    renamed = None
    try:
        with transaction.atomic():
            with model_update(
                label,
                snapshot=lambda label: {name: getattr(label, name) for name in fields},
                event_type="label.updated",
                payload=lambda label: {"label": label_record(label)},
                workspace_id=label.project.workspace_id,
                project_id=label.project_id,
                actor=actor,
            ) as update:
                if "name" in data and data["name"] != label.name:
                    renamed = _label_issues_touch(label)
                for name, value in data.items():
                    setattr(label, name, value)
            if renamed:
                previous_name = update.before["name"]
                _record_label_change(
                    label.project,
                    *renamed,
                    actor=actor,
                    previous=lambda names: [
                        previous_name if name == label.name else name for name in names
                    ],
                )
    except IntegrityError as exc:
        if foreign_key_violation(exc):
            raise  # what it belongs to was deleted meanwhile: a 404
        raise ValidationFailed.field("name", "A label with this name exists already.") from None
    return label


def label_delete(*, label: Label, actor: User | None) -> None:
    with transaction.atomic():
        event_record(
            type="label.deleted",
            workspace_id=label.project.workspace_id,
            project_id=label.project_id,
            actor=actor,
            data={"label": label_record(label)},
        )
        project, name = label.project, label.name
        touched = _label_issues_touch(label)
        label.delete()
        _record_label_change(project, *touched, actor=actor, previous=lambda names: [*names, name])


# Issues whose history rows and events are written per query batch.
LABEL_CHANGE_BATCH = 500


def _label_issues_touch(label: Label) -> tuple[list[int], datetime]:
    """Mark now as the update time of every issue carrying the label, before the label itself
    changes: issue edits lock the issue, then the labels they set, so taking the issues first
    keeps a concurrent edit and this change from waiting on each other."""
    issue_ids = list(label.issues.order_by("pk").values_list("pk", flat=True))
    now = timezone.now()
    for start in range(0, len(issue_ids), LABEL_CHANGE_BATCH):
        batch = issue_ids[start : start + LABEL_CHANGE_BATCH]
        Issue.objects.filter(pk__in=batch).update(updated_at=now)
    return issue_ids, now


def _record_label_change(
    project: Project,
    issue_ids: list[int],
    now: datetime,
    *,
    actor: User | None,
    previous: Callable[[list[str]], list[str]],
) -> None:
    """A label renamed or deleted changed the labels of every issue carrying it: each gets its
    ``labels`` history row and its ``issue.updated`` event, as if edited one by one.

    ``previous(names)`` gives an issue's label names before the change from those after it.
    Called inside the label's transaction, once the label is changed; costs a few queries
    per LABEL_CHANGE_BATCH issues plus one insert per event.
    """
    for start in range(0, len(issue_ids), LABEL_CHANGE_BATCH):
        batch = issue_ids[start : start + LABEL_CHANGE_BATCH]
        records = issue_records(Issue.objects.filter(pk__in=batch).order_by("pk"))
        history = []
        detail = actor_detail_of(actor)
        for record in records:
            change = {
                "previous": sorted(previous(record["labels"])),
                "current": sorted(record["labels"]),
            }
            history.append(
                IssueHistory(
                    issue_id=record["id"],
                    field="labels",
                    old_value=change["previous"],
                    new_value=change["current"],
                    actor=actor,
                    actor_detail=detail,
                    created_at=now,
                )
            )
            event_record(
                type="issue.updated",
                workspace_id=project.workspace_id,
                project_id=project.pk,
                actor=actor,
                data={"issue": record},
                changes={"labels": change},
            )
        IssueHistory.objects.bulk_create(history)
