"""The one API every app uses to record what happened."""

from django.db import transaction

from .models import Event


def event_record(
    *,
    type: str,
    workspace_id: int,
    data: dict,
    project_id: int | None = None,
    actor=None,
    changes: dict | None = None,
) -> Event:
    """Append an event to the durable log, inside the caller's transaction.

    Services call it from within their ``transaction.atomic()`` block so that the event
    exists if and only if the change it describes was committed.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("event_record() must run inside the transaction of the change.")
    return Event.objects.create(
        type=type,
        workspace_id=workspace_id,
        project_id=project_id,
        actor_id=getattr(actor, "pk", actor),
        data=data,
        changes=changes,
    )


def diff(before: dict, after: dict) -> dict:
    """``{field: {"previous", "current"}}`` for every field whose value changed."""
    return {
        name: {"previous": before.get(name), "current": value}
        for name, value in after.items()
        if before.get(name) != value
    }
