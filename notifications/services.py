"""The webhooks that deliver the event log (events/) to receivers.

Flow of one change: a service calls ``events.services.event_record`` inside its transaction;
after commit the log calls ``events_committed`` here, which hands the events to one fan-out task
(and wakes the stream). The fan-out task makes one delivery row per subscribed webhook, each
with a stable uuid, and sends them itself (``events_deliver``; a fan-out of more than
DIRECT_SEND_MAX deliveries queues them in batches instead). A send claims its deliveries with
a conditional UPDATE (a lease each), posts the signed bytes, and settles each delivery with its
attempt's log row: finished, or due again at a set time. On PostgreSQL the fan-out, a task's
claims and each settle are one statement apiece. ``deliveries_sweep``, run by beat, picks up
whatever a broker outage or a killed worker left behind: events never fanned out, deliveries
due with no task on their way."""

import logging
import os
import random
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

import redis
from celery import current_app
from django.conf import settings
from django.db import IntegrityError, close_old_connections, connection, transaction
from django.db.models import Case, DateTimeField, F, Q, Value, When, Window
from django.db.models.functions import RowNumber
from django.utils import timezone
from kombu.exceptions import OperationalError

from accounts.models import Membership, Role, User
from collab.api.exceptions import Conflict, ValidationFailed
from collab.api.renderers import dumps
from collab.db.prepared import PreparedQuery
from collab.netguard import UnsafeAddress, resolve
from collab.redisclient import quick_client
from collab.unset import UNSET, Maybe
from events.catalogue import EVENT_KINDS, kind_matches, unknown_patterns
from events.models import Event
from events.services import event_record, model_update
from projects.models import Project

from . import crypto, signing, stream, transport
from .models import Delivery, DeliveryAttempt, Webhook
from .records import webhook_record

logger = logging.getLogger("collab.webhooks")
TASKS = "notifications.tasks."
T = TypeVar("T")

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
        _enqueue(TASKS + "event_fanout", event_ids=event_ids)
    elif queued and not _enqueue(TASKS + "event_fanout", due=True):
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


def _enqueue(task: str, countdown: float | None = None, **kwargs: int | list[int] | bool) -> bool:
    """Queue the task of that name, or leave the work to the sweeper when the broker cannot
    take it.

    By name: the tasks module imports this one, so importing it back would close a cycle.
    The change is committed already: failing the request would not undo it, and the row the
    task would act on (an event not yet dispatched, a delivery due) is what the sweeper reads.
    """
    try:
        current_app.tasks[task].apply_async(kwargs=kwargs, countdown=countdown)
        return True
    except (OperationalError, OSError) as exc:
        logger.warning("Could not queue %s(%s); the sweeper will: %s", task, kwargs, exc)
        return False


# Webhooks ----------------------------------------------------------------------------------


