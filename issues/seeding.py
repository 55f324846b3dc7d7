"""Bulk loading of demo issues, for ``seed_demo`` and the benchmarks.

It bypasses the services on purpose: a million issues through ``issue_create`` would take
hours. What the services keep in their transactions is kept here by other means:

- numbers are reserved a batch at a time from the project's ``IssueSequence`` row, with the
  same conditional ``UPDATE`` the services use, so they run 1..N without gaps even beside
  concurrent creates;
- the per-status counters are recounted by ``issue_counts_rebuild`` once the rows are in;
- each issue gets the history the services would have written (its "created" record, then
  assignment and status changes); no events are recorded, which a benchmark does not need.

On PostgreSQL the rows go in with ``COPY`` (ids drawn from the table's own sequence first, so
labels and history can point at them in the same pass); elsewhere with ``bulk_create``.
Each batch is one transaction: an interrupted load leaves whole batches, and running again
tops the project up to its target.
"""

import itertools
import math
import operator
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

import orjson
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from collab.api.renderers import iso_z
from projects.models import Project

from .models import PRIORITY_RANK, Issue, IssueHistory, IssueSequence, Label, Status
from .services import issue_counts_rebuild

DEFAULT_BATCH_SIZE = 10_000
SPAN = timedelta(days=365)

LABELS = (
    ("frontend", "#1d76db", "The web client."),
    ("backend", "#5319e7", "Services and workers."),
    ("api", "#0e8a16", "The public REST API."),
    ("database", "#006b75", "Schema, queries and migrations."),
    ("docs", "#0075ca", "Documentation."),
    ("ux", "#d4c5f9", "How it looks and feels."),
    ("performance", "#fbca04", "Speed and resource use."),
    ("security", "#b60205", "Anything an attacker could use."),
    ("regression", "#e11d21", "It used to work."),
    ("good first issue", "#7057ff", "Small and well described."),
    ("needs triage", "#ededed", "Nobody has looked at it yet."),
    ("blocked", "#000000", "Waits on something else."),
)
AREA_LABELS = 8  # the first eight above name a part of the product

# (value, weight) tables, weights as observed shares in a typical product team's tracker.
V = TypeVar("V")
TYPES = (("bug", 35), ("feature", 25), ("task", 30), ("improvement", 10))
PRIORITIES = (("low", 20), ("medium", 50), ("high", 22), ("critical", 8))
LABEL_COUNTS = ((0, 30), (1, 40), (2, 22), (3, 8))
UNASSIGNED_SHARE = 0.25
# Plain strings: database adapters may write an enum member by its name.
OPEN, IN_PROGRESS, CLOSED = Status.OPEN.value, Status.IN_PROGRESS.value, Status.CLOSED.value

SUBJECTS = (
    "the export dialog",
    "password reset",
    "the billing page",
    "search results",
    "the mobile menu",
    "CSV import",
    "webhook retries",
    "the activity feed",
    "API keys",
    "the dashboard charts",
    "email notifications",
    "file uploads",
    "the sign-up form",
    "pagination",
    "the audit log",
    "dark mode",
    "the settings page",
    "invoice PDFs",
    "team invitations",
    "the issue editor",
)
BUG_TEMPLATES = (
    "{s} crashes when the name has an emoji",
    "{s} shows stale data after a refresh",
    "{s} times out on large workspaces",
    "{s} ignores the user's time zone",
    "Typo and broken layout in {s}",
    "{s} returns a 500 for archived projects",
    "Double submit in {s} creates duplicates",
)
FEATURE_TEMPLATES = (
    "Add keyboard shortcuts to {s}",
    "Let admins configure {s}",
    "Bulk actions for {s}",
    "Show {s} in the weekly digest",
    "Filter and sort options for {s}",
)
TASK_TEMPLATES = (
    "Write tests for {s}",
    "Move {s} to the new design tokens",
    "Document {s}",
    "Remove the feature flag around {s}",
    "Upgrade the library behind {s}",
)
IMPROVEMENT_TEMPLATES = (
    "Make {s} faster on slow networks",
    "Better error messages in {s}",
    "Reduce the queries behind {s}",
    "Accessibility pass over {s}",
)
TEMPLATES = {
    "bug": BUG_TEMPLATES,
    "feature": FEATURE_TEMPLATES,
    "task": TASK_TEMPLATES,
    "improvement": IMPROVEMENT_TEMPLATES,
}
SENTENCES = (
    "Reported by two customers this week.",
    "Steps: open the page, change a value, save, reload.",
    "Expected the change to stick; it is gone after a reload.",
    "Happens on Safari and Firefox, not on Chrome.",
    "See the screenshot in the support ticket.",
    "The logs show a timeout talking to the database.",
    "We agreed on this in the planning meeting.",
    "Acceptance: covered by tests and documented.",
    "Design is in the shared folder.",
    "Low risk, but touches the billing code.",
    "Blocked until the API change ships.",
    "Should be behind a feature flag at first.",
)

