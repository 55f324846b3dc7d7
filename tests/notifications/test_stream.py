"""The event stream and the event list.

The stream is read with a real SSE client (httpx-sse) from the ASGI server that production
runs; its refusals, which are ordinary JSON answers, also through the test client.
"""

import time

import httpx
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from collab.api.scopes import ALL_SCOPES
from events.models import Event, EventLogState
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import make_api_key, make_issue
from tests.liveserver import asgi_server, process_env, require_services
from tests.notifications.sse_reader import STREAM, Reader

# Refusals: JSON envelopes, whatever the client accepts -----------------------------------


def test_stream_without_credentials_is_401(api):
    response = api.anonymous.get(STREAM, HTTP_ACCEPT="text/event-stream")
    assert_error(response, 401, "UNAUTHORIZED")
    assert response["Content-Type"] == "application/json"


def test_stream_needs_projects_read(world):
    client = client_for(world.owner, scopes=["issues:read"])
    error = assert_error(client.get(STREAM, HTTP_ACCEPT="text/event-stream"), 403, "FORBIDDEN")
    assert error["details"]["required_scope"] == "projects:read"


@pytest.mark.parametrize(
    "query, name",
    [
        ("types=issue.exploded", "types"),
        ("types=", "types"),
        ("project_id=abc", "project_id"),
        ("last_event_id=-1", "last_event_id"),
        ("last_event_id=x", "last_event_id"),
    ],
)
def test_stream_refuses_bad_parameters_with_400(api, world, query, name):
    error = assert_error(api.owner.get(f"{STREAM}?{query}"), 400, "BAD_REQUEST")
    assert name in error["details"]


def test_stream_refuses_a_bad_last_event_id_header(api, world):
    response = api.owner.get(STREAM, HTTP_LAST_EVENT_ID="yesterday")
    assert "last_event_id" in assert_error(response, 400, "BAD_REQUEST")["details"]


def test_stream_of_another_workspaces_project_is_404(api, world):
    response = api.owner.get(f"{STREAM}?project_id={world.other_project.pk}")
    assert_error(response, 404, "NOT_FOUND")


# The event list ----------------------------------------------------------------------------


def test_event_list_shows_only_what_the_caller_may_see(api, world):
    mine = make_issue(world.project, world.owner, title="Ours")
    make_issue(world.other_project, world.outsider, title="Theirs")
    body = assert_ok(api.owner.get("/v1/events?per_page=100"))
    projects = {event["project_id"] for event in body["data"]}
    assert world.other_project.pk not in projects
    created = [e for e in body["data"] if e["type"] == "issue.created"]
    assert [e["data"]["issue"]["id"] for e in created] == [mine.pk]
    assert body["meta"]["total"] == len(body["data"])
    theirs = assert_ok(api.outsider.get("/v1/events?per_page=100"))["data"]
    assert {e["project_id"] for e in theirs} <= {world.other_project.pk, None}
    assert all(e["workspace_id"] == world.globex.pk for e in theirs)


def test_event_list_filters(api, world):
    issue = make_issue(world.project, world.owner)
    assert_ok(api.owner.patch(f"/v1/issues/{issue.pk}", {"status": "closed"}, format="json"))
    closed = assert_ok(api.owner.get("/v1/events?types=issue.closed"))["data"]
    assert [e["type"] for e in closed] == ["issue.closed"]
    family = assert_ok(api.owner.get(f"/v1/events?types=issue.*&project_id={world.project.pk}"))
    assert {e["type"] for e in family["data"]} == {"issue.created", "issue.closed"}
    first = min(e["id"] for e in family["data"])
    after = assert_ok(api.owner.get(f"/v1/events?types=issue.*&after_id={first}&sort=id"))
    assert [e["type"] for e in after["data"]] == ["issue.closed"]


@pytest.mark.parametrize("query", ["types=nope", "project_id=x", "after_id=-3", "sort=type"])
def test_event_list_bad_filters_are_400(api, world, query):
    assert_error(api.owner.get(f"/v1/events?{query}"), 400, "BAD_REQUEST")


