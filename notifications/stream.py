"""The real-time event stream's engine: one hub per server process, many subscribers.

Each process runs one hub task on its event loop. It reads the log once for everyone (events
after the last id it saw) whenever it is woken, and hands each event, serialised once, to the
subscribers allowed to see it. Wake-ups come over Redis pub/sub (``wake`` publishes the id
after commit); without Redis the hub polls the log every ``EVENT_STREAM_POLL_SECONDS``, and
with Redis it still polls now and then, in case a wake-up was lost.

Ids are handed out before commit, so on PostgreSQL event 12 can become visible after event 13.
The hub remembers the ids it skipped and looks for them again for ``GAP_SECONDS``; an id still
missing after that belonged to a transaction that rolled back.

Every ``LAG_SAMPLE_SECONDS`` the hub counts the events after its cursor, beside its reads (a
read stuck on the database, a loop too busy to read, lost wake-ups all show), and sets
``collab_event_hub_lag_events`` (docs/operations/metrics.md).
"""

import asyncio
import contextlib
import logging
import time
import weakref
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import redis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections, connection
from django.db.models import Max, Q

from collab.api.renderers import dumps
from collab.redisclient import quick_client
from events.catalogue import kind_matches
from events.models import Event, EventLogState

from . import selectors
from .metrics import EVENT_HUB_LAG, STREAM_SUBSCRIBERS

logger = logging.getLogger("collab.stream")

GAP_SECONDS = 10.0
RESCOPE_ATTEMPTS = 5
BATCH = 500
CLOSE = object()
# How often a hub counts the events it has not read yet, and up to how many: past that, it is
# at least that far behind (a count of the primary key's index, bounded whatever the backlog).
LAG_SAMPLE_SECONDS = 10.0
LAG_COUNT_MAX = 100_000


def wake(event_id: int) -> None:
    """Tell every process's hub that the log grew (after commit; best effort)."""
    client = quick_client()
    if client is None:
        return
    try:
        client.publish(settings.EVENT_STREAM_CHANNEL, str(event_id))
    except redis.RedisError as exc:
        # The hubs poll the log as well: the event reaches the streams a little later.
        logger.warning("Could not publish the wake-up for event %s: %s", event_id, exc)


@dataclass(frozen=True)
class Reach:
    """Whose view of the log an event changes: named people, the members of a workspace,
    or everyone (a project that is or was public)."""

    user_ids: frozenset[int] = frozenset()
    workspace_id: int | None = None
    everyone: bool = False


# Kinds that change what one person may see: the person is in ``data["user"]``.
PERSONAL_SCOPE_KINDS = frozenset(
    {
        "member.added",
        "member.removed",
        "workspace.member_added",
        "workspace.member_updated",
        "workspace.member_removed",
    }
)


def scope_reach(event: Event) -> Reach | None:
    """Who may see more or less of the log once ``event`` happened (None: nobody)."""
    if event.type in PERSONAL_SCOPE_KINDS:
        user_id = (event.data.get("user") or {}).get("id")
        return Reach(user_ids=frozenset({user_id})) if user_id is not None else None
    visibility = (event.changes or {}).get("visibility")
    if event.type == "project.created":
        public = (event.data.get("project") or {}).get("visibility") == "public"
    elif event.type == "project.updated" and visibility is not None:
        public = "public" in (visibility.get("previous"), visibility.get("current"))
    else:
        return None
    return Reach(workspace_id=event.workspace_id, everyone=public)


@dataclass(frozen=True)
class StreamEvent:
    id: int
    type: str
    workspace_id: int
    project_id: int | None
    payload: bytes
    reach: Reach | None = None

    def frame(self) -> bytes:
        return b"id: %d\nevent: %s\ndata: %s\n\n" % (self.id, self.type.encode(), self.payload)