# One issue in RARE_EVERY (by number, drawing nothing from the generator, so every other value
# is as before) also says RARE_SENTENCE: a word rare enough for search's benchmark (bench/run).
RARE_EVERY = 2000
RARE_SENTENCE = "Seen only with the zeppelin build."

ISSUE_COLUMNS = (
    "id",
    "project_id",
    "number",
    "title",
    "description",
    "type",
    "priority",
    "priority_rank",
    "status",
    "assignee_id",
    "reporter_id",
    "created_at",
    "updated_at",
    "closed_at",
)
ISSUE_VALUES = operator.itemgetter(*ISSUE_COLUMNS[1:])
HISTORY_COLUMNS = (
    "issue_id",
    "field",
    "old_value",
    "new_value",
    "actor_id",
    "created_at",
    "source",
)


@dataclass
class _Batch:
    issues: list[dict] = field(default_factory=list)
    labels: list[tuple[int, int]] = field(default_factory=list)  # (issue position, label id)
    history: list[tuple] = field(default_factory=list)  # (issue position, field, old, new, ...)


def issues_seed(
    *,
    project: Project,
    total: int,
    people: Sequence[int],
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Callable[[int], object] | None = None,
) -> int:
    """Top ``project`` up to ``total`` issues; returns how many were added.

    ``people`` are the ids of the users who report, get assigned and act in the history
    (they should all see the project). Counters and sequence are exact afterwards.
    """
    if not people:
        raise ValueError("Seeding issues needs at least one person.")
    labels = _labels_ensure(project)
    existing = Issue.objects.filter(project=project).count()
    missing = max(0, total - existing)
    if missing:
        now = timezone.now()
        latest = (
            Issue.objects.filter(project=project)
            .order_by("-created_at")
            .values_list("created_at", flat=True)
            .first()
        )
        # New issues come after the existing ones, spread over the last year at most.
        begin = max(now - SPAN, latest) if latest else now - SPAN
        done = 0
        while done < missing:
            size = min(batch_size, missing - done)
            with transaction.atomic():
                first = _numbers_reserve(project, size)
                # Demo data, no secret: a seeded generator makes the data set reproducible.
                rng = random.Random(f"{project.pk}:{first}")  # noqa: S311
                batch = _batch_build(
                    rng,
                    project=project,
                    first_number=first,
                    offset=done,
                    size=size,
                    missing=missing,
                    span=(begin, now),
                    people=people,
                    labels=labels,
                )
                _batch_write(batch)
            done += size
            if progress is not None:
                progress(size)
        _vacuum_analyze()
    issue_counts_rebuild(project=project)
    return missing


def _labels_ensure(project: Project) -> list[int]:
    Label.objects.bulk_create(
        [
            Label(project=project, name=name, color=color, description=description)
            for name, color, description in LABELS
        ],
        ignore_conflicts=True,
    )
    by_name = dict(Label.objects.filter(project=project).values_list("name", "pk"))
    return [by_name[name] for name, _color, _description in LABELS]


