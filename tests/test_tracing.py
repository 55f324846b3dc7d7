"""One trace follows a write: the request, the fan-out task it queued, each webhook sent; and
when one fan-out takes the events of several requests, each event's sends join its request's
trace."""

import json

import pytest
from django.conf import settings
from django.test import Client, override_settings
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from collab import tracing
from notifications import dispatch
from tests.notifications.test_delivery import create_issue, register

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def spans():
    exporter = InMemorySpanExporter()
    if not tracing.tracing_start(exporter=exporter, batch=False):
        pytest.skip("tracing started elsewhere in this process")
    return exporter


def test_off_unless_the_environment_asks():
    assert not tracing.tracing_wanted({})
    assert tracing.tracing_wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert tracing.tracing_wanted({"OTEL_TRACES_EXPORTER": "console"})
    assert not tracing.tracing_wanted(
        {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    )


def test_a_write_its_fanout_and_its_webhook_send_are_one_trace(spans, api, world, receiver):
    register(api, world.project, receiver.url, events=["issue.created"])
    spans.clear()
    create_issue(api, world.project)
    receiver.wait_for(1)

    finished = spans.get_finished_spans()
    request = next(s for s in finished if s.kind.name == "SERVER" and "issues" in s.name)
    tasks = [s for s in finished if s.name.startswith("run/")]
    sends = [s for s in finished if s.kind.name == "CLIENT" and s.name.startswith("POST")]
    assert tasks and sends, [s.name for s in finished]
    trace_id = request.context.trace_id
    for span in [*tasks, *sends]:
        assert span.context.trace_id == trace_id, span.name
    by_id = {s.context.span_id: s for s in finished}

    def chain(span):
        names = []
        while span is not None:
            names.append(span.name)
            span = by_id.get(span.parent.span_id) if span.parent else None
        return " <- ".join(names)

    print("\n".join(chain(s) for s in sends))


def test_writes_fanned_out_in_one_batch_each_keep_their_trace(
    spans, api, world, receiver, monkeypatch
):
    """Two requests commit while a coalesced fan-out waits in the broker: the first queued it
    (so the task continues its trace), the second found it queued and queued nothing. The task
    sends both events' webhooks; each send is in the trace of the request that made its event,
    as the receiver sees in the ``traceparent`` it was sent."""
    register(api, world.project, receiver.url, events=["issue.created"])
    held: list[tuple[str, dict, object]] = []

    def broker(task, countdown=None, **kwargs):  # holds the message, with its trace context
        held.append((task, kwargs, otel_context.get_current()))
        return True

    monkeypatch.setattr(dispatch, "enqueue", broker)
    spans.clear()
    first = create_issue(api, world.project, title="First")
    second = create_issue(api, world.project, title="Second")
    monkeypatch.undo()
    assert [(task, kwargs) for task, kwargs, _ in held] == [
        (dispatch.TASKS + "event_fanout", {"due": True})
    ], "one fan-out for both, queued by the first request"

    (task, kwargs, queued_in) = held[0]
    token = otel_context.attach(queued_in)  # as the message's headers carry it
    try:
        dispatch.enqueue(task, **kwargs)
    finally:
        otel_context.detach(token)
    sent = receiver.wait_for(2)
    assert len(sent) == 2

    finished = spans.get_finished_spans()
    requests = sorted(
        (s for s in finished if s.kind.name == "SERVER" and s.name.startswith("POST")),
        key=lambda span: span.start_time,
    )
    assert ["issues" in s.name for s in requests] == [True, True], [s.name for s in requests]
    first_trace, second_trace = (requests[0].context.trace_id, requests[1].context.trace_id)
    assert first_trace != second_trace
    trace_of_issue = {first["id"]: first_trace, second["id"]: second_trace}

    # What the receivers got: each POST carries the trace of the request that made its issue.
    for request in sent:
        issue_id = json.loads(request.body)["data"]["issue"]["id"]
        _version, trace_id, _span_id, _flags = request.headers["traceparent"].split("-")
        assert int(trace_id, 16) == trace_of_issue[issue_id], issue_id

    # The spans: one fan-out task, in the first request's trace; a send in each trace; the
    # second event's send parented in its own request's trace and linked to the task's span.
    (fanout,) = [s for s in finished if s.name.startswith("run/") and "event_fanout" in s.name]
    assert fanout.context.trace_id == first_trace
    posts = [s for s in finished if s.kind.name == "CLIENT" and s.name.startswith("POST")]
    assert sorted(s.context.trace_id for s in posts) == sorted([first_trace, second_trace])
    (joined,) = [s for s in finished if s.name == "webhook deliver"]
    assert joined.context.trace_id == second_trace
    assert joined.parent.span_id == requests[1].context.span_id, "recorded in the request"
    assert [link.context.span_id for link in joined.links] == [fanout.context.span_id]
    (second_post,) = [p for p in posts if p.context.trace_id == second_trace]
    assert second_post.parent.span_id == joined.context.span_id


@override_settings(ALLOWED_HOSTS=["collab.example.com"])
def test_the_request_span_starts_once_the_host_is_settled(spans):
    """The trace's middleware asks for the Host first: it comes right after the middleware that
    lets a scrape addressed to a pod's IP through, and a Host refused before any of ours
    answers is still the JSON 400."""
    names = list(settings.MIDDLEWARE)
    assert names[0] == tracing.HOST_MIDDLEWARE
    assert names[1].startswith("opentelemetry.instrumentation.django")
    spans.clear()
    assert Client().get("/metrics", HTTP_HOST="10.1.2.3:8000").status_code == 200
    assert [s.name for s in spans.get_finished_spans() if s.kind.name == "SERVER"] == [
        "GET metrics"
    ]
    refused = Client().get("/healthz", HTTP_HOST="10.1.2.3:8000")
    assert refused.status_code == 400
    assert refused.json()["error"] == {
        "code": "BAD_REQUEST",
        "message": "The Host header is not allowed here.",
        "details": {},
    }