def webhook_url_check(url: str) -> None:
    """422 unless ``url`` is an http(s) URL whose host resolves to public addresses only."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced or invalid "[...]" host
        raise ValidationFailed.field(
            "url", "Give an http:// or https:// URL with a host."
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationFailed.field("url", "Give an http:// or https:// URL with a host.")
    if parts.username or parts.password:
        raise ValidationFailed.field(
            "url", "Credentials in the URL are not accepted; the secret signs deliveries."
        )
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        resolve(parts.hostname, port)
    except ValueError:
        raise ValidationFailed.field("url", "The port is not valid.") from None
    except UnsafeAddress as exc:
        raise ValidationFailed.field("url", str(exc)) from None


def _events_check(events: list[str]) -> list[str]:
    unknown = unknown_patterns(events)
    if unknown:
        raise ValidationFailed.field(
            "events",
            f"Unknown event kinds: {', '.join(unknown)}. See GET /v1/events/kinds; "
            "'*' subscribes to every kind.",
        )
    return list(dict.fromkeys(events))


def webhook_create(
    *,
    project: Project,
    actor: User | None,
    url: str,
    events: list[str],
    secret: str | None = None,
    description: str | None = "",
) -> tuple[Webhook, str | None]:
    """Register a webhook. Returns it and, when the caller gave none, the secret made for it
    (shown once, in the creation's answer)."""
    webhook_url_check(url)
    events = _events_check(events)
    generated = None
    if not secret:
        secret = generated = "whsk_" + secrets.token_urlsafe(32)
    now = timezone.now()
    with transaction.atomic():
        webhook = Webhook.objects.create(
            project=project,
            url=url,
            events=events,
            secret_encrypted=crypto.secret_encrypt(secret),
            description=description or "",
            created_by=actor,
            created_at=now,
            updated_at=now,
        )
        event_record(
            type="webhook.created",
            workspace_id=project.workspace_id,
            project_id=project.pk,
            actor=actor,
            data={"webhook": webhook_record(webhook)},
        )
    return webhook, generated


def _webhook_snapshot(webhook: Webhook) -> dict[str, Any]:
    # ``updated_at`` moves with every save; it is not a change of its own.
    record: dict[str, Any] = dict(webhook_record(webhook))
    del record["updated_at"]
    return record


def webhook_update(
    *,
    webhook: Webhook,
    actor: User | None,
    url: Maybe[str] = UNSET,
    events: Maybe[list[str]] = UNSET,
    secret: Maybe[str | None] = UNSET,
    description: Maybe[str | None] = UNSET,
    active: Maybe[bool] = UNSET,
) -> Webhook:
    if url is not UNSET:
        webhook_url_check(url)
    with transaction.atomic():
        webhook = Webhook.objects.select_for_update().get(pk=webhook.pk)
        with model_update(
            webhook,
            snapshot=_webhook_snapshot,
            event_type="webhook.updated",
            payload=lambda webhook: {"webhook": webhook_record(webhook)},
            workspace_id=webhook.project.workspace_id,
            project_id=webhook.project_id,
            actor=actor,
            stamp="updated_at",
        ) as update:
            if url is not UNSET:
                webhook.url = url
            if events is not UNSET:
                webhook.events = _events_check(events)
            if description is not UNSET:
                webhook.description = description or ""
            if active is not UNSET and active != webhook.is_active:
                webhook.is_active = active
                # Switched back on by hand: its failures so far no longer count towards
                # disabling.
                webhook.disabled_reason = ""
                webhook.failing_since = None
            if secret:
                webhook.secret_encrypted = crypto.secret_encrypt(secret)
                update.hide("secret")
    return webhook


def deliveries_lock(**filters: object) -> None:
    """Lock the deliveries about to be deleted with their webhook or project, as a worker
    settling one locks it: an attempt being recorded now is committed before they go, and
    none can be added once they are locked (it would reference a delivery about to vanish)."""
    list(Delivery.objects.select_for_update().filter(**filters).values_list("pk"))


def project_deliveries_lock(*, instance: Project, **kwargs: object) -> None:
    """``pre_delete`` of a project, inside its deletion's transaction: lock its deliveries."""
    deliveries_lock(webhook__project_id=instance.pk)


def webhook_delete(*, webhook: Webhook, actor: User | None) -> None:
    with transaction.atomic():
        deliveries_lock(webhook=webhook)
        event_record(
            type="webhook.deleted",
            workspace_id=webhook.project.workspace_id,
            project_id=webhook.project_id,
            actor=actor,
            data={"webhook": webhook_record(webhook)},
        )
        webhook.delete()


def webhook_ping(*, webhook: Webhook, actor: User | None) -> Delivery:
    """Send ``webhook.ping`` to this webhook alone (whatever it subscribes to, even disabled:
    it is how a receiver is tested before the hook is switched back on)."""
    with transaction.atomic():
        event = event_record(
            type="webhook.ping",
            workspace_id=webhook.project.workspace_id,
            project_id=webhook.project_id,
            actor=actor,
            data={"webhook": webhook_record(webhook), "zen": "Deliveries are signed; verify."},
        )
        delivery = Delivery.objects.create(webhook=webhook, event=event)
        Event.objects.filter(pk=event.pk).update(dispatched_at=timezone.now())
        _send_after_commit([(delivery.pk, webhook.pk)])
    return delivery


def delivery_redeliver(*, delivery: Delivery, actor: User | None) -> Delivery:
    """A new delivery (a new uuid) of the same event to the same webhook, sent at once."""
    webhook = delivery.webhook
    if not webhook.is_active:
        raise Conflict(
            "This webhook is disabled: switch it back on (PATCH active=true) first.",
            details={"webhook_active": False},
        )
    with transaction.atomic():
        copy = Delivery.objects.create(
            webhook=webhook, event_id=delivery.event_id, redelivery_of=delivery
        )
        _send_after_commit([(copy.pk, webhook.pk)])
    return copy


# Fan-out and sending -----------------------------------------------------------------------


# Deliveries to one webhook go out in batches of at most this many, sent in turn on the
# receiver's kept connection; a task carries the batches of at most DELIVERY_TASK_BATCHES
# webhooks, sent side by side (``deliveries_send``).
DELIVERY_BATCH = 50
DELIVERY_TASK_BATCHES = 16


def _batches(deliveries: list[tuple[int, int]]) -> list[list[int]]:
    """These ``(delivery id, webhook id)`` as batches of one webhook's delivery ids each, at
    most DELIVERY_BATCH long, in the order given."""
    by_webhook: dict[int, list[int]] = {}
    for delivery_id, webhook_id in deliveries:
        by_webhook.setdefault(webhook_id, []).append(delivery_id)
    return [
        ids[start : start + DELIVERY_BATCH]
        for ids in by_webhook.values()
        for start in range(0, len(ids), DELIVERY_BATCH)
    ]


def _send_after_commit(deliveries: list[tuple[int, int]]) -> None:
    """Queue the sending of these ``(delivery id, webhook id)`` once the transaction commits:
    an event's deliveries to all its webhooks in one task."""
    batches = _batches(deliveries)

    def send() -> None:
        for start in range(0, len(batches), DELIVERY_TASK_BATCHES):
            ids = [i for batch in batches[start : start + DELIVERY_TASK_BATCHES] for i in batch]
            _enqueue(TASKS + "webhook_deliver", delivery_ids=ids)

    if deliveries:
        transaction.on_commit(send)


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
    _send_after_commit(made)
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
        _send_after_commit(made)
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
            .only("id", "type", "project_id")
        )
        if not events:
            return []
        fanned = [e for e in events if e.project_id is not None and e.type not in DIRECT_KINDS]
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
    for each active webhook of the event's project whose patterns select its kind (as
    ``kind_matches`` reads them). A webhook deleted meanwhile fails the statement's foreign
    key check: it is run again, up to FANOUT_ATTEMPTS times."""
    now = timezone.now()
    for attempt in range(1, FANOUT_ATTEMPTS + 1):
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"WITH due AS (SELECT id, type, project_id FROM {_table(Event)} "  # noqa: S608
                    "WHERE id = ANY(%s) AND dispatched_at IS NULL ORDER BY id FOR UPDATE), "
                    f"marked AS (UPDATE {_table(Event)} AS e SET dispatched_at = %s "
                    "FROM due WHERE e.id = due.id), "
                    f"made AS (INSERT INTO {_table(Delivery)} (uuid, webhook_id, event_id, "
                    "status, attempts, next_attempt_at, last_error, created_at) "
                    "SELECT gen_random_uuid(), w.id, due.id, %s, 0, %s, '', %s "
                    f"FROM due JOIN {_table(Webhook)} AS w "
                    "ON w.project_id = due.project_id AND w.is_active "
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


def _deliveries_create(events: list[Event]) -> dict[int, list[Webhook]]:
    """A delivery per event and active webhook of its project that wants its kind; returns
    the webhooks by project. A webhook deleted between the read and the insert fails the
    insert's foreign key: read them again and try again (in a savepoint each time)."""
    if not events:
        return {}
    project_ids = {event.project_id for event in events}
    attempt = 1
    while True:
        hooks: dict[int, list[Webhook]] = {}
        for hook in Webhook.objects.filter(project_id__in=project_ids, is_active=True):
            hooks.setdefault(hook.project_id, []).append(hook)
        try:
            with transaction.atomic():
                Delivery.objects.bulk_create(
                    [
                        Delivery(webhook=hook, event=event)
                        for event in events
                        for hook in hooks.get(event.project_id or 0, [])
                        if kind_matches(event.type, hook.events)
                    ],
                    ignore_conflicts=True,
                )
            return hooks
        except IntegrityError:
            if attempt == FANOUT_ATTEMPTS:
                raise
            attempt += 1