def _numbers_reserve(project: Project, count: int) -> int:
    """Advance the project's sequence by ``count`` (inside the caller's transaction); returns
    the first reserved number."""
    if not IssueSequence.objects.filter(project=project).exists():
        last = Issue.objects.filter(project=project).order_by("-number").first()
        IssueSequence.objects.bulk_create(
            [IssueSequence(project=project, last_number=last.number if last else 0)],
            ignore_conflicts=True,
        )
    sequence = IssueSequence.objects.filter(project=project)
    sequence.update(last_number=F("last_number") + count)
    return sequence.values_list("last_number", flat=True).get() - count + 1


def _weighted(rng: random.Random, table: Sequence[tuple[V, int]]) -> Callable[[], V]:
    values = [value for value, _weight in table]
    cumulative = list(itertools.accumulate(weight for _value, weight in table))
    return lambda: rng.choices(values, cum_weights=cumulative)[0]


def _batch_build(
    rng: random.Random,
    *,
    project: Project,
    first_number: int,
    offset: int,
    size: int,
    missing: int,
    span: tuple[datetime, datetime],
    people: Sequence[int],
    labels: list[int],
) -> _Batch:
    """``size`` issues, the ``offset``-th to the last of ``missing`` new ones in the project:
    created in number order, more of them lately (a growing team), older ones more often
    closed."""
    begin, now = span
    seconds = (now - begin).total_seconds()
    pick_type = _weighted(rng, TYPES)
    pick_priority = _weighted(rng, PRIORITIES)
    pick_label_count = _weighted(rng, LABEL_COUNTS)
    # A few people carry most of the work.
    assignee_weights = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(people))))
    area, workflow = labels[:AREA_LABELS], labels[AREA_LABELS:]
    batch = _Batch()
    for position in range(size):
        index = offset + position
        # The square root makes the density of creation times grow linearly over the span.
        share = math.sqrt((index + rng.random()) / missing)
        created = begin + timedelta(seconds=seconds * share)
        age = 1 - share  # 0 for the newest, 1 for the oldest
        type_ = pick_type()
        priority = pick_priority()
        reporter = rng.choice(people)
        assignee = (
            None
            if rng.random() < UNASSIGNED_SHARE
            else rng.choices(people, cum_weights=assignee_weights)[0]
        )
        roll = rng.random()
        if roll < 0.3 + 0.7 * age:
            status = CLOSED
        elif roll < 0.38 + 0.7 * age:
            status = IN_PROGRESS
        else:
            status = OPEN
        label_ids = rng.sample(area, pick_label_count())
        if rng.random() < 0.15:
            label_ids.append(rng.choice(workflow))

        # Most work goes through "in progress"; some issues are closed straight away.
        changes: list[tuple[str, str | None, str | int | None, int, datetime]] = []
        closed = None
        actor = assignee or reporter
        state, when = OPEN, created
        if status == IN_PROGRESS or (status == CLOSED and rng.random() < 0.7):
            when = _between(rng, when, now, 0.2)
            changes.append(("status", state, IN_PROGRESS, actor, when))
            state = IN_PROGRESS
        if status == CLOSED:
            when = closed = _between(rng, when, now, 0.1)
            changes.append(("status", state, CLOSED, actor, when))
        updated = when
        # Half the assignees were chosen after creation, before any work started.
        assigned_later = assignee is not None and rng.random() < 0.5
        if assigned_later:
            until = changes[0][4] if changes else now
            assigned = _between(rng, created, until, 0.3)
            changes.insert(0, ("assignee_id", None, assignee, reporter, assigned))
            updated = max(updated, assigned)

        title = rng.choice(TEMPLATES[type_]).format(s=rng.choice(SUBJECTS))
        issue = {
            "project_id": project.pk,
            "number": first_number + position,
            "title": title[0].upper() + title[1:],
            "description": _description(rng, first_number + position),
            "type": type_,
            "priority": priority,
            "priority_rank": PRIORITY_RANK[priority],
            "status": status,
            "assignee_id": assignee,
            "reporter_id": reporter,
            "created_at": created,
            "updated_at": updated,
            "closed_at": closed,
        }
        batch.issues.append(issue)
        batch.labels.extend((position, label_id) for label_id in label_ids)
        # The "created" row holds the issue as it was created: open, maybe not yet assigned.
        batch.history.append(
            (
                position,
                "created",
                None,
                _created_record(issue, label_ids, assigned_later),
                reporter,
                created,
            )
        )
        batch.history.extend((position, *change) for change in changes)
    return batch


