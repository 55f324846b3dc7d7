"""How the service logs: every stdlib logger (the service's, Django's, Celery's, gunicorn's)
goes through one structlog ``ProcessorFormatter``, as JSON lines (``LOG_FORMAT=json``) or
readable console lines (``LOG_FORMAT=console``, the default), with secrets redacted on the way.

The fields a line carries beside its message (``request_id``, ``route``, ``user_id``,
``task_id``...) come from structlog's context variables: the middleware and the Celery
signal handlers bind them for the length of a request or a task run, and every line logged
meanwhile carries them. ``trace_id`` and ``span_id`` come from the current OpenTelemetry span
when tracing is on.

No Django import here: gunicorn's master process configures its logging from this module
(gunicorn.conf.py) before any Django setting exists.
"""

import logging
import re
from collections.abc import Mapping, MutableMapping
from typing import Any

import structlog
from structlog.contextvars import get_contextvars
from structlog.typing import Processor

LOG_FORMATS = ("console", "json")

REDACTED = "[redacted]"

# Values that are secrets whatever field holds them: API keys, JWTs (access and refresh),
# Bearer/Basic credentials, webhook signatures in either scheme, the Standard Webhooks
# secret form, and key=value pairs whose name says secret (a query string, a header dump).
SECRET_PATTERNS = (
    re.compile(r"clb_[A-Za-z0-9_\-]{8,}"),
    re.compile(r"eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*"),
    re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}"),
    re.compile(r"sha256=[0-9a-fA-F]{16,}"),
    re.compile(r"v1,[A-Za-z0-9+/]{20,}={0,2}"),
    re.compile(r"whsec_[A-Za-z0-9+/=]{8,}"),
    re.compile(
        r"(?i)(\w*(?:password|passwd|secret|token|api_key|signature|authorization))"
        r"(['\"]?\s*[:=]\s*['\"]?)([^\s'\",&;}]+)"
    ),
)

# Field names whose value is never logged, whatever it looks like.
SECRET_FIELD = re.compile(
    r"(?i)(password|passwd|secret|token|signature|authorization|api_key|apikey|cookie"
    r"|^key$|^raw_key$|^access$|^refresh$)"
)
# Names that contain one of the words above but hold no secret.
PUBLIC_FIELDS = frozenset({"api_key_id", "token_type", "request_id", "task_id"})


