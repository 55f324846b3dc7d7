"""Comment threads on demo issues, for ``seed_demo``.

Like ``issues.seeding`` it bypasses the services on purpose: thousands of ``comment_create``
calls would each lock, record an event and queue a mention task. What the services keep is
kept here by other means, one batch of issues per transaction:

- the batch's issue rows are locked as ``comment_create`` locks its parent, and only issues
  still without any comment get a thread; their ``comment_count`` and ``updated_at`` are set
  in the same transaction, so the count is exact;
- bodies are stored with ``markdown.render``'s HTML, as the services store them;
- an edited comment keeps its first body as a revision;
- each issue's history gets the rows the services write (``comment``, on creation and on an
  edit) in time order with its other changes: the changes after the thread's first comment
  are moved behind the comments (same values, new ids), since the history reads in id order;
- mentions of members are recorded as already notified: seeded data sends no email. No event
  is recorded, as none is for seeded issues.

Each thread is drawn from a generator seeded with the project and the issue's number, so a
data set can be made again; a second run finds the issues it threaded with comments, and adds
nothing to them.
"""

import functools
import heapq
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import orjson
from django.db import connection, transaction
from django.db.models import Model
from django.utils import timezone

from accounts.models import User
from issues.models import Issue, IssueHistory, Status
from projects.models import Project

from . import markdown
from .models import Comment, CommentRevision, Mention
from .records import comment_record_from_row

DEFAULT_BATCH_SIZE = 500
THREAD_SHARE = 0.4  # of the issues, in a typical team's tracker
# (comments in a thread, weight): most threads are short.
THREAD_LENGTHS = ((1, 25), (2, 22), (3, 17), (4, 12), (5, 9), (6, 7), (7, 5), (8, 3))
MENTION_SHARE = 0.2
EDITED_SHARE = 0.06
# Mean waits, in seconds: the first comment comes within a day or so, replies within hours.
FIRST_WAIT, REPLY_WAIT, EDIT_WAIT = 18 * 3600, 6 * 3600, 20 * 60

CODE = (
    "`issue_update()`",
    "`settings.CACHE_TTL`",
    "`SELECT ... FOR UPDATE`",
    "`null=True`",
    "`--dry-run`",
    "`timezone.now()`",
    "`retry_backoff`",
    "`POST /v1/issues`",
    "`useEffect`",
    "`X-Request-Id`",
    "`ENABLE_NEW_EDITOR`",
    "`max_retries=5`",
)
REMARKS = (
    "Reproduced on staging: {subject} fails as soon as the request takes longer than 30s.",
    "I can't reproduce this locally. Which browser and which account?",
    "Looks like {code} runs twice on save, so the second write wins.",
    "The culprit is probably {code}: it never checks for an empty value.",
    "+1, a customer asked about {subject} again today.",
    "Moved to the next sprint: the API change has to ship first.",
    "Could you add a test for the empty case before we merge?",
    "**Plan**\n\n1. Put it behind {code}\n2. Backfill in batches\n3. Remove the old path",
    "Two options:\n\n- keep {code} and cache the result\n- drop it and compute on read\n\n"
    "I'd go with the first one.",
    "Here is the trace from the logs:\n\n```\nTraceback (most recent call last):\n"
    "  File \"app/views.py\", line 42, in save\nKeyError: 'owner'\n```",
    "> {quote}\n\nAgreed. Let's keep the scope small.",
    "Deployed to staging behind {code}; please try it there.",
    "This also affects {subject}, see the screenshot in the support ticket.",
    "Not a regression: it has behaved like this since the first release.",
    "LGTM :+1:",
    "Thanks! I'll pick this up tomorrow.",
)
CLOSING_REMARKS = (
    "Fixed by the change to {code}; closing.",
    "Shipped in today's release.",
    "Verified on production, closing this one.",
    "Done, docs updated as well.",
)
MENTIONS = ("{mention} can you take a look?", "cc {mention}", "{mention} any objections?")
EDIT_NOTES = (
    "_Edit: the fix is on `main` now._",
    "_Edit: added the steps to reproduce._",
    "_Edit: wrong link, fixed._",
    "**Update:** still happens after clearing the cache.",
)
SUBJECTS = ("the export", "the billing page", "search", "the mobile menu", "CSV import")

