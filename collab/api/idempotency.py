"""``Idempotency-Key`` on POST (docs/guide/idempotency.md).

The first request with a key claims it by inserting a row (unique per user and key) inside a
transaction that also holds everything the request writes, and that records the answer before
it commits. So the key, the work and the stored answer commit together or not at all: a server
killed mid-request leaves nothing behind, and the client's retry (on any server) runs afresh
instead of finding the key taken forever, or finding the work done with no answer stored.

A repeat with the same body within 24 hours gets the stored answer, marked
``Idempotent-Replayed: true``; with a different body, 422; while the first is still running
(its uncommitted row holds the unique key: PostgreSQL makes the second insert wait, cut short
by a lock timeout), 409. A 5xx answer rolls everything back, so the client may retry.
"""

import hashlib
from datetime import timedelta
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import IntegrityError, OperationalError, connection, transaction
from django.utils import timezone

from .exceptions import BadRequest, Conflict, ValidationFailed
from .renderers import Envelope

HEADER = "Idempotency-Key"
LIFETIME = timedelta(hours=24)


def key_model() -> Any:
    """The model keys are kept in (``settings.IDEMPOTENCY_KEY_MODEL``)."""
    return apps.get_model(settings.IDEMPOTENCY_KEY_MODEL)


class IdempotentReplay(Exception):  # noqa: N818 - a control-flow signal, not an error
    def __init__(self, record: Any):
        super().__init__(record.key)
        self.record = record


def _request_hash(request) -> str:
    digest = hashlib.sha256()
    digest.update(f"{request.method} {request.path}\n".encode())
    projects = getattr(request.auth, "projects", None)
    if projects is not None:
        # A credential limited to projects is another request than the same from one that is
        # not: no replay shows it an answer made for a wider view.
        digest.update(f"projects {sorted(projects)}\n".encode())
    digest.update(request._request.body)
    return digest.hexdigest()


def _printable_ascii(value: str) -> bool:
    return all(" " < char <= "~" for char in value)


STILL_RUNNING = f"A request with this {HEADER} is still being processed."


class Claim:
    """A key claimed by the running request, with the transaction that holds its work."""

    def __init__(self, record: Any, atomic):
        self.record = record
        self.atomic = atomic


def idempotency_begin(request) -> Claim | None:
    """Claim the request's key and open the transaction the request runs in, or raise the
    replay, the 422 or the 409 it gets instead."""
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
        existing = key_model().objects.filter(user=request.user, key=key).first()
        if existing is not None:
            if existing.created_at <= timezone.now() - LIFETIME or existing.status_code is None:
                # Expired; or claimed without an answer, which only a server of the version
                # before the claim became transactional could leave: its request is over.
                existing.delete()
            else:
                _answer_of(existing, request_hash)
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            with transaction.atomic():
                _lock_timeout("'200ms'")
                record = key_model().objects.create(
                    user=request.user, key=key, request_hash=request_hash
                )
                _lock_timeout("DEFAULT")  # the request's own work waits as it always did
        except IntegrityError:
            atomic.__exit__(None, None, None)
            continue  # the other request committed meanwhile: answer as it did
        except OperationalError as exc:
            atomic.__exit__(type(exc), exc, exc.__traceback__)
            if _is_lock_timeout(exc):
                raise Conflict(STILL_RUNNING) from None
            raise
        except BaseException as exc:
            atomic.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return Claim(record, atomic)
    raise Conflict(STILL_RUNNING)


def _answer_of(existing: Any, request_hash: str):
    if existing.request_hash != request_hash:
        raise ValidationFailed(
            f"This {HEADER} was used with a different request.",
            details={HEADER: ["Already used with a different request body or path."]},
        )
    raise IdempotentReplay(existing)


def _lock_timeout(value: str) -> None:
    # The insert of a key another transaction holds uncommitted waits for that transaction;
    # a running request is answered 409 at once instead. (SQLite takes its write lock for the
    # whole transaction, so there the second request waits for the first, then replays.)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL lock_timeout = {value}")  # noqa: S608 - constants only


def _is_lock_timeout(exc: OperationalError) -> bool:
    cause = exc.__cause__
    return getattr(cause, "sqlstate", None) == "55P03"  # lock_not_available


def idempotency_finish(claim: Claim, response) -> None:
    """Store the answer with the work and commit both; a 5xx rolls both back."""
    if response.status_code >= 500:
        idempotency_abort(claim)
        return
    record = claim.record
    body = response.data
    if response.status_code < 400 and not isinstance(body, Envelope):
        body = {"success": True, "data": body}
    record.status_code = response.status_code
    record.response_body = body
    record.location = response.get("Location", "")
    try:
        record.save(update_fields=["status_code", "response_body", "location"])
    except BaseException as exc:
        claim.atomic.__exit__(type(exc), exc, exc.__traceback__)
        raise
    claim.atomic.__exit__(None, None, None)


def idempotency_abort(claim: Claim) -> None:
    """Roll back the claim and the request's work (the request failed)."""
    error = RuntimeError("the request failed")
    claim.atomic.__exit__(RuntimeError, error, None)