def retry_delay(attempt: int) -> float:
    """Seconds before the next try after ``attempt`` failed: exponential, with jitter.

    With the defaults (15 s doubling, capped at 4 h, 15 attempts) the last try comes about a
    day after the first.
    """
    base: float = settings.WEBHOOK_RETRY_BASE_SECONDS * 2 ** (attempt - 1)
    cap: float = settings.WEBHOOK_RETRY_MAX_SECONDS
    return min(base, cap) * random.uniform(0.8, 1.2)  # noqa: S311


def delivery_send(*, delivery_id: int) -> Delivery | None:
    """Claim the delivery if it is due and nobody holds it, POST it once, record the outcome.

    Returns None when there was nothing to do (done already, not due, or claimed by another
    worker), so a task run twice sends once.
    """
    [sent] = deliveries_send(delivery_ids=[delivery_id])
    return sent


def deliveries_send(*, delivery_ids: list[int], wait: bool = True) -> list[Delivery | None]:
    """Send these deliveries, each as ``delivery_send`` does, in a few statements for the lot:
    one reads them with their webhooks and events, one claims every one still due (a lease
    each), and each send is settled in one more. Those of one webhook go in turn, in the order
    given; each webhook's turn runs beside the others' on the process's senders, so a slow
    receiver holds up only its own. Returns what ``delivery_send`` would for each.

    Without ``wait``, every turn is handed to the senders and this returns at once (a list of
    None): the caller, a worker's thread, is free for the next task while a slow receiver's
    turn runs out. At most SENDER_BACKLOG turns wait for a sender; past that this waits for a
    place. A worker that dies meanwhile leaves its claims to lapse, for the sweeper."""
    if not delivery_ids:
        return []
    found = {
        delivery.pk: delivery
        for delivery in Delivery.objects.select_related("webhook", "event").filter(
            pk__in=delivery_ids, status=Delivery.Status.PENDING
        )
    }
    by_webhook: dict[int, list[Delivery]] = {}
    for delivery_id in delivery_ids:
        if delivery_id in found:
            by_webhook.setdefault(found[delivery_id].webhook_id, []).append(found[delivery_id])
    groups = _deliveries_claim(list(by_webhook.values()))
    # Not held while the receivers answer, nor while waiting on the other senders, which
    # need connections of their own.
    _connection_release()
    sent: dict[int, Delivery | None] = {}
    if groups and not wait:
        for group in groups:
            _sender_backlog().acquire()
            future = senders().submit(_in_thread, _webhook_send, group)
            future.add_done_callback(_turn_done)
        return [None] * len(delivery_ids)
    if groups:
        others = [senders().submit(_in_thread, _webhook_send, group) for group in groups[1:]]
        try:
            sent.update(_webhook_send(groups[0]))
        finally:
            _connection_release()
        for future in others:
            sent.update(future.result())
    return [sent.get(delivery_id) for delivery_id in delivery_ids]


