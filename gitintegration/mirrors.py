"""A node's mirror of a repository, and what may be fetched into one.

Below the services and the selectors alike: a read (a pull request's commits) fills this
node's mirror from the origin as a write does, through the same address guard.
"""

import logging
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings

from collab.api.exceptions import Conflict, ValidationFailed
from collab.netguard import UnsafeAddress, resolve

from . import git
from .models import Repository

logger = logging.getLogger("collab.git")


def _refuse(message: str) -> ValidationFailed:
    return ValidationFailed.field("clone_url", message)


def clone_url_check(*, clone_url: str) -> str:
    """The URL if git may fetch it from this server, else a 422 naming ``clone_url``.

    Local paths and ``file://`` read the server's own disk: only with
    ``GIT_ALLOW_LOCAL_REPOSITORIES``. Network URLs must not lead to loopback, private or
    link-local addresses unless ``WEBHOOK_ALLOW_PRIVATE_NETWORKS`` (the webhooks' guard).
    The URL is read as git reads it (``git.remote_parse``); git itself is pinned to the
    checked addresses again when it runs (``git.remote_pin``).
    """
    url = clone_url.strip()
    if not url or url.startswith("-") or any(ord(ch) < 32 for ch in url):
        raise _refuse("Enter a URL git can fetch.")
    try:
        remote = git.remote_parse(url)
    except ValueError as exc:
        raise _refuse(str(exc)) from None
    if remote is None:
        if not settings.GIT_ALLOW_LOCAL_REPOSITORIES:
            raise _refuse(
                "Local paths and file:// URLs are refused on this server "
                "(GIT_ALLOW_LOCAL_REPOSITORIES is off)."
            )
        # git expands no "~" and resolves relative paths against its working directory.
        path = Path(urlsplit(url).path if url.startswith("file://") else url)
        if not path.is_absolute():
            raise _refuse("A local repository must be given by its absolute path.")
        return url
    if remote.has_password and remote.scheme == "ssh":
        raise _refuse("Passwords in ssh URLs are not accepted; use a deploy key.")
    try:
        # The webhooks' guard: every address the name resolves to must be public.
        resolve(remote.host, remote.port)
    except UnsafeAddress as exc:
        raise _refuse(str(exc)) from None
    return url


def mirror_ready(*, repository: Repository, needs: list[str]) -> Path:
    """This node's mirror of the repository, holding the commits ``needs`` names.

    A node's mirror is a cache of the origin: whichever node a request or a task lands on, a
    mirror that is missing, or older than the database's record of the branches, is fetched
    from the origin first (through the address guard, as every fetch is). What the answer
    depends on is the database's record, so every node gives the same one.
    """
    path = git.mirror_path(repository.pk)
    with git.mirror_lock(repository.pk):
        if (path / "HEAD").exists() and all(git.object_exists(path, sha) for sha in needs):
            return path
        try:
            clone_url_check(clone_url=repository.clone_url)
            return git.mirror_fetch(repository_id=repository.pk, url=repository.clone_url)
        except (git.GitError, ValidationFailed, OSError) as exc:
            raise mirror_unavailable(exc) from None


def mirror_unavailable(exc: Exception) -> Conflict:
    # git's own message names paths on the server: logged, not answered.
    logger.warning("Mirror unreadable: %s", exc)
    return Conflict(
        "The repository's mirror cannot be read; sync the repository first.",
        details={"sync_required": True},
    )
