"""Webhook secrets at rest: Fernet (AES-128-CBC + HMAC-SHA256) tokens.

The keys come from ``WEBHOOK_ENCRYPTION_KEYS`` (comma-separated; the first encrypts, every one
decrypts, so keys can be rotated), or are derived from ``SECRET_KEY`` when none is set.
"""

import base64
import hashlib
from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings


@cache
def _fernet(keys: tuple[str, ...], secret_key: str) -> MultiFernet:
    if not keys:
        digest = hashlib.sha256(f"collab-webhook-secrets:{secret_key}".encode()).digest()
        keys = (base64.urlsafe_b64encode(digest).decode(),)
    return MultiFernet([Fernet(key) for key in keys])


def _current() -> MultiFernet:
    return _fernet(tuple(settings.WEBHOOK_ENCRYPTION_KEYS), settings.SECRET_KEY)


def secret_encrypt(secret: str) -> str:
    return _current().encrypt(secret.encode()).decode()


def secret_decrypt(token: str) -> str:
    try:
        return _current().decrypt(token.encode()).decode()
    except InvalidToken:
        raise RuntimeError(
            "A webhook secret cannot be decrypted: WEBHOOK_ENCRYPTION_KEYS (or SECRET_KEY) "
            "changed without keeping the old key."
        ) from None