def _deliveries_claim(groups: list[list[Delivery]]) -> list[list[Delivery]]:
    """Claim the deliveries of these webhook turns that are still due and held by nobody, in
    one statement; returns the turns with only what was claimed.

    Each claim is a lease long enough for the sends ahead of it in its turn and its own (a
    worker killed mid-turn leaves the rest to be taken up once their leases lapse). The
    attempt count read with the row is part of the claim: a delivery attempted by another
    worker since is not claimed on a stale count.
    """
    wanted = [delivery for group in groups for delivery in group]
    if not wanted:
        return []
    now = timezone.now()
    turn = timedelta(seconds=settings.WEBHOOK_TIMEOUT_SECONDS + settings.WEBHOOK_HOST_WAIT_SECONDS)
    margin = timedelta(seconds=settings.WEBHOOK_LEASE_MARGIN_SECONDS)
    leases = {
        delivery.pk: now + turn * (position + 1) + margin
        for group in groups
        for position, delivery in enumerate(group)
    }
    if connection.vendor == "postgresql":
        mine = _claim_postgresql(wanted, leases, now)
    else:
        Delivery.objects.filter(
            pk__in=leases, status=Delivery.Status.PENDING, next_attempt_at__lte=now
        ).filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)).filter(
            attempts=Case(*[When(pk=d.pk, then=Value(d.attempts)) for d in wanted])
        ).update(
            claimed_until=Case(
                *[When(pk=pk, then=Value(lease)) for pk, lease in leases.items()],
                output_field=DateTimeField(),
            ),
            attempts=F("attempts") + 1,
        )
        held = Delivery.objects.filter(pk__in=leases).values_list("pk", "claimed_until")
        mine = {pk for pk, lease in held if lease == leases[pk]}
    claimed: list[list[Delivery]] = []
    for group in groups:
        turn_claimed = [d for d in group if d.pk in mine]
        for delivery in turn_claimed:
            delivery.attempts += 1
            delivery.claimed_until = leases[delivery.pk]
        if turn_claimed:
            claimed.append(turn_claimed)
    return claimed