# What a thread is made from, and the columns the comments and history rows are written with.
ISSUE_FIELDS = ("id", "number", "status", "reporter_id", "assignee_id", "title", "description",
                "created_at", "updated_at", "closed_at", "comment_count")  # fmt: skip
COMMENT_COLUMNS = ("project_id", "issue_id", "author_id", "body", "body_html", "edited",
                   "created_at", "updated_at")  # fmt: skip
HISTORY_COLUMNS = ("issue_id", "field", "old_value", "new_value", "actor_id", "source",
                   "created_at")  # fmt: skip


@dataclass
class _Seeded:
    """One comment to write: its first body and, when edited, the body that replaced it."""

    issue: Issue
    author: int
    first_body: str
    created_at: datetime
    body: str = ""
    edited_at: datetime | None = None
    mentioned: dict[int, datetime] = field(default_factory=dict)  # user id -> first named at


# (time, actor id, old value, new value) of a "comment" row of an issue's history.
_Entry = tuple[datetime, int, Any, Any]


def threads_seed(
    *,
    project: Project,
    people: Sequence[int],
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Callable[[int], object] | None = None,
) -> int:
    """Threads on about ``THREAD_SHARE`` of the project's issues without any comment; returns
    how many comments were added. ``people`` (ids of users who all see the project) write them
    and are mentioned in them."""
    if not people:
        raise ValueError("Seeding comments needs at least one person.")
    handles = dict(
        User.objects.filter(pk__in=people).exclude(handle="").values_list("pk", "handle")
    )
    candidates = list(
        Issue.objects.filter(project=project, comment_count=0)
        .order_by("id")
        .values_list("pk", flat=True)
    )
    added = 0
    for start in range(0, len(candidates), batch_size):
        chunk = candidates[start : start + batch_size]
        with transaction.atomic():
            now = timezone.now()
            # Locked, then read again: an issue commented on meanwhile is left out.
            issues = (
                Issue.objects.select_for_update()
                .filter(pk__in=chunk, comment_count=0)
                .order_by("id")
                .only(*ISSUE_FIELDS)
            )
            seeded: list[_Seeded] = []
            for issue in issues:
                # Demo data, no secret: a seeded generator makes each thread reproducible.
                rng = random.Random(f"{project.pk}:{issue.number}:comments")  # noqa: S311
                if rng.random() < THREAD_SHARE:
                    seeded.extend(_thread(rng, issue, people=people, handles=handles, now=now))
            _write(project, seeded)
            added += len(seeded)
        if progress is not None:
            progress(len(chunk))
    return added


# Many bodies repeat ("LGTM :+1:"): each distinct one is parsed once.
_render = functools.lru_cache(maxsize=4096)(markdown.render)


@functools.lru_cache(maxsize=4096)
def _handles_in(body: str) -> tuple[str, ...]:
    return tuple(markdown.mentions(body)) if "@" in body else ()


def _wait(rng: random.Random, after: datetime, mean: float, until: datetime) -> datetime:
    """A moment ``mean`` seconds after ``after`` on average (a few seconds at least, so a reply
    never comes before what it answers), and ``until`` at the latest."""
    seconds = max(5.0, rng.expovariate(1 / mean))
    return max(after, min(until, after + timedelta(seconds=seconds)))


