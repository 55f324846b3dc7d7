"""The fan-out: the events of a commit, made into one delivery per subscribed webhook.

Flow of one change: a service calls ``events.services.event_record`` inside its transaction;
after commit the log calls ``events_committed`` here, which hands the events to one fan-out task
(and wakes the stream). The fan-out task makes one delivery row per subscribed webhook, each
with a stable uuid, and sends them itself (``events_deliver``, through ``delivery``; a fan-out
of more than DIRECT_SEND_MAX deliveries queues them in batches instead). On PostgreSQL the
fan-out is one statement. Whatever a broker outage leaves behind, ``sweep`` picks up."""

import logging
import os
import time
from pathlib import Path

import redis
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from collab.db.prepared import PreparedQuery
from collab.redisclient import quick_client
from events.catalogue import EVENT_KINDS, kind_matches
from events.models import Event

from . import dispatch, stream
from .delivery import deliveries_send, quoted_table
from .models import Delivery, Webhook

logger = logging.getLogger("collab.webhooks")

# Kinds never fanned out to subscribed webhooks: the webhooks' own bookkeeping (in the log and
# the stream, not sent to receivers, which would otherwise be told of their own creation).
# ``webhook.ping`` goes to the one webhook pinged, directly.
DIRECT_KINDS = frozenset(kind for kind in EVENT_KINDS if kind.startswith("webhook."))


# Set while a fan-out of the events not yet dispatched is queued and has not started: the
# events committed meanwhile go with it instead of each queueing a task of its own.
FANOUT_QUEUED_KEY = "collab:fanout:queued"
# How long the mark may outlive a fan-out task that never starts (lost with a worker or a
# broker): then the next commit queues one again, and the sweeper takes what was left before.
FANOUT_QUEUED_SECONDS = 10


def events_committed(event_ids: list[int]) -> None:
    """The log's consumer hook (settings.EVENT_LOG_CONSUMERS): fan the events of one
    transaction out to the webhooks, and wake the streams.

    The fan-out tasks coalesce: a commit queues one (of every event not yet dispatched) only
    when none is queued already, so under a stream of writes the worker runs one task for
    many events instead of one each (a task costs far more than its statement). The mark is
    kept in Redis, or on the embedded default (one machine) in a file beside its queue: there
    a queue of one fan-out per commit, first in first out, put a flood's every event ahead of
    the next project's. Run eagerly (the tests), each transaction fans out its own events.
    """
    queued = _fanout_mark()
    if queued is None:
        dispatch.enqueue(dispatch.TASKS + "event_fanout", event_ids=event_ids)
    elif queued and not dispatch.enqueue(dispatch.TASKS + "event_fanout", due=True):
        _fanout_unmark()  # the next commit tries again; the sweeper has these meanwhile
    stream.wake(event_ids[-1])


def _fanout_mark_file() -> Path | None:
    """Where the embedded default keeps the mark (no Redis, tasks run by a worker)."""
    if settings.REDIS_URL or settings.CELERY_TASK_ALWAYS_EAGER:
        return None
    return Path(settings.DATA_DIR) / "fanout-queued"


def _fanout_mark() -> bool | None:
    """Whether this commit marked a fan-out as queued (and so must queue it); None when
    there is nowhere to mark it, or Redis does not answer (queue one of its own, then)."""
    path = _fanout_mark_file()
    if path is not None:
        return _file_mark(path)
    client = quick_client()
    if client is None:
        return None
    try:
        return bool(client.set(FANOUT_QUEUED_KEY, 1, nx=True, ex=FANOUT_QUEUED_SECONDS))
    except redis.RedisError as exc:
        logger.warning("Could not mark the fan-out as queued: %s", exc)
        return None


def _fanout_unmark() -> None:
    """The queued fan-out has started (or could not be queued): the next commit queues
    another. Called before the events are read, so none committed after it is missed."""
    path = _fanout_mark_file()
    if path is not None:
        path.unlink(missing_ok=True)
        return
    client = quick_client()
    if client is None:
        return
    try:
        client.delete(FANOUT_QUEUED_KEY)
    except redis.RedisError as exc:
        # The mark lapses on its own; until then the sweeper takes the events.
        logger.warning("Could not clear the fan-out's mark: %s", exc)


