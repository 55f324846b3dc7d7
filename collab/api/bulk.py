"""Bulk requests (docs/guide/bulk-writes.md): one answer per item, in input order.

An item is answered ``{"index", "status", "data", "error"}``: its record and 201 or 200, or
its error as a single request would have answered it. Without ``atomic`` a bad item does not
sink the others; with it, the first failure answers the whole request with that item's
status and error (``details.index`` naming it) and nothing is written.
"""

from collections.abc import Callable, Sequence
from typing import Any

from django.db import transaction

from .exceptions import EXPECTED_ERRORS, ApiError, error_of

MAX_ITEMS = 100


class ItemFailed(ApiError):
    """An item of an atomic bulk request failed: the request answers as that item would."""

    def __init__(self, index: int, status: int, error: dict[str, Any]):
        self.status_code = status
        self.code = error["code"]
        super().__init__(error["message"], details={**error["details"], "index": index})


def item_result(index: int, status: int, data: Any = None, error: dict | None = None) -> dict:
    return {"index": index, "status": status, "data": data, "error": error}


def failure(index: int, exc: Exception) -> dict:
    """An item's result for an expected error (a bug is left to propagate)."""
    known = error_of(exc)
    if known is None:
        raise exc
    status, body = known
    return item_result(index, status, error=body["error"])


def raise_first(results: Sequence[dict]) -> None:
    """For ``atomic``: the first failed item, as the request's own error."""
    for result in results:
        if result["error"] is not None:
            raise ItemFailed(result["index"], result["status"], result["error"])


def apply_each(
    items: Sequence[tuple[int, Any]],
    apply: Callable[[Any], tuple[int, Any]],
    *,
    atomic: bool,
) -> list[dict]:
    """``apply`` to each ``(index, item)``, each in its own savepoint, all in one transaction:
    a failing item is answered with its error (or, ``atomic``, fails the whole request)."""
    results = []
    with transaction.atomic():
        for index, item in items:
            try:
                with transaction.atomic():
                    status, data = apply(item)
            except EXPECTED_ERRORS as exc:
                results.append(failure(index, exc))
                if atomic:
                    raise_first(results)
            else:
                results.append(item_result(index, status, data))
    return results
