"""One trace follows a write: the request, the fan-out task it queued, each webhook sent."""

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from collab import tracing
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
