"""Writing to the event log: every app records its changes here, inside their transaction.

The log knows nothing of who reads it. The consumers above it (webhooks, the stream) are named
in ``settings.EVENT_LOG_CONSUMERS`` as dotted paths to functions taking a list of event ids (in
the order they were recorded); each is called after the recording transaction commits, once
per ``event_record`` and once for all the events of an ``event_record_many``.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache, partial
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.core.signals import setting_changed
from django.db import models, transaction
from django.db.models import Max
from django.dispatch import receiver
from django.utils import timezone
from django.utils.module_loading import import_string

from collab.api.acting import actor_detail_of
from collab.db.writebatch import WriteBatch
from collab.tracing import current_traceparent

from .models import Event, EventLogState

Changes = dict[str, dict[str, Any]]
ModelT = TypeVar("ModelT", bound=models.Model)


@cache
def _consumers() -> tuple[Callable[[list[int]], None], ...]:
    return tuple(import_string(path) for path in settings.EVENT_LOG_CONSUMERS)


@receiver(setting_changed)
def _forget_consumers(*, setting: str, **kwargs: Any) -> None:
    if setting == "EVENT_LOG_CONSUMERS":
        _consumers.cache_clear()


def _events_committed(event_ids: list[int]) -> None:
    for consumer in _consumers():
        consumer(event_ids)


def event_record(
    *,
    type: str,
    workspace_id: int,
    data: dict[str, Any],
    project_id: int | None = None,
    actor: models.Model | int | None = None,
    changes: Changes | None = None,
    batch: WriteBatch | None = None,
) -> Event:
    """Append an event to the durable log, inside the caller's transaction.

    Services call it from within their ``transaction.atomic()`` block so that the event
    exists if and only if the change it describes was committed. The consumers hear of it
    after commit. With ``batch``, the event's row goes with the change's other writes, in
    the batch the service runs in the same transaction (its id is set once the batch ran).
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("event_record() must run inside the transaction of the change.")
    actor_id: int | None = actor.pk if isinstance(actor, models.Model) else actor
    values = {
        "type": type,
        "workspace_id": workspace_id,
        "project_id": project_id,
        "actor_id": actor_id,
        "actor_detail": actor_detail_of(actor),
        "data": data,
        "changes": changes,
        "traceparent": current_traceparent(),
    }
    if batch is None:
        event = Event.objects.create(**values)
        transaction.on_commit(partial(_events_committed, [event.pk]))
        return event
    event = Event(**values)
    batch.insert([event], returning=True)
    batch.on_run(lambda: transaction.on_commit(partial(_events_committed, [event.pk])))
    return event


def event_record_many(events: list[dict[str, Any]]) -> list[Event]:
    """``event_record`` for several changes of one transaction, in one statement: each dict
    holds ``event_record``'s arguments. Their ids follow their order."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("event_record_many() must run inside the transaction of the change.")
    traceparent = current_traceparent()
    rows = Event.objects.bulk_create([_event_row(event, traceparent) for event in events])
    # One hook for them all: the consumers hand the batch on at once (one fan-out task).
    transaction.on_commit(partial(_events_committed, [row.pk for row in rows]))
    return rows


def _event_row(event: dict[str, Any], traceparent: str) -> Event:
    actor = event.get("actor")
    actor_id = getattr(actor, "pk", actor)
    return Event(
        type=event["type"],
        workspace_id=event["workspace_id"],
        project_id=event.get("project_id"),
        actor_id=actor_id,
        actor_detail=actor_detail_of(actor),
        data=event["data"],
        changes=event.get("changes"),
        traceparent=traceparent,
    )


def changes_diff(before: dict[str, Any], after: dict[str, Any]) -> Changes:
    """``{field: {"previous", "current"}}`` for every field whose value changed."""
    return {
        name: {"previous": before.get(name), "current": value}
        for name, value in after.items()
        if before.get(name) != value
    }


@dataclass
class ModelUpdate(Generic[ModelT]):
    """What ``model_update`` hands the block that changes the instance, and what it found."""

    instance: ModelT
    before: dict[str, Any]
    changes: Changes = field(default_factory=dict)
    # Changes the snapshot cannot show (a secret replaced: its value is never compared).
    hidden: list[str] = field(default_factory=list)

    def hide(self, name: str) -> None:
        self.hidden.append(name)


@contextmanager
def model_update(
    instance: ModelT,
    *,
    snapshot: Callable[[ModelT], dict[str, Any]],
    event_type: str | Callable[[Changes], str],
    payload: Callable[[ModelT], dict[str, Any]],
    workspace_id: int,
    project_id: int | None,
    actor: models.Model | int | None,
    stamp: str | None = None,
) -> Iterator[ModelUpdate[ModelT]]:
    """Snapshot, change, diff, save and record, the one way every update does it.

    The block sets attributes on ``instance`` (and may raise to refuse the change, saving
    nothing). On leaving it, the snapshot is taken again; when something differs, ``stamp``
    (a timestamp field) is set to now, the instance is saved, and one event of ``event_type``
    (or of the kind that function gives for the changes) carries ``payload(instance)`` and the
    changes. No change: no save, no event. Runs inside the caller's transaction.
    """
    update = ModelUpdate(instance=instance, before=snapshot(instance))
    yield update
    changes = changes_diff(update.before, snapshot(instance))
    for name in update.hidden:
        changes[name] = {"previous": "[hidden]", "current": "[hidden]"}
    update.changes = changes
    if not changes:
        return
    if stamp is not None:
        setattr(instance, stamp, timezone.now())
    instance.save()
    event_record(
        type=event_type(changes) if callable(event_type) else event_type,
        workspace_id=workspace_id,
        project_id=project_id,
        actor=actor,
        data=payload(instance),
        changes=changes,
    )


def events_purge(*, older_than_days: int) -> int:
    """Drop events older than the retention (what hangs on them, such as webhook deliveries,
    goes with them) and remember the highest id dropped, so a stream resuming before it is
    told to resynchronise."""
    cutoff = timezone.now() - timedelta(days=older_than_days)
    old = Event.objects.filter(created_at__lt=cutoff)
    highest = old.aggregate(highest=Max("id"))["highest"]
    if highest is None:
        return 0
    with transaction.atomic():
        deleted = Event.objects.filter(pk__lte=highest, created_at__lt=cutoff).delete()[1]
        state, _ = EventLogState.objects.select_for_update().get_or_create(pk=1)
        if highest > state.purged_through_id:
            state.purged_through_id = highest
            state.save()
    return deleted.get(Event._meta.label, 0)
