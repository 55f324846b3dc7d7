"""Where a server's processes keep their metric files (collab/metrics.py tells why).

Kept apart from collab/metrics.py because it must run before prometheus-client is imported:
the library reads ``PROMETHEUS_MULTIPROC_DIR`` when it is first imported, in the process that
forks the others. It imports nothing but the standard library.
"""

import os
import shutil
from pathlib import Path

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# django-environ's false words, read here without Django.
FALSE_WORDS = {"0", "false", "off", "no", "n", "f", ""}
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


def celery_role(argv: list[str]) -> str | None:
    """``worker`` or ``beat`` when this process is Celery's worker or beat command (as
    ``celery -A collab worker ...`` or ``python -m celery ... beat`` start it), else None."""
    program = os.path.normpath(argv[0]).split(os.sep)[-2:] if argv else []
    if not any(part.startswith("celery") for part in program):  # bin/celery, celery/__main__.py
        return None
    for word in argv[1:]:
        if word in ("worker", "beat"):
            return word
    return None


def celery_directory_early(argv: list[str]) -> str | None:
    """For a worker or beat with ``WORKER_METRICS_PORT``, its own directory, prepared and set in
    the environment as the Celery app is imported: before Django's setup, which imports the
    apps' metric objects (prometheus-client reads the directory as each one is made)."""
    role, port = celery_role(argv), os.environ.get("WORKER_METRICS_PORT", "").strip()
    disabled = os.environ.get("METRICS_ENABLED", "1").strip().lower() in FALSE_WORDS
    if role is None or not port.isdigit() or disabled:
        return None
    path = server_directory(multiproc_base(), role, port)
    if os.environ.get(MULTIPROC_ENV) != path:
        directory_prepare(path)
    return path