@dataclass(eq=False)
class Subscriber:
    """One open stream: what it may see, what it asked for, and its queue."""

    user_id: int
    types: list[str] | None
    only_project: int | None = None
    # The projects its credential is limited to (accounts.roles.project_limit); None, not.
    project_limit: frozenset[int] | None = None
    # What it may see: read by the hub as it joins (``Hub.subscribe``), then on every change.
    project_ids: set[int] = field(default_factory=set)
    workspace_ids: set[int] = field(default_factory=set)
    queue: asyncio.Queue = field(
        default_factory=lambda: asyncio.Queue(settings.EVENT_STREAM_QUEUE_SIZE)
    )
    overflowed: bool = False
    # When what it may see was read: changes handed out since then may not be in it.
    scope_read_at: float = field(default_factory=time.monotonic)

    def reached_by(self, reach: Reach) -> bool:
        return (
            reach.everyone
            or self.user_id in reach.user_ids
            or reach.workspace_id in self.workspace_ids
        )

    def rescope(self, project_ids: set[int], workspace_ids: set[int]) -> None:
        """What its user may see, as read for them (``visible_scopes``), the projects
        narrowed to its credential's (the workspaces are kept: a change in one reaches it)."""
        if self.project_limit is not None:
            project_ids = project_ids & self.project_limit
        self.project_ids, self.workspace_ids = project_ids, workspace_ids

    @property
    def records_workspace_ids(self) -> set[int]:
        """The workspaces whose own events (no project) it sees: none with a limited
        credential (notifications.selectors.workspace_records_seen)."""
        return set() if self.project_limit is not None else self.workspace_ids

    def wants(self, event: StreamEvent) -> bool:
        if self.only_project is not None and event.project_id != self.only_project:
            return False
        if event.project_id is None:
            visible = event.workspace_id in self.records_workspace_ids
        else:
            visible = event.project_id in self.project_ids
        return visible and (self.types is None or kind_matches(event.type, self.types))

    def push(self, item) -> None:
        if self.overflowed:
            return
        try:
            self.queue.put_nowait(item)
        except asyncio.QueueFull:
            # A client too slow to keep up is dropped; it resumes with Last-Event-ID.
            self.overflowed = True
            self.queue._queue.clear()  # type: ignore[attr-defined]  # noqa: SLF001 - make room for the closing marker
            self.queue.put_nowait(CLOSE)


def _stream_events(rows) -> list[StreamEvent]:
    return [
        StreamEvent(
            event.id,
            event.type,
            event.workspace_id,
            event.project_id,
            dumps(event.as_payload()),
            scope_reach(event),
        )
        for event in rows
    ]


def events_after(
    after_id: int, *, gaps: Sequence[int] = (), upto: int | None = None, query: Q | None = None
) -> list[StreamEvent]:
    condition = Q(id__gt=after_id)
    if upto is not None:
        condition &= Q(id__lte=upto)
    if gaps:
        condition |= Q(id__in=gaps)
    rows = Event.objects.filter(condition)
    if query is not None:
        rows = rows.filter(query)
    return _stream_events(rows.order_by("id")[:BATCH])


def last_event_id() -> int:
    return Event.objects.aggregate(last=Max("id"))["last"] or 0


def events_unread(after_id: int) -> int:
    """The events after ``after_id``, counted up to LAG_COUNT_MAX."""
    return Event.objects.filter(id__gt=after_id).order_by()[:LAG_COUNT_MAX].count()


def purged_through() -> int:
    state = EventLogState.objects.filter(pk=1).first()
    return state.purged_through_id if state else 0


def release_connection() -> None:
    """Give this thread's database connection back (to the pool, when there is one).

    A stream lives for hours: whatever it holds between reads, thousands of streams hold.
    Never in the middle of a transaction (the test client runs streams inside one).
    """
    if not connection.in_atomic_block:
        connection.close()


async def in_thread(function, *args, **kwargs):
    """Run database work from the event loop on a pooled thread, on a usable connection."""

    def run():
        close_old_connections()
        try:
            return function(*args, **kwargs)
        finally:
            release_connection()

    return await sync_to_async(run, thread_sensitive=False)()


