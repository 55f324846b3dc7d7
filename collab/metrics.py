"""Prometheus metrics: what a scrape reads, and the bookkeeping of several processes.

The metric objects live where they are recorded (the HTTP ones in ``collab.api.metrics``, an
app's in the app); this module names no app. It builds what a scrape answers: every metric
the server's processes recorded, the queues' lengths read from the broker at that moment
(``QueueLengthCollector``) and the build (``BuildInfoCollector``).

**Several processes.** gunicorn and a prefork Celery worker run several processes, each
counting on its own; prometheus-client's multiprocess mode has each write its values to files
of a shared directory (``PROMETHEUS_MULTIPROC_DIR``, read by the library when it is first
imported), which a scrape merges. Each server keeps a directory of its own under the
configured one, ``web-<port>`` or ``worker-<port>`` (two servers cannot listen on one port, so
two on one machine never share one), emptied when the server starts (``directory_prepare``):
gunicorn's ``on_starting`` (gunicorn.conf.py), the worker's start (``collab.taskmetrics``).

Counters and histograms of a process that ended stay in its files, or the totals would go
back; a server that replaces its processes (gunicorn's ``max_requests``, a killed worker, a
prefork child's ``max_tasks_per_child``) would pile up files that every scrape reads, ever
slower (prometheus/client_python#204, #275). So when a process ends (gunicorn's
``child_exit``, Celery's ``worker_process_shutdown``) its files are folded into one archive
file per kind (``process_files_fold``): the directory holds one file per kind per live
process, plus the archives.
"""

import hmac
import ipaddress
import os
import shutil
import subprocess  # noqa: S404 - git rev-parse, fixed arguments
import threading
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import ThreadingWSGIServer, _SilentHandler, make_wsgi_app
from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import Collector

from collab import __version__
from collab.metricsdir import MULTIPROC_ENV

BASE_DIR = Path(__file__).resolve().parent.parent

# How a dead process's values join the archive, by the file's kind (its name's prefix).
# Live gauges ("livesum"...) are dropped by mark_process_dead instead: they end with it.
_FOLD: dict[str, Callable[[Iterable[float]], float]] = {
    "counter": sum,
    "histogram": sum,
    "summary": sum,
    "gauge_sum": sum,
    "gauge_max": max,
    "gauge_min": min,
}
ARCHIVE = "archive"

# OpenTelemetry's duration buckets, stretched to the longest tasks (a git sync, a rollup).
TASK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900)
TASK_DURATION = Histogram(
    "collab_task_duration_seconds",
    "A Celery task run, by task, queue and outcome (success, failure, retry).",
    ["task", "queue", "outcome"],
    buckets=TASK_BUCKETS,
)


def process_files_fold(pid: int, path: str | None = None) -> None:
    """Fold the files of the ended process ``pid`` into the archives, and drop its live gauges.

    Run by the one process that outlives it (gunicorn's master, in ``child_exit``), or by the
    process itself as its very last act: nothing writes to the files meanwhile. A scrape that
    runs at the same moment may read the archive new and the process's file not yet removed
    (counted twice) for the microseconds between the rename and the unlink; it never reads a
    half-written archive (it is written aside and renamed into place)."""
    path = path or os.environ.get(MULTIPROC_ENV)
    if not path:
        return
    mark_process_dead(pid, path)
    for kind, combine in _FOLD.items():
        dead = os.path.join(path, f"{kind}_{pid}.db")
        if not os.path.exists(dead):
            continue
        archive = os.path.join(path, f"{kind}_{ARCHIVE}.db")
        values: dict[str, float] = {}
        for source in (archive, dead):
            if os.path.exists(source):
                for key, value, _timestamp, _pos in MmapedDict.read_all_values_from_file(source):
                    values[key] = combine((values[key], value)) if key in values else value
        aside = f"{archive}.{pid}.part"
        written = MmapedDict(aside)
        try:
            for key, value in values.items():
                written.write_value(key, value, 0.0)
        finally:
            written.close()
        os.replace(aside, archive)
        os.remove(dead)


def multiprocess_path() -> str | None:
    path = os.environ.get(MULTIPROC_ENV)
    return path if path and os.path.isdir(path) else None


def scrape_registry() -> CollectorRegistry:
    """What a scrape answers: the processes' metrics (merged from their files in multiprocess
    mode, this process's own otherwise), the queues' lengths and the build."""
    path = multiprocess_path()
    if path is None:
        registry = REGISTRY
        _register_once(registry)
        return registry
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=path)
    registry.register(QueueLengthCollector())
    registry.register(BuildInfoCollector())
    return registry


_registered: set[int] = set()


def _register_once(registry: CollectorRegistry) -> None:
    if id(registry) not in _registered:
        registry.register(QueueLengthCollector())
        registry.register(BuildInfoCollector())
        _registered.add(id(registry))


