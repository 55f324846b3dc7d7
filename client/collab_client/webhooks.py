"""Verifying a webhook delivery before trusting it.

    from collab_client import webhooks

    event = webhooks.verify(request.body, request.headers, secret=["whsec-new", "whsec-old"])

A delivery carries two signatures over the exact bytes of its body
(docs/guide/events-and-webhooks.md); either is enough:

- ``X-Collab-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`` (GitHub's scheme);
- Standard Webhooks: ``webhook-id``, ``webhook-timestamp`` and ``webhook-signature:
  v1,<base64 HMAC-SHA256(secret, "{id}.{timestamp}.{body}")>`` (several, space-separated).

Signatures are compared in constant time; whenever ``webhook-timestamp`` is sent it must be
within ``tolerance`` seconds of now (a replayed old delivery fails), and the Standard Webhooks
signature requires it. Several secrets may be given while one is being rotated.
"""

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import WebhookVerificationError
from .models import Event

__all__ = ["WebhookVerificationError", "sign", "verify"]


def _header(headers: Mapping[str, Any], name: str) -> str | None:
    lowered = name.lower()
    for key, value in headers.items():
        if key.lower() == lowered:
            return value.decode() if isinstance(value, bytes) else str(value)
    return None


def _hex_signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _standard_signature(secret: str, message_id: str, timestamp: str, body: bytes) -> str:
    signed = f"{message_id}.{timestamp}.".encode() + body
    return base64.b64encode(hmac.new(secret.encode(), signed, hashlib.sha256).digest()).decode()


def verify(
    body: bytes | str,
    headers: Mapping[str, Any],
    secret: str | Sequence[str],
    *,
    tolerance: int = 300,
    now: float | None = None,
) -> Event:
    """The delivered event, once its signature holds; ``WebhookVerificationError`` if not."""
    raw = body.encode() if isinstance(body, str) else bytes(body)
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets or not all(secrets):
        raise WebhookVerificationError("No secret to verify the delivery with.")
    timestamp = _header(headers, "webhook-timestamp")
    if timestamp is not None:
        try:
            sent_at = int(timestamp)
        except ValueError:
            raise WebhookVerificationError("webhook-timestamp is not a number.") from None
        if abs((time.time() if now is None else now) - sent_at) > tolerance:
            raise WebhookVerificationError(
                f"The delivery's timestamp is more than {tolerance} s away from now."
            )
    if not _signed(raw, headers, secrets, timestamp):
        raise WebhookVerificationError("No signature of the delivery matches the secret.")
    try:
        payload = json.loads(raw)
    except ValueError:
        raise WebhookVerificationError("The signed body is not JSON.") from None
    return Event.from_dict(payload)


def _signed(
    raw: bytes, headers: Mapping[str, Any], secrets: list[str], timestamp: str | None
) -> bool:
    hex_signature = _header(headers, "X-Collab-Signature-256")
    if hex_signature is not None:
        for secret in secrets:
            if hmac.compare_digest(_hex_signature(secret, raw), hex_signature.strip()):
                return True
    message_id = _header(headers, "webhook-id")
    signatures = _header(headers, "webhook-signature")
    if signatures is not None and message_id is not None and timestamp is not None:
        offered = [
            part.split(",", 1)[1]
            for part in signatures.split()
            if part.startswith("v1,") and "," in part
        ]
        for secret in secrets:
            expected = _standard_signature(secret, message_id, timestamp, raw)
            if any(hmac.compare_digest(expected, candidate) for candidate in offered):
                return True
    return False


def sign(
    body: bytes, secret: str, *, message_id: str, timestamp: int | None = None
) -> dict[str, str]:
    """The headers Collab would send with ``body``: for a receiver's own tests."""
    sent_at = str(int(time.time()) if timestamp is None else timestamp)
    return {
        "X-Collab-Signature-256": _hex_signature(secret, body),
        "webhook-id": message_id,
        "webhook-timestamp": sent_at,
        "webhook-signature": "v1," + _standard_signature(secret, message_id, sent_at, body),
    }