def redact_text(text: str) -> str:
    for pattern in SECRET_PATTERNS:
        if pattern.groups == 3:
            text = pattern.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
        elif pattern.groups == 1:
            text = pattern.sub(lambda m: m.group(1) + " " + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    return text


def redact_value(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if depth > 4:
        return value
    if isinstance(value, Mapping):
        return {
            key: REDACTED
            if isinstance(key, str) and _secret_field(key)
            else redact_value(item, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact_value(item, depth + 1) for item in value]
    return value


def _secret_field(name: str) -> bool:
    return name not in PUBLIC_FIELDS and SECRET_FIELD.search(name) is not None


def redact(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
    """The last processor before rendering: secrets out of every field, by name and by form.

    Defence in depth: no code logs a credential on purpose; this catches the ones that slip
    into a message, an exception's text or a SQL statement's parameters."""
    for key in list(event_dict):
        value = event_dict[key]
        if _secret_field(key) and value not in (None, ""):
            event_dict[key] = REDACTED
        elif isinstance(value, (str, Mapping, list, tuple)):
            event_dict[key] = redact_value(value)
    return event_dict


LEADING = ("timestamp", "level", "logger", "message")


def _ordered(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
    """The four fields every line has first, then the rest; none left empty."""
    ordered = {key: event_dict[key] for key in LEADING if key in event_dict}
    for key, value in event_dict.items():
        if key not in ordered and value is not None:
            ordered[key] = value
    return ordered


def add_context(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
    """The request's or task's bound fields, for stdlib records too (``merge_contextvars``
    without overriding what the call itself gave)."""
    for key, value in get_contextvars().items():
        event_dict.setdefault(key, value)
    event_dict.setdefault("request_id", "-")
    return event_dict


def add_trace(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
    """``trace_id`` and ``span_id`` of the current span, when a trace is being recorded."""
    try:
        from opentelemetry import trace
    except ImportError:  # pragma: no cover - a dependency of the service
        return event_dict
    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        event_dict.setdefault("trace_id", format(context.trace_id, "032x"))
        event_dict.setdefault("span_id", format(context.span_id, "016x"))
    return event_dict


SQL_LOGGER = "django.db.backends"
_SQL_STRING = re.compile(r"'(?:[^']|'')*'")


def mask_sql(sql: str) -> str:
    """A statement as Django logs it (DEBUG on), its string literals masked: a column may
    hold a secret in plain text (a refresh token, a repository's push secret), and no pattern
    knows every secret's form."""
    return _SQL_STRING.sub("'?'", sql)


def _record_fields(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
    """The fields a stdlib call passed (``extra=``), over those bound in the context; and
    ``message`` for structlog's ``event``."""
    record = event_dict.get("_record")
    if record is not None and record.name.startswith(SQL_LOGGER) and "sql" in record.__dict__:
        event_dict["event"] = f"({record.duration:.3f}) {mask_sql(str(record.sql))}"
    if record is not None:
        for name in FIELDS:
            if hasattr(record, name):
                event_dict[name] = getattr(record, name)
    if "event" in event_dict:
        event_dict["message"] = event_dict.pop("event")
    return event_dict


# The fields a line may carry beside timestamp, level, logger and message, passed as
# ``extra=`` of a stdlib call or bound in the context.
FIELDS = (
    "request_id",
    "method",
    "route",
    "status",
    "duration_ms",
    "user_id",
    "api_key_id",
    "task",
    "task_id",
    "queue",
    "outcome",
)


def _shared_processors() -> list[Processor]:
    return [
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="timestamp"),
        add_context,
        add_trace,
    ]


def formatter(log_format: str) -> structlog.stdlib.ProcessorFormatter:
    """The formatter of every handler: JSON lines or readable console lines."""
    if log_format == "json":
        renderer: Any = structlog.processors.JSONRenderer()
    else:
        # Tracebacks as plain text, redacted like the rest: never a dump of the frames' locals.
        renderer = structlog.dev.ConsoleRenderer(
            colors=False,
            event_key="message",
            timestamp_key="timestamp",
            exception_formatter=structlog.dev.plain_traceback,
        )
    final: list[Processor] = [structlog.processors.format_exc_info, redact, _ordered]
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_shared_processors(),
        processors=[
            _record_fields,
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            *final,
            renderer,
        ],
        pass_foreign_args=False,
    )


class ContextLogFilter(logging.Filter):
    """Puts the bound request id on each stdlib record (``%(request_id)s``), keeping one a
    call passed itself (``extra={"request_id": ...}``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = get_contextvars().get("request_id", "-")
        return True


def logging_config(*, log_format: str = "console", level: str = "INFO") -> dict[str, Any]:
    """The ``LOGGING`` dict (Django's, Celery's and gunicorn's): one handler on stderr."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, not {log_format!r}")
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": "collab.logs.ContextLogFilter"}},
        "formatters": {
            "structured": {"()": "collab.logs.formatter", "log_format": log_format},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "structured",
                "filters": ["context"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "django.request": {"level": "ERROR"},
            "django.server": {"level": "WARNING"},
            # gunicorn's own lines through the one handler, not through gunicorn's formats.
            "gunicorn.error": {"handlers": [], "propagate": True},
            "gunicorn.access": {"handlers": [], "propagate": True},
            # The application logs each request once (collab.accesslog): uvicorn's line of the
            # same request would be a second one.
            "uvicorn.access": {"handlers": [], "propagate": False},
            "uvicorn.error": {"handlers": [], "propagate": True},
            # The Markdown parser traces every rule it tries at every line at DEBUG: with
            # LOG_LEVEL=DEBUG that was thousands of lines a comment, and so slow that every
            # render ran past its budget and fell back to plain text.
            "markdown_it": {"level": "INFO"},
        },
    }


def configure_structlog() -> None:
    """structlog's own loggers (``structlog.get_logger``) hand their events to stdlib, so
    they meet the same handler and formatter as every other line."""
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.stdlib.filter_by_level,
            *_shared_processors(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