def _claim_postgresql(
    deliveries: list[Delivery], leases: dict[int, datetime], now: datetime
) -> set[int]:
    """The claims of ``_deliveries_claim`` as one statement that says which it took."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {_table(Delivery)} AS d "  # noqa: S608 - the model's own table
            "SET claimed_until = v.lease, attempts = d.attempts + 1 "
            "FROM unnest(%s::bigint[], %s::integer[], %s::timestamptz[]) AS v(id, attempts, lease) "
            "WHERE d.id = v.id AND d.attempts = v.attempts AND d.status = %s "
            "AND d.next_attempt_at <= %s AND (d.claimed_until IS NULL OR d.claimed_until < %s) "
            "RETURNING d.id",
            [
                [d.pk for d in deliveries],
                [d.attempts for d in deliveries],
                [leases[d.pk] for d in deliveries],
                Delivery.Status.PENDING,
                now,
                now,
            ],
        )
        return {row[0] for row in cursor.fetchall()}


def _table(model: type[Any]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


_senders: ThreadPoolExecutor | None = None
_senders_lock = threading.Lock()


# Webhook turns handed to the senders without waiting, per sender, at most.
SENDER_BACKLOG = 4
_backlog: threading.BoundedSemaphore | None = None


def _sender_backlog() -> threading.BoundedSemaphore:
    global _backlog  # noqa: PLW0603 - one per process, made on first use
    with _senders_lock:
        if _backlog is None:
            _backlog = threading.BoundedSemaphore(settings.WEBHOOK_SENDERS * SENDER_BACKLOG)
        return _backlog


def _turn_done(future: Future[dict[int, Delivery | None]]) -> None:
    """A turn handed on without waiting has ended: its place is free, and what went wrong is
    logged (its claims lapse and the sweeper takes them up)."""
    _sender_backlog().release()
    error = future.exception()
    if error is not None:
        logger.error("A webhook turn failed", exc_info=error)


def senders() -> ThreadPoolExecutor:
    """This process's threads that send to webhooks side by side (WEBHOOK_SENDERS)."""
    global _senders  # noqa: PLW0603 - one pool per process, made on first use
    with _senders_lock:
        if _senders is None:
            _senders = ThreadPoolExecutor(
                max_workers=settings.WEBHOOK_SENDERS, thread_name_prefix="collab-webhook-sender"
            )
        return _senders


def _in_thread(function: Callable[..., T], *args: Any) -> T:
    """Run on a sender thread with a usable database connection, given back afterwards (to
    the pool; closed without one, so an idle sender holds none)."""
    close_old_connections()
    try:
        return function(*args)
    finally:
        connection.close()