def _thread(
    rng: random.Random,
    issue: Issue,
    *,
    people: Sequence[int],
    handles: dict[int, str],
    now: datetime,
) -> list[_Seeded]:
    """One issue's comments, oldest first, by its team, never one person twice in a row when
    others are there. A closed issue is discussed before its closing, often ending with a
    closing remark."""
    length = rng.choices(
        [length for length, _weight in THREAD_LENGTHS],
        weights=[weight for _length, weight in THREAD_LENGTHS],
    )[0]
    # The assignee and the reporter talk most, when they are still on the team.
    involved = list(people)
    for person, weight in ((issue.assignee_id, 3), (issue.reporter_id, 2)):
        if person in involved:
            involved += [person] * (weight - 1)
    closed_at = issue.closed_at if issue.status == Status.CLOSED else None
    # Closed within the hour of its creation: the talk comes after, as for an open issue.
    before_closing = closed_at is not None and closed_at - issue.created_at > timedelta(hours=1)
    until = closed_at if before_closing and closed_at else now
    # Nobody says the same thing twice in one thread.
    remarks = rng.sample(REMARKS, length)
    thread: list[_Seeded] = []
    when, author = issue.created_at, None
    for index in range(length):
        previous = author
        author = rng.choice(involved)
        if author == previous and len(set(involved)) > 1:
            author = rng.choice([person for person in involved if person != previous])
        closing = before_closing and index == length - 1 and index > 0 and rng.random() < 0.6
        if closing:
            when = max(when, until - timedelta(seconds=rng.uniform(60, 7200)))
        else:
            when = _wait(rng, when, FIRST_WAIT if index == 0 else REPLY_WAIT, until)
        body = (rng.choice(CLOSING_REMARKS) if closing else remarks[index]).format(
            code=rng.choice(CODE),
            subject=rng.choice(SUBJECTS),
            quote=(issue.description or issue.title).split(". ")[0].rstrip("."),
        )
        others = [person for person in people if person != author and person in handles]
        if others and rng.random() < MENTION_SHARE:
            mention = rng.choice(MENTIONS).format(mention=f"@{handles[rng.choice(others)]}")
            body = f"{body}\n\n{mention}" if rng.random() < 0.7 else f"{mention}\n\n{body}"
        comment = _Seeded(issue=issue, author=author, first_body=body, body=body, created_at=when)
        for user in _mentioned(body, handles, author):
            comment.mentioned[user] = when
        # Edited later, if there is a later: a comment of this very moment stays as written.
        if rng.random() < EDITED_SHARE and when < now:
            comment.edited_at = _wait(rng, when, EDIT_WAIT, now)
            comment.body = f"{body}\n\n{rng.choice(EDIT_NOTES)}"
            for user in _mentioned(comment.body, handles, author):
                comment.mentioned.setdefault(user, comment.edited_at)
        thread.append(comment)
    return thread


def _mentioned(body: str, handles: dict[int, str], author: int) -> list[int]:
    """The people a body mentions, as ``mention_audience`` finds them: members, not the
    author."""
    by_handle = {handle: pk for pk, handle in handles.items()}
    named = (by_handle.get(handle) for handle in _handles_in(body))
    return [pk for pk in named if pk is not None and pk != author]


def _write(project: Project, seeded: list[_Seeded]) -> None:
    if not seeded:
        return
    ids = _comments_insert(
        [
            (
                project.pk,
                item.issue.pk,
                item.author,
                item.body,
                _render(item.body),
                item.edited_at is not None,
                item.created_at,
                item.edited_at or item.created_at,
            )
            for item in seeded
        ]
    )
    revisions: list[CommentRevision] = []
    mentions: list[Mention] = []
    timelines: dict[int, list[_Entry]] = {}
    for pk, item in zip(ids, seeded, strict=True):
        # The comment as ``comment_create`` recorded it, before any edit.
        record = comment_record_from_row(
            {
                "id": pk,
                "project_id": project.pk,
                "issue_id": item.issue.pk,
                "pull_request_id": None,
                "author_id": item.author,
                "body": item.first_body,
                "body_html": _render(item.first_body),
                "edited": False,
                "created_at": item.created_at,
                "updated_at": item.created_at,
            }
        )
        timeline = timelines.setdefault(item.issue.pk, [])
        timeline.append((item.created_at, item.author, None, record))
        if item.edited_at is not None:
            revisions.append(
                CommentRevision(
                    comment_id=pk,
                    body=item.first_body,
                    author_id=item.author,
                    created_at=item.created_at,
                    replaced_at=item.edited_at,
                )
            )
            timeline.append(
                (
                    item.edited_at,
                    item.author,
                    {"comment_id": pk, "body": item.first_body},
                    {"comment_id": pk, "body": item.body},
                )
            )
        mentions.extend(
            Mention(
                comment_id=pk,
                user_id=user,
                issue_id=item.issue.pk,
                created_at=when,
                notified_at=when,
            )
            for user, when in item.mentioned.items()
        )
    CommentRevision.objects.bulk_create(revisions)
    Mention.objects.bulk_create(mentions)
    _history_merge(timelines)
    _parents_count(seeded)


