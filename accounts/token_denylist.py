"""Access tokens ended before they expire: the denylist behind logout
(docs/guide/authentication.md).

An access token is a signed JWT, valid by its signature and ``exp`` alone, so ending one early
takes a list of ended tokens that every JWT request consults. An entry names either

- one access token, ``jti:<its jti>`` (the token a logout was called with), or
- a whole sign-in session, ``sid:<session id>``: a login's tokens, and every pair refreshed
  from them, carry the session's id in the ``sid`` claim, so a logout with the session's
  refresh token also ends the access tokens issued from it (earlier rotations included).

An entry is kept only until the last token it names expires by itself; after that the token's
own ``exp`` refuses it. ``access_token_entries`` says which entries refuse a token.

The database (``accounts.DeniedToken``) is the record, written in the logout's transaction
beside the refresh token's revocation, and purged hourly (``accounts.tasks.denied_tokens_purge``).
Where the per-request question is answered is ``TOKEN_DENYLIST_BACKEND`` (default ``database``,
which costs a request nothing; ``redis`` needs ``REDIS_URL``):

- ``database``: the check rides on the query that loads the token's user (``EXISTS`` on the
  primary key), so a JWT request makes no more queries than it did without a denylist. The
  local-memory cache would not do: the embedded default runs several processes.
- ``redis``: entries are also set in Redis, expiring with their tokens (``SET ... EXAT``), and
  a JWT request asks Redis once (``EXISTS`` over the token's entries). When Redis cannot
  answer, the database does (one indexed query), and Redis is left alone for
  ``RATE_LIMIT_FAIL_OPEN_SECONDS``: an outage neither lets an ended token through nor turns
  every JWT away. A logout that cannot reach Redis fails as a whole (500, nothing revoked), so
  Redis never misses an entry the database has once it is back.

API keys are not JWTs and never pay for this check.
"""

import functools
import logging
import threading
import time
from collections.abc import Mapping

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.db.models import Exists
from django.dispatch import receiver
from django.utils import timezone
from rest_framework_simplejwt.settings import api_settings
from rest_framework_simplejwt.tokens import Token
from rest_framework_simplejwt.utils import datetime_from_epoch

from .models import DeniedToken, User

logger = logging.getLogger("collab.auth")

# The claim that carries a sign-in session's id through every token of the session.
SESSION_CLAIM = "sid"
REDIS_KEY_PREFIX = "collab:denied:"


def access_token_entries(token: Token) -> list[str]:
    """The denylist entries any of which ends ``token``: its own id and its session's."""
    entries = [f"jti:{token[api_settings.JTI_CLAIM]}"]
    session = token.get(SESSION_CLAIM)
    if session:
        entries.append(f"sid:{session}")
    return entries


def _database_has_any(entries: list[str]) -> bool:
    return DeniedToken.objects.filter(key__in=entries).exists()


class DatabaseDenylist:
    name = "database"
    # The check is made by the user's own query (see ``access_token_user``).
    checks_in_user_query = True

    def add(self, entries: Mapping[str, int]) -> None:
        pass  # the database row, written for every store, is all there is

    def has_any(self, entries: list[str]) -> bool:
        return _database_has_any(entries)


class RedisDenylist:
    name = "redis"
    checks_in_user_query = False

    def __init__(self, *, url: str, timeout: float, pause: float):
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.errors = (redis.RedisError, OSError)
        # Short timeouts and no retries: a slow Redis must cost a request milliseconds.
        self.client = redis.Redis.from_url(
            url,
            socket_connect_timeout=timeout,
            socket_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=30,
        )
        self._pause = pause
        self._down_until = 0.0
        self._lock = threading.Lock()

    def add(self, entries: Mapping[str, int]) -> None:
        # Errors propagate: the logout fails rather than leave Redis without the entry.
        # An entry already there keeps the later of its two ends (EXPIREAT GT, Redis 7): a
        # logout's end of a session must not shorten a replay's (``session_end``).
        pipe = self.client.pipeline(transaction=False)
        for entry, expires_at in entries.items():
            key = f"{REDIS_KEY_PREFIX}{entry}"
            pipe.set(key, 1, exat=expires_at, nx=True)
            pipe.expireat(key, expires_at, gt=True)
        pipe.execute()

    def has_any(self, entries: list[str]) -> bool:
        if time.monotonic() >= self._down_until:
            try:
                return bool(self.client.exists(*(f"{REDIS_KEY_PREFIX}{e}" for e in entries)))
            except self.errors as exc:
                with self._lock:
                    already_down = time.monotonic() < self._down_until
                    self._down_until = time.monotonic() + self._pause
                if not already_down:
                    logger.warning(
                        "Token denylist: Redis failed (%s: %s); asking the database instead "
                        "for %.0f s.",
                        exc.__class__.__name__,
                        exc,
                        self._pause,
                    )
        return _database_has_any(entries)


