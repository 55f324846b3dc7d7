"""gunicorn's hooks for the metrics of several processes (docs/operations/metrics.md); gunicorn
reads this file from the directory it starts in, so every server of the project (the image,
compose, Kubernetes, ./run's Procfile.local, the tests' live servers) runs them. Every other
setting stays on the command line.

- ``on_starting``: the master empties this server's metrics directory and points its workers
  at it (``PROMETHEUS_MULTIPROC_DIR``), before any of them is forked or imports the library.
- ``child_exit``: a worker that ended has its files folded into the archives (its totals
  kept), so files of replaced workers do not pile up and slow every scrape.

Nothing is set up with ``METRICS_ENABLED=0``.
"""

import os
import re
from pathlib import Path

_ROOT = Path(__file__).resolve().parent


def _metrics_enabled() -> bool:
    # The setting's own parsing (collab/settings/base.py) is django-environ's; these are its
    # false values, read here without loading Django into the master.
    return os.environ.get("METRICS_ENABLED", "1").strip().lower() not in {
        "0",
        "false",
        "off",
        "no",
        "n",
        "f",
        "",
    }


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
