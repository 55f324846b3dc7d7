"""OpenTelemetry traces, off unless the standard ``OTEL_*`` variables say where to send them.

On when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set, or
``OTEL_TRACES_EXPORTER`` names an exporter (``otlp``, or ``console`` to print spans); off when
``OTEL_TRACES_EXPORTER=none`` or ``OTEL_SDK_DISABLED=true``. Spans go out over OTLP/HTTP; the
exporter reads the rest of its settings (headers, timeout, protocol) from the environment
itself, as does the resource (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``).

Traced: each request (Django), each SQL statement (psycopg), each Redis command, each task
queued and run (Celery: the trace context rides in the message's headers, so a task queued by a
request continues its trace), and each webhook POST (urllib3). The SDK's batch processor
runs a thread, which a fork does not copy: it starts in each process that serves, after the
fork (gunicorn's ``post_fork`` in collab/gunicorn_conf.py, Celery's ``worker_process_init``),
or where no fork follows (a thread-pool or solo worker, ``runserver``, plain uvicorn).

Work done later on behalf of a request, with other work, keeps the request's trace: an event of
the log keeps the ``traceparent`` of the span that recorded it (``current_traceparent``), as an
outbox row keeps its trace context, and whatever handles it later does so in that trace
(``continued``), linked to the span of the task that runs it. A fan-out task takes the events of
many commits at once; each event's webhook sends join the trace of the request that made it.
"""

import logging
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from celery import signals
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

logger = logging.getLogger("collab.tracing")

_lock = threading.Lock()
_provider: TracerProvider | None = None

DEFAULT_SERVICE_NAME = "collab"


def tracing_wanted(environ: dict[str, str] | None = None) -> bool:
    """Whether the environment asks for traces (the standard variables, nothing of ours)."""
    environ = dict(os.environ) if environ is None else environ
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return bool(
        exporter
        or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def _exporter_from_environment() -> SpanExporter:
    if os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "console":
        return ConsoleSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def tracing_start(*, exporter: SpanExporter | None = None, batch: bool = True) -> bool:
    """Start tracing in this process, once: the SDK, its exporter and the instrumentations.

    Without ``exporter``, only when the environment asks for it (``tracing_wanted``), with the
    exporter it names. ``batch=False`` exports each span as it ends (tests). Returns whether
    tracing is on in this process."""
    global _provider  # noqa: PLW0603 - one provider per process
    with _lock:
        if _provider is not None:
            return True
        if exporter is None:
            if not tracing_wanted():
                return False
            exporter = _exporter_from_environment()
        resource = Resource.create({"service.name": DEFAULT_SERVICE_NAME}).merge(
            Resource.create()  # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
        )
        provider = TracerProvider(resource=resource)
        processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
        provider.add_span_processor(processor)
        trace.set_tracer_provider(provider)
        _instrument(provider)
        _provider = provider
    logger.info("Tracing on: spans exported by %s", type(exporter).__name__)
    return True


def _instrument(provider: TracerProvider) -> None:
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor
    from opentelemetry.instrumentation.urllib3 import URLLib3Instrumentor

    instrumentors: list[tuple[Any, dict[str, Any]]] = [
        (DjangoInstrumentor(), {"middleware_position": _django_middleware_position()}),
        (PsycopgInstrumentor(), {}),
        (RedisInstrumentor(), {}),
        (CeleryInstrumentor(), {}),
        (URLLib3Instrumentor(), {}),
    ]
    for instrumentor, options in instrumentors:
        if not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument(tracer_provider=provider, **options)


# The request's span starts right after this middleware, which settles the request's Host
# (the span's middleware asks for it first of all): outside every other, so that the access
# line and the rest are logged within it. OTEL_PYTHON_DJANGO_MIDDLEWARE_POSITION still wins.
HOST_MIDDLEWARE = "collab.api.middleware.RouteHostMiddleware"


def _django_middleware_position() -> int:
    from django.conf import settings

    middleware = list(settings.MIDDLEWARE)
    return middleware.index(HOST_MIDDLEWARE) + 1 if HOST_MIDDLEWARE in middleware else 0


_W3C = TraceContextTextMapPropagator()


def current_traceparent() -> str:
    """The W3C ``traceparent`` of the span now current, "" outside any (tracing off)."""
    if not trace.get_current_span().get_span_context().is_valid:
        return ""
    carrier: dict[str, str] = {}
    _W3C.inject(carrier)
    return carrier.get("traceparent", "")


@contextmanager
def continued(
    traceparent: str, name: str, attributes: dict[str, str | int] | None = None
) -> Iterator[None]:
    """Run the block in the trace of ``traceparent`` (a ``current_traceparent`` kept earlier):
    within a span ``name`` whose parent is that span, linked to the span now current (the
    task doing the work). Nothing changes when tracing is off, ``traceparent`` is empty, or the
    current span is in that trace already (a task queued by the same request)."""
    if _provider is None or not traceparent:
        yield
        return
    current = trace.get_current_span().get_span_context()
    parent = _W3C.extract({"traceparent": traceparent})
    recorded = trace.get_current_span(parent).get_span_context()
    if not recorded.is_valid or (current.is_valid and current.trace_id == recorded.trace_id):
        yield
        return
    links = [trace.Link(current)] if current.is_valid else []
    tracer = _provider.get_tracer(__name__)
    with tracer.start_as_current_span(name, context=parent, links=links, attributes=attributes):
        yield


def tracing_flush() -> None:
    """Export what is pending (before a process ends)."""
    if _provider is not None:
        _provider.force_flush()


def start_unless_forking() -> bool:
    """For the entry points (collab/asgi.py, collab/wsgi.py): start here unless gunicorn
    serves them, whose ``post_fork`` starts tracing in each worker (a ``--preload`` master
    must not start the exporter's thread before it forks)."""
    if "gunicorn" in sys.modules:
        return _provider is not None
    return tracing_start()


@signals.worker_process_init.connect
def _worker_process_started(**_kwargs: Any) -> None:
    tracing_start()


@signals.worker_init.connect
def _worker_started(sender: Any = None, **_kwargs: Any) -> None:
    # A prefork worker's pool processes start tracing themselves (above), after the fork;
    # a thread-pool or solo worker runs its tasks in this process.
    pool = getattr(sender, "pool_cls", None)
    name = pool if isinstance(pool, str) else getattr(pool, "__module__", "")
    if "prefork" not in str(name):
        tracing_start()


@signals.worker_process_shutdown.connect
@signals.worker_shutdown.connect
def _worker_stopping(**_kwargs: Any) -> None:
    tracing_flush()