def _file_mark(path: Path) -> bool | None:
    """The mark as a file made only if absent (O_EXCL, atomic); one older than
    FANOUT_QUEUED_SECONDS is taken over, as the key in Redis lapses. None if the file cannot
    be made at all."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return True
    except FileExistsError:
        pass
    except OSError as exc:
        logger.warning("Could not mark the fan-out as queued: %s", exc)
        return None
    try:
        if time.time() - path.stat().st_mtime < FANOUT_QUEUED_SECONDS:
            return False
        os.utime(path)  # two commits may both take a lapsed mark over: two fan-outs, harmless
    except FileNotFoundError:
        return _file_mark(path)  # the fan-out started meanwhile: mark anew
    return True


# Events fanned out by one task in one go (the rest in the next go of the same task).
FANOUT_DUE_BATCH = 500
# Compiled once (collab.db.prepared): a coalesced fan-out reads it first.
_EVENTS_DUE = PreparedQuery(
    lambda: (
        Event.objects.filter(dispatched_at__isnull=True)
        .order_by("id")
        .values("id")[:FANOUT_DUE_BATCH]
    )
)


def events_deliver_due(*, wait: bool = True, gather: float = 0.0) -> list[int]:
    """``events_deliver`` of every event not yet dispatched, oldest first, in batches: the
    coalesced fan-out ``events_committed`` queues. It first waits ``gather`` seconds with the
    mark still up, so that the commits of that moment join it instead of queueing their own
    (settings.WEBHOOK_FANOUT_GATHER_SECONDS)."""
    if gather > 0:
        time.sleep(gather)
    _fanout_unmark()
    made: list[int] = []
    while True:
        due = [row["id"] for row in _EVENTS_DUE.rows()]
        if due:
            made += events_deliver(event_ids=due, wait=wait)
        if len(due) < FANOUT_DUE_BATCH:
            return made


def event_fanout(*, event_id: int) -> list[int]:
    return events_fanout(event_ids=[event_id])


def events_fanout(*, event_ids: list[int]) -> list[int]:
    """One delivery per active webhook of each event's project that wants its kind, their
    sending queued once the transaction commits.

    Safe to run twice, even at once: the event rows are locked and ``dispatched_at`` checked,
    and a delivery is unique per (webhook, event). The same few statements for one event or a
    hundred. Returns the ids of the deliveries made.
    """
    made = _fanout(event_ids)
    dispatch.send_after_commit(made)
    return [delivery_id for delivery_id, _webhook_id in made]


# At most this many deliveries of a fan-out are sent by the fan-out's own task; more are
# queued in batches, spread over the worker's threads and processes.
DIRECT_SEND_MAX = 64


def events_deliver(*, event_ids: list[int], wait: bool = True) -> list[int]:
    """``events_fanout``, then the deliveries sent here and now rather than through the
    broker again (what the fan-out task does): one trip through the broker from a change to
    its receivers. A worker that dies in between leaves them due, for the sweeper. ``wait``:
    as ``deliveries_send`` takes it."""
    made = _fanout(event_ids)
    if len(made) > DIRECT_SEND_MAX:
        dispatch.send_after_commit(made)
    else:
        deliveries_send(delivery_ids=[delivery_id for delivery_id, _webhook_id in made], wait=wait)
    return [delivery_id for delivery_id, _webhook_id in made]


def _fanout(event_ids: list[int]) -> list[tuple[int, int]]:
    """The deliveries of these events, made in one transaction: ``(delivery id, webhook id)``
    of each, in the order made."""
    if connection.vendor == "postgresql" and not connection.in_atomic_block:
        return _fanout_postgresql(event_ids)
    with transaction.atomic():
        events = list(
            Event.objects.select_for_update()
            .filter(pk__in=event_ids, dispatched_at__isnull=True)
            .order_by("id")
            .only("id", "type", "workspace_id", "project_id")
        )
        if not events:
            return []
        fanned = [e for e in events if e.type not in DIRECT_KINDS]
        hooks = _deliveries_create(fanned)
        dispatched = [event.pk for event in events]
        Event.objects.filter(pk__in=dispatched).update(dispatched_at=timezone.now())
        if not hooks:
            return []
        return list(
            Delivery.objects.filter(event_id__in=dispatched, attempts=0, redelivery_of__isnull=True)
            .order_by("id")
            .values_list("id", "webhook_id")
        )


FANOUT_ATTEMPTS = 3


def _fanout_postgresql(event_ids: list[int]) -> list[tuple[int, int]]:
    """``_fanout`` as one statement: the events locked and marked dispatched, a delivery made
    for each active webhook of the event's project, or of its workspace, whose patterns
    select its kind (as ``kind_matches`` reads them). A webhook deleted meanwhile fails the
    statement's foreign key check: it is run again, up to FANOUT_ATTEMPTS times."""
    now = timezone.now()
    for attempt in range(1, FANOUT_ATTEMPTS + 1):
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    "WITH due AS (SELECT id, type, workspace_id, project_id "  # noqa: S608
                    f"FROM {quoted_table(Event)} "
                    "WHERE id = ANY(%s) AND dispatched_at IS NULL ORDER BY id FOR UPDATE), "
                    f"marked AS (UPDATE {quoted_table(Event)} AS e SET dispatched_at = %s "
                    "FROM due WHERE e.id = due.id), "
                    f"made AS (INSERT INTO {quoted_table(Delivery)} (uuid, webhook_id, event_id, "
                    "status, attempts, next_attempt_at, last_error, created_at) "
                    "SELECT gen_random_uuid(), w.id, due.id, %s, 0, %s, '', %s "
                    f"FROM due JOIN {quoted_table(Webhook)} AS w "
                    "ON (w.project_id = due.project_id OR (w.project_id IS NULL "
                    "AND w.workspace_id = due.workspace_id)) AND w.is_active "
                    "WHERE NOT starts_with(due.type, 'webhook.') AND EXISTS ("
                    "SELECT FROM jsonb_array_elements_text(w.events) AS p(pattern) "
                    "WHERE pattern IN ('*', due.type) OR (right(pattern, 2) = '.*' "
                    "AND starts_with(due.type, left(pattern, -1)))) "
                    "ORDER BY due.id, w.id ON CONFLICT DO NOTHING RETURNING id, webhook_id) "
                    "SELECT id, webhook_id FROM made ORDER BY id",
                    [list(event_ids), now, Delivery.Status.PENDING, now, now],
                )
                return [(row[0], row[1]) for row in cursor.fetchall()]
        except IntegrityError:
            if attempt == FANOUT_ATTEMPTS:
                raise
    return []


