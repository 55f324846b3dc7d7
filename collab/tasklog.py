"""One line per task run (logger ``collab.tasks``): its name, id, queue, outcome and duration;
and the task's fields on every line logged while it runs. Celery's signals, connected when
the Celery app is made (collab/celery.py).

Celery's own logging setup is replaced by the service's (``setup_logging``): its worker and
task lines go through the same handler and formatter as Django's.
"""

import contextlib
import logging
import logging.config
import time
from collections.abc import Mapping
from contextvars import Token

from celery import signals
from structlog.contextvars import bind_contextvars, reset_contextvars

logger = logging.getLogger("collab.tasks")

# What a running task has bound and when it started, by task id (a thread pool runs several).
_running: dict[str, tuple[Mapping[str, Token], float]] = {}


@signals.setup_logging.connect
def _logging_setup(**_kwargs) -> None:
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)


def _queue(task) -> str | None:
    info = getattr(task.request, "delivery_info", None) or {}
    return info.get("routing_key") or info.get("queue") or None


@signals.task_prerun.connect
def _task_started(task_id=None, task=None, **_kwargs) -> None:
    if task is None or task_id is None:
        return
    bound = bind_contextvars(task=task.name, task_id=task_id, queue=_queue(task))
    _running[task_id] = (bound, time.perf_counter())


@signals.task_postrun.connect
def _task_finished(task_id=None, task=None, state=None, **_kwargs) -> None:
    if task is None or task_id is None:
        return
    bound, started = _running.pop(task_id, ({}, None))
    outcome = (state or "unknown").lower()
    duration = round((time.perf_counter() - started) * 1000, 2) if started is not None else None
    logger.log(
        logging.WARNING if outcome == "failure" else logging.INFO,
        "Task %s %s",
        task.name,
        outcome,
        extra={
            "task": task.name,
            "task_id": task_id,
            "queue": _queue(task),
            "outcome": outcome,
            "duration_ms": duration,
        },
    )
    if bound:
        # Bound in another context (a pool that moved the task): nothing to undo here.
        with contextlib.suppress(ValueError):
            reset_contextvars(**bound)
