"""An invitation's token, made from a random nonce kept on the invitation and the server's
``SECRET_KEY`` (HMAC-SHA256, as Django makes its password reset tokens).

The task that emails the token takes the invitation's id alone and makes the token again from
the nonce: no token travels through the broker or sits in a task's arguments (which Celery
logs), and none is stored. The database holds the nonce, which opens nothing without the key,
and the token's SHA-256, which the accepting request looks up.
"""

import base64
import hmac
import secrets

from django.conf import settings
from django.utils.crypto import salted_hmac

from .keys import hash_key

_SALT = "collab.accounts.invitation-token"


def token_issue() -> tuple[str, str]:
    """A new ``(nonce, token)``: keep the nonce and the token's hash, send the token."""
    nonce = secrets.token_urlsafe(32)
    return nonce, token_of(nonce)


def token_of(nonce: str, secret: str | None = None) -> str:
    """The token of ``nonce`` under ``secret`` (SECRET_KEY by default): 43 URL-safe characters."""
    digest = salted_hmac(_SALT, nonce, secret=secret, algorithm="sha256").digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def token_recover(*, nonce: str, token_hash: str) -> str | None:
    """The token issued with ``nonce`` whose hash is ``token_hash``: under SECRET_KEY, or under
    one of SECRET_KEY_FALLBACKS when the key was rotated since. None when no key makes it (no
    nonce, as for invitations made before tokens were made so, or a key dropped since)."""
    if not nonce:
        return None
    for secret in [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]:
        token = token_of(nonce, secret)
        if hmac.compare_digest(hash_key(token), token_hash):
            return token
    return None