def _description(rng: random.Random, number: int) -> str:
    sentences = rng.sample(SENTENCES, rng.randint(0, 3))
    if number % RARE_EVERY == 0:
        sentences.append(RARE_SENTENCE)
    return " ".join(sentences)


def _between(rng: random.Random, start: datetime, end: datetime, scale: float) -> datetime:
    """A time after ``start``, before ``end``: most often soon after, sometimes much later."""
    room = (end - start).total_seconds()
    return start + timedelta(seconds=room * min(1.0, rng.expovariate(1 / scale)))


def _created_record(issue: dict, label_ids: list[int], assigned_later: bool) -> dict:
    """What ``issue_record`` gives at creation; the id is filled in once it is known.

    Label names are left as ids here and resolved by the writer, which knows them."""
    created = iso_z(issue["created_at"])
    return {
        "id": None,
        "project_id": issue["project_id"],
        "number": issue["number"],
        "title": issue["title"],
        "description": issue["description"],
        "type": issue["type"],
        "priority": issue["priority"],
        "status": OPEN,
        "assignee_id": None if assigned_later else issue["assignee_id"],
        "reporter_id": issue["reporter_id"],
        "created_at": created,
        "updated_at": created,
        "closed_at": None,
        "labels": label_ids,
    }


def _batch_write(batch: _Batch) -> None:
    postgresql = connection.vendor == "postgresql"
    if postgresql:
        ids = _ids_reserve(len(batch.issues))
    else:
        created = Issue.objects.bulk_create([Issue(**issue) for issue in batch.issues])
        ids = [issue.pk for issue in created]
    through = [(ids[position], label_id) for position, label_id in batch.labels]
    names = dict(
        Label.objects.filter(pk__in={pk for _, pk in batch.labels}).values_list("pk", "name")
    )
    history = []
    for position, name, old, new, actor, when in batch.history:
        if name == "created":
            new = {**new, "id": ids[position], "labels": sorted(names[pk] for pk in new["labels"])}
        history.append((ids[position], name, old, new, actor, when, ""))

    if postgresql:
        _copy(
            Issue._meta.db_table,
            ISSUE_COLUMNS,
            ((pk, *ISSUE_VALUES(issue)) for pk, issue in zip(ids, batch.issues, strict=True)),
        )
        _copy(Issue.labels.through._meta.db_table, ("issue_id", "label_id"), through)
        _copy(
            IssueHistory._meta.db_table,
            HISTORY_COLUMNS,
            (
                (issue, name, _json(old), _json(new), *rest)
                for issue, name, old, new, *rest in history
            ),
        )
    else:
        Issue.labels.through.objects.bulk_create(
            Issue.labels.through(issue_id=issue, label_id=label) for issue, label in through
        )
        IssueHistory.objects.bulk_create(
            IssueHistory(**dict(zip(HISTORY_COLUMNS, row, strict=True))) for row in history
        )


def _json(value) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def _ids_reserve(count: int) -> list[int]:
    # Drawn from the id column's own sequence: later inserts through the ORM never collide.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
            [Issue._meta.db_table, count],
        )
        return [row[0] for row in cursor.fetchall()]


def _copy(table: str, columns: Sequence[str], rows) -> None:
    # Table and column names are the models' own, never input.
    sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
    with connection.cursor() as cursor, cursor.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)


def _vacuum_analyze() -> None:
    """Leave the tables as a running database would have them (PostgreSQL only).

    Freshly copied rows have no visibility map (so counts cannot be index-only) and no
    statistics (so the planner misjudges them) until autovacuum passes, if it is on at all.
    ``VACUUM`` cannot run inside a transaction: there (in tests) only ``ANALYZE`` runs.
    """
    if connection.vendor != "postgresql":
        return
    command = "ANALYZE" if connection.in_atomic_block else "VACUUM (ANALYZE)"
    tables = (Issue, Issue.labels.through, IssueHistory)
    with connection.cursor() as cursor:
        for model in tables:
            # The table names are the models' own, never input.
            cursor.execute(f"{command} {model._meta.db_table}")