def test_event_list_query_count_is_constant(api, world):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert_ok(api.owner.get("/v1/events?per_page=100"))
        return len(queries)

    count()
    make_issue(world.project, world.owner)
    small = count()
    for n in range(25):
        make_issue(world.project, world.owner, title=f"Issue {n}")
    assert count() == small


def test_event_list_needs_credentials(api):
    assert_error(api.anonymous.get("/v1/events"), 401, "UNAUTHORIZED")


# The stream over a real server -------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_live_events_reach_the_stream(world, live):
    key = make_api_key(world.owner, ALL_SCOPES)
    reader = Reader(live, key)
    assert reader.status == 200 and reader.content_type.startswith("text/event-stream")
    started = time.monotonic()
    issue = make_issue(world.project, world.owner, title="Live one")
    [frame] = reader.take(1)
    latency = time.monotonic() - started
    event = Event.objects.get(type="issue.created")
    assert frame.event == "issue.created"
    assert frame.id == str(event.pk)
    assert frame.json() == event.as_payload()
    assert frame.json()["data"]["issue"]["id"] == issue.pk
    assert latency < 5
    reader.close()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_replay_after_last_event_id_then_live(world, live):
    key = make_api_key(world.owner, ALL_SCOPES)
    issues = [make_issue(world.project, world.owner, title=f"Before {n}") for n in range(3)]
    ids = list(
        Event.objects.filter(type="issue.created").order_by("id").values_list("id", flat=True)
    )
    reader = Reader(live, key, query="types=issue.*", last_event_id=ids[0])
    replayed = reader.take(2)
    assert [int(frame.id) for frame in replayed] == ids[1:]
    assert [frame.json()["data"]["issue"]["id"] for frame in replayed] == [
        issue.pk for issue in issues[1:]
    ]
    after = make_issue(world.project, world.owner, title="After")
    [live_frame] = reader.take(1)
    assert live_frame.json()["data"]["issue"]["id"] == after.pk
    reader.close()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_dropped_and_resumed_stream_misses_nothing(world, live):
    key = make_api_key(world.owner, ALL_SCOPES)
    reader = Reader(live, key, query=f"project_id={world.project.pk}&types=issue.created")
    make_issue(world.project, world.owner, title="Seen")
    [seen] = reader.take(1)
    reader.close()
    missed = [make_issue(world.project, world.owner, title=f"Missed {n}") for n in range(3)]
    resumed = Reader(
        live,
        key,
        query=f"project_id={world.project.pk}&types=issue.created",
        last_event_id=int(seen.id),
    )
    frames = resumed.take(3)
    assert [f.json()["data"]["issue"]["id"] for f in frames] == [issue.pk for issue in missed]
    assert resumed.take(1, timeout=1.5) == [], "nothing twice"
    resumed.close()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_filters_and_visibility_across_workspaces(world, live):
    outsider = Reader(live, make_api_key(world.outsider, ALL_SCOPES))
    closed_only = Reader(live, make_api_key(world.owner, ALL_SCOPES), query="types=issue.closed")
    ours = make_issue(world.project, world.owner, title="Acme's")
    from issues.services import issue_update

    issue_update(issue=ours, actor=world.owner, status="closed")
    theirs = make_issue(world.other_project, world.outsider, title="Globex's")

    [closed] = closed_only.take(1)
    assert closed.event == "issue.closed" and closed.json()["data"]["issue"]["id"] == ours.pk
    frames = outsider.take(1)
    assert [f.json()["data"]["issue"]["id"] for f in frames] == [theirs.pk]
    assert outsider.take(1, timeout=1.5) == [], "Acme's events never reach Globex"
    assert closed_only.take(1, timeout=1) == []
    outsider.close()
    closed_only.close()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_heartbeats_and_resync_required(world, live):
    key = make_api_key(world.owner, ALL_SCOPES)
    with (
        httpx.Client(timeout=10) as client,
        client.stream(
            "GET", f"http://127.0.0.1:{live}{STREAM}", headers={"Authorization": f"Bearer {key}"}
        ) as response,
    ):
        lines = response.iter_lines()
        seen = [next(lines) for _ in range(4)]
    assert seen[:2] == [": connected", ""]
    assert ": heartbeat" in seen, seen

    make_issue(world.project, world.owner, title="Purged")
    kept = make_issue(world.project, world.owner, title="Kept")
    first, second = Event.objects.filter(type="issue.created").values_list("id", flat=True)
    # The log was purged through the first: resuming before it cannot be exact.
    EventLogState.objects.update_or_create(pk=1, defaults={"purged_through_id": first})
    reader = Reader(live, key, last_event_id=first - 1)
    [frame] = reader.take(1)
    assert frame.event == "resync_required"
    assert frame.json() == {"last_event_id": first - 1, "purged_through_id": first}
    assert int(frame.id) >= second
    reader.close()
    # Resuming from the last purged id itself misses nothing.
    reader = Reader(live, key, query="types=issue.created", last_event_id=first)
    [frame] = reader.take(1)
    assert frame.json()["data"]["issue"]["id"] == kept.pk
    reader.close()