@functools.cache
def _store(backend: str, url: str, timeout: float, pause: float):
    if backend == "redis":
        if not url:
            raise ImproperlyConfigured("TOKEN_DENYLIST_BACKEND='redis' needs REDIS_URL.")
        return RedisDenylist(url=url, timeout=timeout, pause=pause)
    if backend == "database":
        return DatabaseDenylist()
    raise ImproperlyConfigured(
        f"TOKEN_DENYLIST_BACKEND={backend!r}: use 'database', or 'redis' with REDIS_URL."
    )


def store() -> RedisDenylist | DatabaseDenylist:
    """The configured store, one per process (a Redis client holds a connection pool)."""
    backend = settings.TOKEN_DENYLIST_BACKEND
    return _store(
        backend,
        settings.REDIS_URL,
        settings.RATE_LIMIT_REDIS_TIMEOUT,
        settings.RATE_LIMIT_FAIL_OPEN_SECONDS,
    )


@receiver(setting_changed)
def _forget_stores(*, setting, **kwargs):
    if setting.startswith(("TOKEN_DENYLIST_", "RATE_LIMIT_")) or setting == "REDIS_URL":
        _store.cache_clear()


def denylist_add(*, entries: Mapping[str, int]) -> None:
    """Deny each entry (``jti:...`` or ``sid:...``) until its time (Unix seconds).

    Call it inside the transaction that ends the session: the row commits with it, and a
    Redis failure rolls it back.
    """
    DeniedToken.objects.bulk_create(
        [
            DeniedToken(key=entry, expires_at=datetime_from_epoch(expires_at))
            for entry, expires_at in entries.items()
        ],
        # Ending an ended token again changes nothing.
        ignore_conflicts=True,
    )
    store().add(entries)


def session_end(*, session: str, until: int) -> None:
    """End a whole session until ``until`` (Unix seconds): its access tokens, and the refresh
    tokens asked about with ``session_ended``. An earlier end of the same session (a logout's,
    which needs to outlast only access tokens) is pushed back to ``until``."""
    entry = f"sid:{session}"
    DeniedToken.objects.filter(key=entry, expires_at__lt=datetime_from_epoch(until)).update(
        expires_at=datetime_from_epoch(until)
    )
    denylist_add(entries={entry: until})


def session_ended(*, session: str) -> bool:
    """Whether the session has been ended. Asked on a refresh, rare enough to ask the
    database (the record) whatever the store."""
    return DeniedToken.objects.filter(key=f"sid:{session}", expires_at__gt=timezone.now()).exists()


def access_token_user(token: Token) -> tuple[User | None, bool]:
    """The user a validated access token names (``None``: no such user) and whether the token
    has been ended. One query in the database store; one query and one Redis call in Redis's.
    """
    entries = access_token_entries(token)
    users = User.objects.filter(pk=token[api_settings.USER_ID_CLAIM])
    denylist = store()
    if denylist.checks_in_user_query:
        # An uncorrelated EXISTS: the database probes the primary key once per entry.
        denied = Exists(DeniedToken.objects.filter(key__in=entries))
        annotated = users.annotate(token_denied=denied).first()
        if annotated is None:
            return None, False
        return annotated, annotated.token_denied
    user = users.first()
    if user is None:
        return None, False
    return user, denylist.has_any(entries)


def denylist_purge() -> int:
    """Delete the entries whose tokens have all expired (Redis expires its own)."""
    deleted, _ = DeniedToken.objects.filter(expires_at__lt=timezone.now()).delete()
    return deleted
