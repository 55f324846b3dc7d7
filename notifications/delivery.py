"""The delivery engine, infrastructure the services call: claims, the senders' thread pool,
the POST of the signed bytes, the settle of each attempt, and the health of each webhook.

A send claims its deliveries with a conditional UPDATE (a lease each), posts the signed bytes,
and settles each delivery with its attempt's log row: finished, or due again at a set time. On
PostgreSQL a task's claims and each settle are one statement apiece."""

import contextvars
import logging
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Literal, TypeVar

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import Case, DateTimeField, F, Q, Value, When
from django.utils import timezone

from collab import tracing
from collab.api.renderers import dumps
from events.services import event_record

from . import crypto, dispatch, signing, transport
from .metrics import (
    WEBHOOK_DELIVERIES,
    WEBHOOK_DELIVERY_LAG,
    WEBHOOK_RECEIVERS_DEFERRED,
)
from .models import Delivery, DeliveryAttempt, Webhook
from .records import webhook_record

logger = logging.getLogger("collab.webhooks")
T = TypeVar("T")


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
            future = senders().submit(_in_context(), _in_thread, _webhook_send, group)
            future.add_done_callback(_turn_done)
        return [None] * len(delivery_ids)
    if groups:
        others = [
            senders().submit(_in_context(), _in_thread, _webhook_send, group)
            for group in groups[1:]
        ]
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
            f"UPDATE {quoted_table(Delivery)} AS d "  # noqa: S608 - the model's own table
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


def quoted_table(model: type[Any]) -> str:
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


def _in_context() -> Callable[..., Any]:
    """Runs a function in a copy of the caller's context: a turn on a sender thread logs with
    the task's fields and sends within its trace (collab/tracing.py)."""
    return contextvars.copy_context().run


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
        # In the trace of the request that made its event, whichever task sends it (a fan-out
        # or a batch of deliveries takes the events of many requests at once).
        with tracing.continued(
            delivery.event.traceparent,
            "webhook deliver",
            {"collab.event.type": delivery.event.type, "collab.delivery.id": str(delivery.uuid)},
        ):
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
    WEBHOOK_DELIVERIES.labels("deferred").inc(len(deliveries))
    WEBHOOK_RECEIVERS_DEFERRED.inc(len(deliveries))
    for delivery in deliveries:
        Delivery.objects.filter(pk=delivery.pk, claimed_until=delivery.claimed_until).update(
            claimed_until=None,
            attempts=F("attempts") - 1,
            next_attempt_at=timezone.now() + timedelta(seconds=delay),
        )
    if delay <= settings.WEBHOOK_COUNTDOWN_MAX_SECONDS:
        dispatch.enqueue(
            dispatch.TASKS + "webhook_deliver",
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
        outcome = "succeeded"
    elif result.retryable and delivery.attempts < settings.WEBHOOK_MAX_ATTEMPTS:
        retry_in = retry_delay(delivery.attempts)
        update["next_attempt_at"] = now + timedelta(seconds=retry_in)
        outcome = "retried"
    else:
        update.update(status=Delivery.Status.FAILED, completed_at=now)
        outcome = "failed"
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
    WEBHOOK_DELIVERIES.labels(outcome).inc()
    if result.ok:
        WEBHOOK_DELIVERY_LAG.observe(max(0.0, (now - delivery.event.created_at).total_seconds()))
    if retry_in is not None and retry_in <= settings.WEBHOOK_COUNTDOWN_MAX_SECONDS:
        # Short waits ride the broker; longer ones wait on the row for the sweeper, since a
        # Redis broker redelivers countdowns past its visibility timeout again and again.
        dispatch.enqueue(
            dispatch.TASKS + "webhook_deliver", countdown=retry_in, delivery_id=delivery.pk
        )
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
    WEBHOOK_DELIVERIES.labels("dropped").inc()
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
            f"WITH settled AS (UPDATE {quoted_table(Delivery)} "  # noqa: S608 - the models' own tables
            "SET claimed_until = NULL, last_status_code = %s, last_error = %s, "
            "status = COALESCE(%s, status), completed_at = COALESCE(%s, completed_at), "
            "next_attempt_at = COALESCE(%s, next_attempt_at) "
            "WHERE id = %s AND claimed_until = %s RETURNING id) "
            f"INSERT INTO {quoted_table(DeliveryAttempt)} (delivery_id, number, started_at, "
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
            is_active=False,
            disabled_reason=reason,
            updated_at=now,
            # The admins' email is owed from now until it has gone out.
            disabled_notify_queued_at=now,
            disabled_notify_claimed_until=None,
            disabled_notified_at=None,
        ):
            return
        webhook.refresh_from_db()
        event_record(
            type="webhook.disabled",
            workspace_id=webhook.workspace_id,
            project_id=webhook.project_id,
            actor=None,
            data={"webhook": webhook_record(webhook), "reason": reason},
        )
        transaction.on_commit(
            partial(
                dispatch.enqueue, dispatch.TASKS + "webhook_disabled_notify", webhook_id=webhook.pk
            )
        )
    logger.warning("Webhook %s disabled after failing since %s", webhook.pk, limit)