def test_the_stream_also_runs_under_wsgi(api, world, settings):
    """Without the ASGI server (gunicorn collab.wsgi, the test client) a stream holds a thread
    and polls the log: slower to scale, same frames."""
    settings.EVENT_STREAM_POLL_SECONDS = 0.05
    settings.EVENT_STREAM_HEARTBEAT_SECONDS = 0.2
    response = api.owner.get(f"{STREAM}?types=issue.created")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    frames = iter(response.streaming_content)
    assert next(frames) == b": connected\n\n"
    assert next(frames) == b": heartbeat\n\n"
    issue = make_issue(world.project, world.owner, title="Polled")
    frame = next(frames)
    event = Event.objects.get(type="issue.created")
    assert frame.startswith(b"id: %d\nevent: issue.created\ndata: " % event.pk)
    assert b'"title":"Polled"' in frame and str(issue.pk).encode() in frame
    response.close()


def test_a_stream_with_a_lifetime_ends_and_resumes_where_it_left(api, world, settings):
    """``EVENT_STREAM_MAX_SECONDS``: the server ends the response; the client comes back with
    ``Last-Event-ID`` and gets what was written meanwhile."""
    settings.EVENT_STREAM_POLL_SECONDS = 0.05
    settings.EVENT_STREAM_MAX_SECONDS = 0.5
    response = api.owner.get(f"{STREAM}?types=issue.created")
    frames = iter(response.streaming_content)
    assert next(frames) == b": connected\n\n"
    seen = make_issue(world.project, world.owner, title="Seen")
    started = time.monotonic()
    rest = list(frames)  # ends by itself
    assert time.monotonic() - started < 5
    last = Event.objects.get(type="issue.created").pk
    assert any(b"id: %d\n" % last in frame for frame in rest)
    assert str(seen.pk).encode() in b"".join(rest)
    missed = make_issue(world.project, world.owner, title="Written while away")
    resumed = api.owner.get(f"{STREAM}?types=issue.created", HTTP_LAST_EVENT_ID=str(last))
    body = b"".join(resumed.streaming_content)
    assert body.count(b"event: issue.created") == 1
    assert b'"title":"Written while away"' in body and str(missed.pk).encode() in body


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_asgi_stream_ends_at_its_lifetime(world, tmp_path):
    require_services()
    env = process_env(EVENT_STREAM_MAX_SECONDS="1", EVENT_STREAM_HEARTBEAT_SECONDS="0.3")
    key = make_api_key(world.owner, ALL_SCOPES)
    with asgi_server(env, tmp_path) as port, httpx.Client(timeout=10) as client:
        started = time.monotonic()
        with client.stream(
            "GET", f"http://127.0.0.1:{port}{STREAM}", headers={"Authorization": f"Bearer {key}"}
        ) as response:
            lines = list(response.iter_lines())  # to the end the server puts to it
        took = time.monotonic() - started
    assert lines[:2] == [": connected", ""]
    assert ": heartbeat" in lines
    assert 0.9 < took < 5, took
