"""Secrets of one installation, made at its first start and kept in its data folder.

The embedded default runs with nothing configured, so it cannot ask for a secret; a default
written in the repository would be the same on every installation, and anyone could sign
tokens for all of them. Instead each installation makes its own on first use, readable by its
owner only, and every later start (and every process of it: web, worker, commands) reads it
back. A value from the environment still wins; that choice is the caller's.
"""

import os
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path


def keyfile_secret(path: Path, *, make: Callable[[], str]) -> str:
    """The secret kept in ``path``, made with ``make()`` and written there if it is absent.

    Processes starting together race to create it: the file is created exclusively, and a
    loser reads what the winner wrote. It is written to a temporary name and linked into place,
    so no reader ever sees it half written. Never printed or logged.
    """
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(make() + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        # Another process may have made it first: its secret is then the installation's.
        with suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return _read(path)


def _read(path: Path) -> str:
    secret = path.read_text().strip()
    if not secret:
        raise RuntimeError(f"The secret file {path.name} in the data folder is empty.")
    return secret
