"""The cursors of cursor pagination (``collab.api.pagination``) as tokens: a JSON object,
signed with the secret key, in base64url. Opaque to clients, and unforgeable: a cursor that was
changed answers 400 whatever it was changed to, so the paginator reads only what it wrote."""

import base64
import binascii
import hmac
import json
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any
from uuid import UUID

from django.conf import settings
from django.utils.crypto import salted_hmac

from .exceptions import BadRequest

# A cursor is base64url without padding. The bound is far above any cursor this server makes
# (a few sort values and a key) and keeps a made-up one from costing more than a glance.
CURSOR_PATTERN = "^[A-Za-z0-9_-]+$"
MAX_CURSOR_LENGTH = 1024
_CURSOR_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_MAC_BYTES = 12
_MAC_SALT = "collab.api.cursors"


def cursor_encode(payload: dict[str, Any]) -> str:
    """``payload`` as compact JSON, signed, in base64url without padding."""
    body = json.dumps(payload, separators=(",", ":"), default=_plain).encode()
    signed = _mac(body, settings.SECRET_KEY) + body
    return base64.urlsafe_b64encode(signed).rstrip(b"=").decode("ascii")


def cursor_decode(token: str) -> dict[str, Any]:
    """The payload of a cursor this server made; anything else answers 400."""
    if token == "":
        raise bad_cursor("'cursor' must not be empty: leave it out for the first page.")
    if len(token) > MAX_CURSOR_LENGTH or not set(token) <= _CURSOR_CHARACTERS:
        raise bad_cursor()
    try:
        signed = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise bad_cursor() from None
    mac, body = signed[:_MAC_BYTES], signed[_MAC_BYTES:]
    # Cursors made before a key rotation keep working while the old key is a fallback.
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    if len(mac) < _MAC_BYTES or not any(
        hmac.compare_digest(mac, _mac(body, secret)) for secret in secrets
    ):
        raise bad_cursor()
    payload = json.loads(body)
    if not isinstance(payload, dict):  # only this module signs, and it signs objects
        raise bad_cursor()
    return payload


def _mac(body: bytes, secret: str) -> bytes:
    return salted_hmac(_MAC_SALT, body, secret=secret, algorithm="sha256").digest()[:_MAC_BYTES]


def bad_cursor(message: str | None = None) -> BadRequest:
    message = message or (
        "'cursor' is not a cursor this server gave: send back meta.next_cursor as it came."
    )
    return BadRequest(message, details={"cursor": [message]})


def _plain(value: Any) -> Any:
    # Sort values as JSON; the column's own field turns them back when the cursor is used.
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal | UUID):
        return str(value)
    raise TypeError(f"A {type(value).__name__} cannot be a cursor's sort value.")