@lru_cache(maxsize=1)
def build_commit() -> str:
    """The running build's commit: ``COLLAB_COMMIT``, or git's answer where the code is a
    checkout, else "unknown" (an image built without one)."""
    commit = os.environ.get("COLLAB_COMMIT", "").strip()
    if commit:
        return commit
    if not (BASE_DIR / ".git").exists() or shutil.which("git") is None:
        return "unknown"
    try:
        done = subprocess.run(  # noqa: S603 - fixed arguments
            ["git", "rev-parse", "HEAD"],  # noqa: S607 - git from the PATH, as everywhere
            cwd=BASE_DIR,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "unknown"


class BuildInfoCollector(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "collab_build_info", "The running build (always 1).", labels=["version", "commit"]
        )
        family.add_metric([__version__, build_commit()], 1)
        yield family


class QueueLengthCollector(Collector):
    """``collab_queue_length``: the tasks waiting in each queue, read from the broker at the
    scrape (Redis's lists, or the embedded default's message files). A broker that does not
    answer gives no sample: an absent series, not a false zero."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "collab_queue_length", "Tasks waiting in the broker, by queue.", labels=["queue"]
        )
        lengths = queue_lengths()
        for queue, length in (lengths or {}).items():
            family.add_metric([queue], length)
        yield family


def queue_lengths() -> dict[str, int] | None:
    from django.conf import settings

    queues = list(settings.CELERY_TASK_QUEUES)
    if settings.CELERY_BROKER_URL.startswith(("redis://", "rediss://", "unix://")):
        return _redis_lengths(settings.CELERY_BROKER_URL, queues)
    options: dict[str, Any] = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    folder = options.get("data_folder_in")
    return None if folder is None else _folder_lengths(folder, queues)


# kombu's Redis transport keeps a queue's messages in a list per priority step: the queue's
# own name for priority 0, then "<queue>\x06\x16<step>" (kombu.transport.redis.PRIORITY_STEPS).
_PRIORITY_STEPS = (0, 3, 6, 9)
_PRIORITY_SEP = "\x06\x16"


def _redis_lengths(url: str, queues: list[str]) -> dict[str, int] | None:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    try:
        with client.pipeline(transaction=False) as pipe:
            for queue in queues:
                for step in _PRIORITY_STEPS:
                    pipe.llen(queue if step == 0 else f"{queue}{_PRIORITY_SEP}{step}")
            answers = pipe.execute()
    except redis.RedisError:
        return None
    finally:
        client.close()
    steps = len(_PRIORITY_STEPS)
    return {
        queue: sum(answers[index * steps : (index + 1) * steps])
        for index, queue in enumerate(queues)
    }


def _folder_lengths(folder: str, queues: list[str]) -> dict[str, int] | None:
    """kombu's filesystem transport names a message ``<stamp>_<uuid>.<queue>.msg``
    (collab/filebroker.py); a taken one has a suffix after ``.msg``."""
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    lengths = dict.fromkeys(queues, 0)
    for name in names:
        rest = name.partition(".")[2]
        if rest.endswith(".msg") and rest[:-4] in lengths:
            lengths[rest[:-4]] += 1
    return lengths


def metrics_reader(
    *, remote_addr: str, authorization: str, proxied: bool, token: str, networks: list
) -> bool:
    """Who may read the metrics (docs/operations/metrics.md). With a ``token``, a request
    bearing it (compared in constant time); without, a client on loopback or in ``networks``,
    connected straight to the server: a request that came through a proxy (``proxied``: it
    carries ``X-Forwarded-For`` or ``Forwarded``) is not judged by the proxy's address, which
    is loopback behind a proxy on the same host."""
    if token:
        scheme, _, given = authorization.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), token.encode()
        )
    if proxied:
        return False
    try:
        address = ipaddress.ip_address(remote_addr)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or any(address in network for network in networks)


def environ_reader(environ: dict[str, Any]) -> bool:
    """``metrics_reader`` for a WSGI request (a view's ``request.META`` is one too)."""
    from django.conf import settings

    return metrics_reader(
        remote_addr=environ.get("REMOTE_ADDR") or "",
        authorization=environ.get("HTTP_AUTHORIZATION", ""),
        proxied="HTTP_X_FORWARDED_FOR" in environ or "HTTP_FORWARDED" in environ,
        token=settings.METRICS_TOKEN,
        networks=settings.METRICS_ALLOWED_NETWORKS,
    )


_NOT_FOUND = b'{"success": false, "error": {"code": "NOT_FOUND", "message": "Not found."}}'


def worker_server_start(port: int) -> ThreadingWSGIServer:
    """A worker's metrics on ``port`` (every address), in a thread: ``/metrics`` to its
    readers, as on the web port; any other path, or anyone else, a 404."""
    from wsgiref.simple_server import make_server

    exposition = make_wsgi_app(scrape_registry())

    def app(environ, start_response):
        if environ.get("PATH_INFO") == "/metrics" and environ_reader(environ):
            return exposition(environ, start_response)
        start_response("404 Not Found", [("Content-Type", "application/json")])
        return [_NOT_FOUND]

    server = make_server("0.0.0.0", port, app, ThreadingWSGIServer, handler_class=_SilentHandler)  # noqa: S104 - scraped from other hosts
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
