"""The two signatures of a delivery (docs/guide/events-and-webhooks.md), over the exact bytes sent.

- ``X-Collab-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>``, GitHub's scheme;
- Standard Webhooks: ``webhook-signature: v1,<base64 HMAC-SHA256(secret,
  "{webhook-id}.{webhook-timestamp}.{body}")>``, keyed by the secret's UTF-8 bytes, which the
  reference verifier accepts given ``"whsec_" + base64(secret)``.
"""

import base64
import hashlib
import hmac


def signature_hex(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_standard(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def delivery_headers(
    *, secret: str, event_type: str, delivery_id: str, attempt: int, timestamp: int, body: bytes
) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": "Collab-Webhooks/1.0",
        "X-Collab-Event": event_type,
        "X-Collab-Delivery": delivery_id,
        "X-Collab-Attempt": str(attempt),
        "X-Collab-Signature-256": signature_hex(secret, body),
        "webhook-id": delivery_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature_standard(secret, delivery_id, timestamp, body),
    }
