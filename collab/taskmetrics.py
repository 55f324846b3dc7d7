"""The Celery side of the metrics (docs/operations/metrics.md): each task run's duration and
outcome, recorded from Celery's signals, and the worker's (or beat's) own HTTP server on
``WORKER_METRICS_PORT``, which serves what every process of the worker recorded.

Its handlers live here, apart from any other use of Celery's signals. Nothing is set up when
``METRICS_ENABLED`` is off; without ``WORKER_METRICS_PORT`` tasks are still timed, in each
process's memory, where nothing reads them.
"""

import logging
import os
import time
from typing import Any

from celery import signals
from django.conf import settings

from collab import metricsdir

logger = logging.getLogger("collab.metrics")

_started: dict[str, float] = {}
_serving = False  # this process, or the worker it was forked from, serves the metrics
_OUTCOMES = {"SUCCESS": "success", "FAILURE": "failure", "RETRY": "retry"}


def metrics_serve(role: str) -> None:
    """Point this process and the ones it forks at a directory of their own, then serve what
    they record on ``WORKER_METRICS_PORT``, with the web's access rules."""
    global _serving  # noqa: PLW0603 - one server per process tree
    port = settings.WORKER_METRICS_PORT
    if _serving or not settings.METRICS_ENABLED or not port:
        return
    path = metricsdir.server_directory(settings.PROMETHEUS_MULTIPROC_DIR, role, port)
    if os.environ.get(metricsdir.MULTIPROC_ENV) != path:  # not already set as Celery started
        metricsdir.directory_prepare(path)
    from prometheus_client import values

    # The library may already be imported (a task module that names a metric): values made
    # from now on go to the files.
    values.ValueClass = values.get_value_class()

    from collab.metrics import worker_server_start

    worker_server_start(port)
    _serving = True
    logger.info("Metrics on port %s (%s)", port, path)


@signals.celeryd_init.connect
def _worker_starting(**kwargs: Any) -> None:
    metrics_serve("worker")


@signals.beat_init.connect
def _beat_starting(**kwargs: Any) -> None:
    metrics_serve("beat")  # a beat of its own; one embedded in a worker is already served


@signals.worker_process_shutdown.connect
def _worker_process_ending(pid: int | None = None, **kwargs: Any) -> None:
    if _serving:
        from collab.metrics import process_files_fold

        process_files_fold(pid or 0)


@signals.task_prerun.connect
def _task_started(task_id: str | None = None, **kwargs: Any) -> None:
    if task_id is not None:
        _started[task_id] = time.perf_counter()


@signals.task_postrun.connect
def _task_ended(
    task_id: str | None = None, task: Any = None, state: str | None = None, **kwargs: Any
) -> None:
    started = _started.pop(task_id, None) if task_id is not None else None
    outcome = _OUTCOMES.get(state or "")
    if started is None or task is None or outcome is None:
        return
    from collab.metrics import TASK_DURATION

    delivery = getattr(task.request, "delivery_info", None) or {}
    queue = delivery.get("routing_key") or settings.CELERY_TASK_DEFAULT_QUEUE
    TASK_DURATION.labels(task.name, queue, outcome).observe(time.perf_counter() - started)