class LogReader:
    """Reads the log forward from an id, every event once, including late commits.

    Ids are taken before commit: when a read jumps from 10 to 13, ids 11 and 12 are looked for
    again on the next reads for ``GAP_SECONDS``, after which they are taken as rolled back.
    """

    def __init__(self, after: int):
        self.last_id = after
        self.gaps: dict[int, float] = {}

    def read(self) -> list[StreamEvent]:
        now = time.monotonic()
        self.gaps = {gap: seen for gap, seen in self.gaps.items() if now - seen < GAP_SECONDS}
        found: list[StreamEvent] = []
        while True:
            events = events_after(self.last_id, gaps=list(self.gaps))
            for event in events:
                if event.id in self.gaps:
                    del self.gaps[event.id]
                elif event.id > self.last_id:
                    for missing in range(self.last_id + 1, min(event.id, self.last_id + 1000)):
                        self.gaps.setdefault(missing, now)
                    self.last_id = event.id
            found.extend(events)
            if len(events) < BATCH:
                return found


class Hub:
    def __init__(self):
        self.subscribers: set[Subscriber] = set()
        self.reader: LogReader | None = None
        self.woken = asyncio.Event()
        self.ready = asyncio.Event()
        self.task: asyncio.Task | None = None
        # Scope changes handed out lately, with when: a subscriber whose scope was read
        # before one of them that concerns it is read again as it joins.
        self.recent_reaches: deque[tuple[float, Reach]] = deque()
        # Subscribers whose scope is still to be read, and the read under way: one at a time,
        # for all who joined meanwhile (a thousand streams opening at once cost a few reads).
        self.joining: list[tuple[Subscriber, asyncio.Future]] = []
        self.joining_read: asyncio.Task | None = None

    async def subscribe(self, subscriber: Subscriber) -> int:
        """Read what a subscriber may see and add it; returns the id it will see events after."""
        if self.task is None or self.task.done():
            self.ready.clear()
            self.task = asyncio.create_task(self._run(), name="collab-event-hub")
        await self.ready.wait()
        joined = asyncio.get_running_loop().create_future()
        self.joining.append((subscriber, joined))
        if self.joining_read is None or self.joining_read.done():
            self.joining_read = asyncio.create_task(self._joining_read())
        await joined
        if subscriber not in self.subscribers:
            STREAM_SUBSCRIBERS.inc()
        self.subscribers.add(subscriber)
        assert self.reader is not None  # set by _run before ready
        boundary = self.reader.last_id
        if any(
            at >= subscriber.scope_read_at and subscriber.reached_by(reach)
            for at, reach in self.recent_reaches
        ):
            await self.rescope([subscriber])
        return boundary

    async def rescope(self, subscribers: list[Subscriber]) -> None:
        """Read again what these subscribers may see (a few queries for all of them)."""
        if not subscribers:
            return
        read_at = time.monotonic()
        scopes = await in_thread(
            selectors.visible_scopes, user_ids={subscriber.user_id for subscriber in subscribers}
        )
        for subscriber in subscribers:
            subscriber.rescope(*scopes[subscriber.user_id])
            subscriber.scope_read_at = read_at

    async def _joining_read(self) -> None:
        while self.joining:
            batch, self.joining = self.joining, []
            try:
                await self.rescope([subscriber for subscriber, _ in batch])
            except Exception as exc:
                # The database may be down: these streams end (the client reconnects).
                logger.exception("The event hub could not read its new streams' scope")
                outcome: BaseException | None = exc
            else:
                outcome = None
            for _, joined in batch:
                if joined.done():  # its client left meanwhile
                    continue
                if outcome is None:
                    joined.set_result(None)
                else:
                    joined.set_exception(outcome)

    async def _apply_reach(self, reach: Reach) -> None:
        now = time.monotonic()
        self.recent_reaches.append((now, reach))
        while self.recent_reaches and now - self.recent_reaches[0][0] > GAP_SECONDS:
            self.recent_reaches.popleft()
        reached = [s for s in self.subscribers if s.reached_by(reach)]
        for attempt in range(RESCOPE_ATTEMPTS):
            try:
                await self.rescope(reached)
                return
            except Exception:
                # The database may be restarting: what they see must not be left stale.
                logger.exception("The event hub could not refresh its streams' scope")
                await asyncio.sleep(0.2 * (attempt + 1))
        for subscriber in reached:
            # Still unreadable: these streams end, and resume (Last-Event-ID) with a fresh one.
            subscriber.push(CLOSE)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        if subscriber in self.subscribers:
            STREAM_SUBSCRIBERS.dec()
        self.subscribers.discard(subscriber)

    async def _run(self) -> None:
        start = await in_thread(last_event_id)
        self.reader = LogReader(start)
        self.ready.set()
        listener = asyncio.create_task(self._listen()) if settings.REDIS_URL else None
        watcher = asyncio.create_task(self._watch_lag())
        interval = (
            settings.EVENT_STREAM_SAFETY_POLL_SECONDS
            if settings.REDIS_URL
            else settings.EVENT_STREAM_POLL_SECONDS
        )
        try:
            while True:
                # A timeout scope, not wait_for: on Python 3.11, wait_for returns the wake-up
                # when the hub is cancelled in the same turn as it is woken, swallowing the
                # cancellation, and the hub went on (a server stopping waited on it).
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(interval):
                        await self.woken.wait()
                self.woken.clear()
                # Read even with nobody subscribed: the next subscriber starts from a cursor
                # that is current, not from where the hub stood when the last one left.
                try:
                    events = await in_thread(self.reader.read)
                except Exception:
                    # The database may be restarting: keep the streams open and try again.
                    logger.exception("The event hub could not read the log")
                    await asyncio.sleep(1)
                    continue
                for event in events:
                    if event.reach is not None:
                        # Who gains a project sees its events from this one on; who loses
                        # one, no more of them.
                        await self._apply_reach(event.reach)
                    for subscriber in list(self.subscribers):
                        if subscriber.wants(event):
                            subscriber.push(event)
        finally:
            watcher.cancel()
            if listener is not None:
                listener.cancel()

    async def _watch_lag(self) -> None:
        """``collab_event_hub_lag_events``: what the log holds after the cursor, now and then."""
        assert self.reader is not None  # set by _run before it starts this
        while True:
            try:
                EVENT_HUB_LAG.set(await in_thread(events_unread, self.reader.last_id))
            except Exception as exc:
                # The database may be restarting: the gauge keeps its last count meanwhile.
                logger.warning("The event hub could not count the events it has not read: %s", exc)
            await asyncio.sleep(LAG_SAMPLE_SECONDS)

    async def _listen(self) -> None:
        """Redis pub/sub wake-ups; on a Redis failure the hub falls back to its polling."""
        import redis.asyncio as aioredis

        while True:
            client = aioredis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1)
            try:
                async with client.pubsub() as pubsub:
                    await pubsub.subscribe(settings.EVENT_STREAM_CHANNEL)
                    async for message in pubsub.listen():
                        if message.get("type") == "message":
                            self.woken.set()
            except (aioredis.RedisError, OSError) as exc:
                logger.warning("Event stream wake-ups unavailable, polling: %s", exc)
                self.woken.set()
                await asyncio.sleep(settings.EVENT_STREAM_SAFETY_POLL_SECONDS)
            finally:
                await client.aclose()


_hubs: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub]" = weakref.WeakKeyDictionary()


def hub() -> Hub:
    """This event loop's hub (one per server process; tests may run several loops)."""
    loop = asyncio.get_running_loop()
    current = _hubs.get(loop)
    if current is None:
        current = _hubs[loop] = Hub()
    return current
