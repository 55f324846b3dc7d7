"""The ``{success, data, meta}`` envelope, rendered with orjson."""

import datetime
import decimal
import uuid
from typing import overload

import orjson
from rest_framework.renderers import BaseRenderer


class Envelope(dict):
    """A response body that is already a full envelope (lists with meta, errors).

    The renderer passes it through untouched; any other body is wrapped as ``data``.
    """


def _default(value):
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if hasattr(value, "__str__"):  # lazy translation strings, ErrorDetail
        return str(value)
    raise TypeError


@overload
def iso_z(value: datetime.datetime) -> str: ...
@overload
def iso_z(value: None) -> None: ...
@overload
def iso_z(value: datetime.datetime | None) -> str | None: ...
def iso_z(value: datetime.datetime | None) -> str | None:
    """A timestamp as the API writes it: ISO 8601 in UTC ending in ``Z`` (None stays None)."""
    if value is None:
        return None
    return value.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z")


def dumps(value) -> bytes:
    return orjson.dumps(value, default=_default, option=orjson.OPT_UTC_Z)


class EnvelopeRenderer(BaseRenderer):
    media_type = "application/json"
    format = "json"
    charset = None

    def render(self, data, accepted_media_type=None, renderer_context=None):
        response = (renderer_context or {}).get("response")
        if response is not None and response.status_code == 204:
            return b""
        if not (isinstance(data, Envelope) or _is_error(data, response)):
            data = {"success": True, "data": data}
        return dumps(data)


def _is_error(data, response) -> bool:
    return (
        response is not None
        and response.status_code >= 400
        and isinstance(data, dict)
        and data.get("success") is False
    )