def _webhook_send(deliveries: list[Delivery]) -> dict[int, Delivery | None]:
    """One webhook's claimed deliveries in turn. Once its receiver is busy, the rest are
    handed back untried, for a moment later."""
    webhook = deliveries[0].webhook
    sent: dict[int, Delivery | None] = {}
    try:
        secret = crypto.secret_decrypt(webhook.secret_encrypted)
    except RuntimeError:
        # Its key is gone (WEBHOOK_ENCRYPTION_KEYS changed without keeping the old one): this
        # webhook's deliveries wait, the others' go on.
        logger.exception("Webhook %s: its secret cannot be decrypted", webhook.pk)
        _deliveries_defer(deliveries)
        return sent
    for index, delivery in enumerate(deliveries):
        # One instance of the webhook, so what a send learns of its health the next knows.
        delivery.webhook = webhook
        result = _delivery_send_one(delivery, secret=secret)
        if result == "deferred":
            _deliveries_defer(deliveries[index:])
            return sent
        sent[delivery.pk] = result
    return sent


def _delivery_send_one(delivery: Delivery, *, secret: str) -> Delivery | Literal["deferred"]:
    """One claimed delivery sent and settled; "deferred" when handed back untried."""
    webhook, event = delivery.webhook, delivery.event
    # Serialised once: these bytes are signed and sent, nothing is re-encoded in between.
    body = dumps(event.as_payload())
    timestamp = int(time.time())
    headers = signing.delivery_headers(
        secret=secret,
        event_type=event.type,
        delivery_id=str(delivery.uuid),
        attempt=delivery.attempts,
        timestamp=timestamp,
        body=body,
    )
    started = timezone.now()
    result = transport.post(
        webhook.url, body=body, headers=headers, timeout=settings.WEBHOOK_TIMEOUT_SECONDS
    )
    if result.deferred:
        return "deferred"
    return _delivery_settle(delivery, started=started, headers=headers, result=result)


def _connection_release() -> None:
    """Hand a pooled database connection back while the POST waits on the receiver (for up
    to WEBHOOK_TIMEOUT_SECONDS): a worker's senders may outnumber its pool's connections."""
    if getattr(connection, "pool", None) is not None and not connection.in_atomic_block:
        connection.close()


def _deliveries_defer(deliveries: list[Delivery]) -> None:
    """Hand these claims back untried (their receiver has its fill of deliveries in flight):
    due again in a moment, with the attempt they did not make given back. As a retry does,
    the moment rides the broker only within WEBHOOK_COUNTDOWN_MAX_SECONDS (none on the
    embedded default's: there the row waits for the sweeper)."""
    delay = settings.WEBHOOK_BUSY_DEFER_SECONDS * random.uniform(1, 2)  # noqa: S311
    for delivery in deliveries:
        Delivery.objects.filter(pk=delivery.pk, claimed_until=delivery.claimed_until).update(
            claimed_until=None,
            attempts=F("attempts") - 1,
            next_attempt_at=timezone.now() + timedelta(seconds=delay),
        )
    if delay <= settings.WEBHOOK_COUNTDOWN_MAX_SECONDS:
        _enqueue(
            TASKS + "webhook_deliver",
            countdown=delay,
            delivery_ids=[delivery.pk for delivery in deliveries],
        )


def _delivery_settle(
    delivery: Delivery,
    *,
    started: datetime,
    headers: dict[str, str],
    result: transport.PostResult,
) -> Delivery:
    now = timezone.now()
    webhook = delivery.webhook
    retry_in = None
    update: dict[str, Any] = {
        "claimed_until": None,
        "last_status_code": result.status_code,
        "last_error": result.error or ("" if result.ok else f"HTTP {result.status_code}"),
    }
    if result.ok:
        update.update(status=Delivery.Status.SUCCEEDED, completed_at=now)
    elif result.retryable and delivery.attempts < settings.WEBHOOK_MAX_ATTEMPTS:
        retry_in = retry_delay(delivery.attempts)
        update["next_attempt_at"] = now + timedelta(seconds=retry_in)
    else:
        update.update(status=Delivery.Status.FAILED, completed_at=now)
    attempt = DeliveryAttempt(
        delivery=delivery,
        number=delivery.attempts,
        started_at=started,
        duration_ms=result.duration_ms,
        status_code=result.status_code,
        error=result.error,
        response_excerpt=result.response_excerpt,
        request_headers={k: v for k, v in headers.items() if "signature" not in k.lower()},
    )
    # Only while our lease holds (past it another worker may have claimed the delivery).
    if _settle_write(delivery, update, attempt):
        for name, value in update.items():
            setattr(delivery, name, value)
    else:
        with transaction.atomic():
            # Lease lost: the attempt is still logged, if the delivery is still there (its
            # webhook may have been deleted while the POST was out); locked until commit, so
            # its webhook cannot be deleted under the attempt.
            if not Delivery.objects.select_for_update().filter(pk=delivery.pk).values_list("pk"):
                _delivery_drop(delivery)
                return delivery
            attempt.save()
    _webhook_health(webhook, ok=result.ok, now=now)
    if retry_in is not None and retry_in <= settings.WEBHOOK_COUNTDOWN_MAX_SECONDS:
        # Short waits ride the broker; longer ones wait on the row for the sweeper, since a
        # Redis broker redelivers countdowns past its visibility timeout again and again.
        _enqueue(TASKS + "webhook_deliver", countdown=retry_in, delivery_id=delivery.pk)
    return delivery


