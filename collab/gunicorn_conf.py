"""gunicorn's settings beyond its command line (``--config python:collab.gunicorn_conf``;
gunicorn.conf.py at the repository's root names this module, for a gunicorn started there
without ``--config``). Read by gunicorn's master before any Django setting exists.

- Its own lines go through the service's logging (collab/logs.py).
- ``post_fork``: tracing starts in each worker after the fork (collab/tracing.py).
- ``on_starting``: the master empties this server's metrics directory and points its workers
  at it (``PROMETHEUS_MULTIPROC_DIR``), before any of them is forked or imports the library
  (docs/operations/metrics.md).
- ``child_exit``: a worker that ended has its metric files folded into the archives (its
  totals kept), so files of replaced workers do not pile up and slow every scrape.

No metrics hook does anything with ``METRICS_ENABLED=0``.

gunicorn's control socket (``gunicornc``, since gunicorn 25) is off: nothing here uses it, it
would let any local process of the same user change the workers, and its default path
(``$HOME/.gunicorn/gunicorn.ctl``) is one per user, so every server but the first on a machine
(the benchmark's three, the tests') logged an error at start for it.
"""

import os
import re

from collab.logs import logging_config

control_socket_disable = True
logconfig_dict = logging_config(
    log_format=os.environ.get("LOG_FORMAT", "console"),
    level=os.environ.get("LOG_LEVEL", "INFO"),
)


def post_fork(server, worker):
    from collab.tracing import tracing_start

    tracing_start()


def _metrics_enabled() -> bool:
    # The setting's own parsing (collab/settings/base.py) is django-environ's; these are its
    # false values, read here without loading Django into the master.
    from collab.metricsdir import FALSE_WORDS

    return os.environ.get("METRICS_ENABLED", "1").strip().lower() not in FALSE_WORDS


def _server_name(server) -> str:
    address = server.cfg.address[0] if server.cfg.address else "unknown"
    if isinstance(address, tuple):
        return str(address[1])
    return re.sub(r"[^A-Za-z0-9_.-]", "_", str(address))  # a unix socket's path


def on_starting(server):
    if not _metrics_enabled():
        return
    from collab.metricsdir import directory_prepare, multiproc_base, server_directory

    directory_prepare(server_directory(multiproc_base(), "web", _server_name(server)))


def child_exit(server, worker):
    if not _metrics_enabled():
        return
    from collab.metrics import process_files_fold

    process_files_fold(worker.pid)