def _deliveries_create(events: list[Event]) -> list[Webhook]:
    """A delivery per event and active webhook that wants its kind: those of the event's
    project, and those of its workspace; returns the webhooks read. A webhook deleted between
    the read and the insert fails the insert's foreign key: read them again and try again (in
    a savepoint each time)."""
    if not events:
        return []
    project_ids = {event.project_id for event in events if event.project_id is not None}
    workspace_ids = {event.workspace_id for event in events}
    attempt = 1
    while True:
        hooks = list(
            Webhook.objects.filter(
                Q(project_id__in=project_ids)
                | Q(project__isnull=True, workspace_id__in=workspace_ids),
                is_active=True,
            )
        )
        by_project: dict[int, list[Webhook]] = {}
        by_workspace: dict[int, list[Webhook]] = {}
        for hook in hooks:
            if hook.project_id is None:
                by_workspace.setdefault(hook.workspace_id, []).append(hook)
            else:
                by_project.setdefault(hook.project_id, []).append(hook)
        try:
            with transaction.atomic():
                Delivery.objects.bulk_create(
                    [
                        Delivery(webhook=hook, event=event)
                        for event in events
                        for hook in (
                            by_project.get(event.project_id or 0, [])
                            + by_workspace.get(event.workspace_id, [])
                        )
                        if kind_matches(event.type, hook.events)
                    ],
                    ignore_conflicts=True,
                )
            return hooks
        except IntegrityError:
            if attempt == FANOUT_ATTEMPTS:
                raise
            attempt += 1