def _history_merge(timelines: dict[int, list[_Entry]]) -> None:
    """Write the "comment" rows of each issue's history where they belong in time: the issue's
    rows dated after its first comment are deleted and written again behind the comments,
    merged by time (on a tie, the issue's own change first)."""
    first = {issue: min(entry[0] for entry in entries) for issue, entries in timelines.items()}
    later: dict[int, list[tuple[Any, ...]]] = {}
    moved = []
    for pk, *row in (
        IssueHistory.objects.filter(issue_id__in=timelines)
        .order_by("id")
        .values_list("id", *HISTORY_COLUMNS)
    ):
        issue_id, when = row[0], row[-1]
        if when > first[issue_id]:
            moved.append(pk)
            later.setdefault(issue_id, []).append(tuple(row))
    IssueHistory.objects.filter(pk__in=moved).delete()
    history: list[tuple[Any, ...]] = []
    for issue_id, entries in timelines.items():
        comments = (
            (issue_id, "comment", old, new, actor, "", when)
            for when, actor, old, new in sorted(entries, key=lambda entry: entry[0])
        )
        history.extend(heapq.merge(later.get(issue_id, []), comments, key=lambda row: row[-1]))
    # In this order the rows get their ids, which is the order the history is read in.
    if connection.vendor == "postgresql":
        _copy(
            IssueHistory,
            HISTORY_COLUMNS,
            ((*row[:2], _json(row[2]), _json(row[3]), *row[4:]) for row in history),
        )
    else:
        IssueHistory.objects.bulk_create(
            IssueHistory(**dict(zip(HISTORY_COLUMNS, row, strict=True))) for row in history
        )


def _comments_insert(rows: list[tuple[Any, ...]]) -> list[int]:
    """Insert the comments (``COMMENT_COLUMNS``); returns their ids, in order."""
    if connection.vendor != "postgresql":
        created = Comment.objects.bulk_create(
            Comment(**dict(zip(COMMENT_COLUMNS, row, strict=True))) for row in rows
        )
        return [comment.pk for comment in created]
    # Drawn from the id column's own sequence: later inserts through the ORM never collide.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
            [Comment._meta.db_table, len(rows)],
        )
        ids = [row[0] for row in cursor.fetchall()]
    _copy(
        Comment, ("id", *COMMENT_COLUMNS), ((pk, *row) for pk, row in zip(ids, rows, strict=True))
    )
    return ids


def _copy(model: type[Model], columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    # Table and column names are the models' own, never input.
    sql = f"COPY {model._meta.db_table} ({', '.join(columns)}) FROM STDIN"
    with connection.cursor() as cursor, cursor.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def _parents_count(seeded: list[_Seeded]) -> None:
    """Each threaded issue's count and last update, as ``comment_create`` leaves them. The
    issues are locked: nobody else adds to their counts meanwhile."""
    counts: dict[int, int] = {}
    last: dict[int, datetime] = {}
    for item in seeded:
        pk = item.issue.pk
        counts[pk] = counts.get(pk, 0) + 1
        last[pk] = max(last.get(pk, item.created_at), item.created_at)
    if connection.vendor != "postgresql":
        issues = {item.issue.pk: item.issue for item in seeded}
        for pk, issue in issues.items():
            issue.comment_count += counts[pk]
            issue.updated_at = max(issue.updated_at, last[pk])
        Issue.objects.bulk_update(list(issues.values()), ["comment_count", "updated_at"])
        return
    # One statement for the batch (Django's bulk_update writes a CASE per row, much slower).
    ids = list(counts)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {Issue._meta.db_table} AS issue
            SET comment_count = issue.comment_count + batch.n,
                updated_at = GREATEST(issue.updated_at, batch.last)
            FROM unnest(%s::bigint[], %s::integer[], %s::timestamptz[]) AS batch(id, n, last)
            WHERE issue.id = batch.id
            """,  # noqa: S608 - the table name is the model's own, never input
            [ids, [counts[pk] for pk in ids], [last[pk] for pk in ids]],
        )