# Deliveries this process dropped because their webhook was deleted while they were out.
_dropped_lock = threading.Lock()
_dropped_total = 0


def _delivery_drop(delivery: Delivery) -> None:
    """A delivery whose webhook was deleted while it was out (the rows went with it): nothing
    to record and nothing to retry. Logged, and counted (``deliveries_dropped``)."""
    global _dropped_total  # noqa: PLW0603 - one count per process
    with _dropped_lock:
        _dropped_total += 1
    logger.info(
        "Delivery %s (attempt %s) dropped: its webhook is gone", delivery.uuid, delivery.attempts
    )


def deliveries_dropped() -> int:
    """How many deliveries this process dropped because their webhook was gone."""
    return _dropped_total


def _settle_write(delivery: Delivery, update: dict[str, Any], attempt: DeliveryAttempt) -> bool:
    """The delivery's outcome and its attempt's log row, written while the lease holds;
    whether it held. One statement on PostgreSQL (the attempt inserted from the update's
    returned row), two elsewhere."""
    if connection.vendor != "postgresql":
        settling = Delivery.objects.filter(pk=delivery.pk, claimed_until=delivery.claimed_until)
        with transaction.atomic():
            if not settling.update(**update):
                return False
            attempt.save()
            return True
    headers = DeliveryAttempt._meta.get_field("request_headers")
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH settled AS (UPDATE {_table(Delivery)} "  # noqa: S608 - the models' own tables
            "SET claimed_until = NULL, last_status_code = %s, last_error = %s, "
            "status = COALESCE(%s, status), completed_at = COALESCE(%s, completed_at), "
            "next_attempt_at = COALESCE(%s, next_attempt_at) "
            "WHERE id = %s AND claimed_until = %s RETURNING id) "
            f"INSERT INTO {_table(DeliveryAttempt)} (delivery_id, number, started_at, "
            "duration_ms, status_code, error, response_excerpt, request_headers) "
            "SELECT id, %s, %s, %s, %s, %s, %s, %s FROM settled RETURNING id",
            [
                update["last_status_code"],
                update["last_error"],
                update.get("status"),
                update.get("completed_at"),
                update.get("next_attempt_at"),
                delivery.pk,
                delivery.claimed_until,
                attempt.number,
                attempt.started_at,
                attempt.duration_ms,
                attempt.status_code,
                attempt.error,
                attempt.response_excerpt,
                headers.get_db_prep_save(attempt.request_headers, connection),
            ],
        )
        row = cursor.fetchone()
    if row is None:
        return False
    attempt.pk = row[0]
    attempt._state.adding = False
    return True


# A healthy webhook's ``last_delivery_at`` is moved at most this often: at hundreds of
# deliveries a second, writing it each time would queue every sender on the webhook's row.
LAST_DELIVERY_STEP = timedelta(seconds=1)


