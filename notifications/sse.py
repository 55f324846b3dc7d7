"""``GET /v1/events/stream``: Server-Sent Events over the hub of notifications/stream.py.

The request is checked like any other (credentials, scope, filters: errors are the usual JSON
envelope); then the response streams from an async generator, so it needs the ASGI server
(``collab.asgi``), where one process holds thousands of streams.

A stream replays what came after ``Last-Event-ID`` from the durable log, then goes live. To
leave no hole between the two, it subscribes to the hub first, replays up to the id the hub
stood at, and only then drains what the hub queued meanwhile (skipping what it replayed).
"""

import asyncio
import time

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.http import Http404

from accounts.roles import project_limit
from collab.api.exceptions import BadRequest
from collab.api.filters import is_id
from projects import selectors as project_selectors

from . import selectors, stream
from .filters import TypesField
from .metrics import STREAM_FRAMES_SENT


def parse_last_event_id(request) -> int | None:
    """The header an EventSource sends on reconnection, else the query parameter; each one
    given must be an event id (or 0)."""
    given = [request.headers.get("Last-Event-ID"), request.query_params.get("last_event_id")]
    given = [raw for raw in given if raw is not None]  # empty is no id: refused
    for raw in given:
        if raw != "0" and not is_id(raw):
            raise BadRequest(
                "Last-Event-ID must be an event id.",
                details={"last_event_id": [f"Expected an event id or 0, got '{raw}'."]},
            )
    return int(given[0]) if given else None


def stream_options(request) -> dict:
    """The stream's subscriber and starting point, checked now: a bad filter answers 400, an
    unseen project 404 (before the response starts, so in the JSON envelope)."""
    params = request.query_params
    only_project = None
    raw_project = params.get("project_id")
    if raw_project is not None:
        if not is_id(raw_project):
            raise BadRequest(
                "Invalid query parameters.", details={"project_id": ["Enter a whole number."]}
            )
        project = project_selectors.project_get(
            user=request.user, project_id=raw_project, with_team_count=False
        )
        if project is None:
            raise Http404
        only_project = project.pk
    types = None
    if params.get("types") is not None:
        try:
            types = TypesField(required=False).clean(params["types"]) or None
        except ValidationError as exc:
            raise BadRequest("Invalid query parameters.", details={"types": exc.messages}) from None
        if types is None:
            raise BadRequest(
                "Invalid query parameters.", details={"types": ["An empty value is not allowed."]}
            )
    # What it may see is read as it joins the hub (with the other streams joining then).
    subscriber = stream.Subscriber(
        user_id=request.user.pk,
        types=types,
        only_project=only_project,
        project_limit=project_limit(request.user),
    )
    return {"subscriber": subscriber, "last_event_id": parse_last_event_id(request)}


def resync_frame(current: int, last_event_id: int, purged: int) -> bytes:
    """What a client resuming from a purged id gets instead of a replay with a hole in it;
    its id is the log's current one, so a reconnection does not ask again."""
    return (
        b"id: %d\nevent: resync_required\ndata: "
        b'{"last_event_id": %d, "purged_through_id": %d}\n\n' % (current, last_event_id, purged)
    )


async def event_stream(*, subscriber: stream.Subscriber, last_event_id: int | None):
    hub = stream.hub()
    boundary = await hub.subscribe(subscriber)
    # What the client already has: nothing at or below its cursor is sent again. The hub also
    # hands on events that commit late (an id below ones already read), and one of those can
    # sit below the cursor of a stream opened after the later ones.
    floor = last_event_id
    replayed: set[int] = set()
    try:
        yield b": connected\n\n"
        if last_event_id is not None and last_event_id < boundary:
            purged = await stream.in_thread(stream.purged_through)
            if last_event_id < purged:
                yield resync_frame(boundary, last_event_id, purged)
                floor = boundary  # the resync frame's id is the client's cursor now
            else:
                async for event in _replay(subscriber, last_event_id, boundary):
                    replayed.add(event.id)
                    STREAM_FRAMES_SENT.inc()
                    yield event.frame()
        queue = subscriber.queue
        ends = _end_of_stream()
        while True:
            wait = settings.EVENT_STREAM_HEARTBEAT_SECONDS
            if ends is not None:
                wait = min(wait, ends - time.monotonic())
                if wait <= 0:
                    return
            try:
                # A timeout scope, not wait_for: that wraps each wait in a task of its own,
                # and every event wakes every stream of the process.
                async with asyncio.timeout(wait):
                    item = await queue.get()
            except TimeoutError:
                if ends is None or time.monotonic() < ends:
                    yield b": heartbeat\n\n"
                continue
            # What queued up meanwhile goes out in the same write.
            frames: list[bytes] = []
            while True:
                if item is stream.CLOSE:
                    if frames:
                        STREAM_FRAMES_SENT.inc(len(frames))
                        yield b"".join(frames)
                    return
                if item.id not in replayed and (floor is None or item.id > floor):
                    frames.append(item.frame())
                if queue.empty():
                    break
                item = queue.get_nowait()
            if frames:
                STREAM_FRAMES_SENT.inc(len(frames))
                yield b"".join(frames)
    finally:
        hub.unsubscribe(subscriber)


def _end_of_stream() -> float | None:
    """When a stream opened now closes (``time.monotonic()``), if streams have a lifetime
    (``EVENT_STREAM_MAX_SECONDS``): the client reconnects with ``Last-Event-ID`` and misses
    nothing, and no connection outlives a deploy or a proxy's limit by much."""
    limit = settings.EVENT_STREAM_MAX_SECONDS
    return time.monotonic() + limit if limit > 0 else None


async def _replay(subscriber: stream.Subscriber, after: int, upto: int):
    query = selectors.event_visibility_q(
        project_ids=subscriber.project_ids, workspace_ids=subscriber.records_workspace_ids
    )
    if subscriber.only_project is not None:
        query &= Q(project_id=subscriber.only_project)
    if subscriber.types is not None:
        query &= selectors.types_q(subscriber.types)
    cursor = after
    while True:
        events = await stream.in_thread(stream.events_after, cursor, upto=upto, query=query)
        for event in events:
            yield event
        if len(events) < stream.BATCH:
            return
        cursor = events[-1].id


def event_stream_sync(*, subscriber: stream.Subscriber, last_event_id: int | None):
    """The same stream for a WSGI server (or the test client): each stream holds a thread
    and polls the log. ``collab.asgi`` is what production and ./run serve."""
    scopes = selectors.visible_scopes(user_ids={subscriber.user_id})
    subscriber.rescope(*scopes[subscriber.user_id])
    current = stream.last_event_id()
    yield b": connected\n\n"
    start = current
    if last_event_id is not None and last_event_id < current:
        purged = stream.purged_through()
        if last_event_id < purged:
            yield resync_frame(current, last_event_id, purged)
        else:
            start = last_event_id
    reader = stream.LogReader(start)
    quiet_since = time.monotonic()
    ends = _end_of_stream()
    while ends is None or time.monotonic() < ends:
        sent = False
        events = reader.read()
        stream.release_connection()
        for event in events:
            if event.reach is not None and subscriber.reached_by(event.reach):
                scopes = selectors.visible_scopes(user_ids={subscriber.user_id})
                subscriber.rescope(*scopes[subscriber.user_id])
            if subscriber.wants(event):
                sent = True
                yield event.frame()
        if sent:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= settings.EVENT_STREAM_HEARTBEAT_SECONDS:
            quiet_since = time.monotonic()
            yield b": heartbeat\n\n"
        time.sleep(settings.EVENT_STREAM_POLL_SECONDS)
