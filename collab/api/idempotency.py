"""``Idempotency-Key`` on POST (CONTRACT section 1).

The first request with a key claims it by inserting a row (unique per user and key), so two
concurrent requests cannot both run. A repeat with the same body within 24 hours gets the
stored answer, marked ``Idempotent-Replayed: true``; with a different body, 422; while the
first is still running, 409. A 5xx answer is not kept, so the client may retry.
"""

import hashlib
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import IdempotencyKey

from .exceptions import BadRequest, Conflict, ValidationFailed
from .renderers import Envelope

HEADER = "Idempotency-Key"
LIFETIME = timedelta(hours=24)


class IdempotentReplay(Exception):  # noqa: N818 - a control-flow signal, not an error
    def __init__(self, record: IdempotencyKey):
        super().__init__(record.key)
        self.record = record


def _request_hash(request) -> str:
    digest = hashlib.sha256()
    digest.update(f"{request.method} {request.path}\n".encode())
    digest.update(request._request.body)
    return digest.hexdigest()


def _printable_ascii(value: str) -> bool:
    return all(" " < char <= "~" for char in value)


def idempotency_begin(request) -> IdempotencyKey | None:
    key = request.headers.get(HEADER)
    if key is None:
        return None
    if not key or len(key) > 255 or not _printable_ascii(key):
        raise BadRequest(
            f"{HEADER} must be 1 to 255 printable ASCII characters (a UUID, say).",
            details={HEADER: ["Use 1 to 255 printable ASCII characters."]},
        )
    request_hash = _request_hash(request)
    for _ in range(2):
        try:
            with transaction.atomic():
                return IdempotencyKey.objects.create(
                    user=request.user, key=key, request_hash=request_hash
                )
        except IntegrityError:
            existing = IdempotencyKey.objects.filter(user=request.user, key=key).first()
            if existing is None:
                continue
            if existing.created_at <= timezone.now() - LIFETIME:
                existing.delete()
                continue
            if existing.request_hash != request_hash:
                raise ValidationFailed(
                    f"This {HEADER} was used with a different request.",
                    details={HEADER: ["Already used with a different request body or path."]},
                ) from None
            if existing.status_code is None:
                raise Conflict(f"A request with this {HEADER} is still being processed.") from None
            raise IdempotentReplay(existing) from None
    raise Conflict(f"A request with this {HEADER} is still being processed.")


def idempotency_finish(record: IdempotencyKey, response) -> None:
    if response.status_code >= 500:
        record.delete()
        return
    body = response.data
    if response.status_code < 400 and not isinstance(body, Envelope):
        body = {"success": True, "data": body}
    record.status_code = response.status_code
    record.response_body = body
    record.location = response.get("Location", "")
    record.save(update_fields=["status_code", "response_body", "location"])