def _webhook_health(webhook: Webhook, *, ok: bool, now: datetime) -> None:
    if ok:
        last = webhook.last_delivery_at
        if webhook.failing_since is None and last is not None and now - last < LAST_DELIVERY_STEP:
            return
        Webhook.objects.filter(pk=webhook.pk).update(failing_since=None, last_delivery_at=now)
        webhook.failing_since, webhook.last_delivery_at = None, now
        return
    hooks = Webhook.objects.filter(pk=webhook.pk)
    if webhook.failing_since is None:
        hooks.filter(failing_since__isnull=True).update(failing_since=now)
        webhook.failing_since = now
    limit = now - timedelta(hours=settings.WEBHOOK_DISABLE_AFTER_HOURS)
    if webhook.failing_since > limit:
        return  # not failing for long enough yet
    reason = (
        f"Every delivery failed for {settings.WEBHOOK_DISABLE_AFTER_HOURS} hours; "
        "switched off. PATCH active=true to switch it back on."
    )
    with transaction.atomic():
        if not hooks.filter(is_active=True, failing_since__lte=limit).update(
            is_active=False, disabled_reason=reason, updated_at=now
        ):
            return
        webhook.refresh_from_db()
        event_record(
            type="webhook.disabled",
            workspace_id=webhook.project.workspace_id,
            project_id=webhook.project_id,
            actor=None,
            data={"webhook": webhook_record(webhook), "reason": reason},
        )
        transaction.on_commit(
            partial(_enqueue, TASKS + "webhook_disabled_notify", webhook_id=webhook.pk)
        )
    logger.warning("Webhook %s disabled after failing since %s", webhook.pk, limit)


# Deliveries a sweep queues, in all and per webhook.
SWEEP_DELIVERIES = 1000
SWEEP_PER_WEBHOOK = 2 * DELIVERY_BATCH


def deliveries_sweep() -> dict[str, int]:
    """Hand over what no task is on its way for: events never fanned out (the broker was
    down at commit), and deliveries due whose send never ran or whose worker died."""
    now = timezone.now()
    stale_events = list(
        Event.objects.filter(
            dispatched_at__isnull=True,
            created_at__lte=now - timedelta(seconds=settings.WEBHOOK_SWEEP_GRACE_SECONDS),
        )
        .order_by("id")
        .values_list("id", flat=True)[:500]
    )
    if stale_events:
        events_fanout(event_ids=stale_events)
    due = list(
        Delivery.objects.filter(
            status=Delivery.Status.PENDING,
            next_attempt_at__lte=now - timedelta(seconds=settings.WEBHOOK_SWEEP_GRACE_SECONDS),
        )
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .annotate(
            place=Window(
                RowNumber(), partition_by=[F("webhook_id")], order_by=F("next_attempt_at").asc()
            )
        )
        .filter(place__lte=SWEEP_PER_WEBHOOK)
        .order_by("next_attempt_at")
        .values_list("id", "webhook_id")[:SWEEP_DELIVERIES]
    )
    # In batches by webhook, as a fan-out queues them: a few tasks, not one per delivery, so
    # the sweep of a receiver that was down all day does not queue ahead of everyone's next
    # event; and a fair share each, so one webhook's backlog does not fill the sweep.
    batches = _batches(due)
    for start in range(0, len(batches), DELIVERY_TASK_BATCHES):
        ids = [i for batch in batches[start : start + DELIVERY_TASK_BATCHES] for i in batch]
        _enqueue(TASKS + "webhook_deliver", delivery_ids=ids)
    return {"events": len(stale_events), "deliveries": len(due)}


def webhook_disabled_notify(*, webhook_id: int) -> int:
    """Email the owners and admins of the webhook's workspace that it was switched off."""
    from django.core.mail import send_mail

    webhook = Webhook.objects.select_related("project").filter(pk=webhook_id).first()
    if webhook is None or webhook.is_active:
        return 0
    recipients = list(
        Membership.objects.filter(
            workspace_id=webhook.project.workspace_id,
            role__in=[Role.OWNER, Role.ADMIN],
            user__status="active",
        ).values_list("user__email", flat=True)
    )
    if not recipients:
        return 0
    send_mail(
        subject=f"Webhook disabled on {webhook.project.name}: {webhook.url}",
        message=(
            f"The webhook {webhook.url} of the project {webhook.project.name} was switched "
            f"off.\n\n{webhook.disabled_reason}\n\nIts delivery log: "
            f"{settings.PUBLIC_BASE_URL}/v1/webhooks/{webhook.pk}/deliveries\n"
        ),
        from_email=None,
        recipient_list=recipients,
    )
    return len(recipients)
