"""Where a server's processes keep their metric files (collab/metrics.py tells why).

Kept apart from collab/metrics.py because it must run before prometheus-client is imported:
the library reads ``PROMETHEUS_MULTIPROC_DIR`` when it is first imported, in the process that
forks the others. It imports nothing but the standard library.
"""

import os
import shutil
from pathlib import Path

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
_ROOT = Path(__file__).resolve().parent.parent


def multiproc_base() -> str:
    """``PROMETHEUS_MULTIPROC_DIR``, else ``prometheus`` in the data folder (``COLLAB_DATA_DIR``,
    ``var/`` by default), as collab/settings/base.py reads them."""
    configured = os.environ.get(MULTIPROC_ENV)
    if configured:
        return configured
    data = os.environ.get("COLLAB_DATA_DIR") or str(_ROOT / "var")
    return os.path.join(data, "prometheus")


def server_directory(base: str, role: str, name: str | int) -> str:
    """One server's directory under ``base``: ``web-8000``, ``worker-9100``. Two servers cannot
    listen on one port, so two on one machine never share a directory."""
    return os.path.join(base, f"{role}-{name}")


def directory_prepare(path: str) -> None:
    """An empty directory at ``path``, and this process and the ones it forks set to write
    their metrics there (each forked process takes the environment as it is now)."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, exist_ok=True)
    os.environ[MULTIPROC_ENV] = path
