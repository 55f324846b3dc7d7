"""Issue reports streamed as CSV or JSON: rows are read ``chunk_size`` at a time with a
server-side cursor (on PostgreSQL) and written out as they come, so a report of a million
issues holds one chunk in memory, not the whole result."""

import csv
from collections.abc import Iterable, Iterator
from datetime import datetime

from django.db.models import QuerySet

from collab.api.renderers import dumps, iso_z
from issues.records import ISSUE_FIELDS, issue_attach_labels

CSV_COLUMNS = (*ISSUE_FIELDS, "labels")
# A cell starting with one of these is a formula to a spreadsheet (CSV injection).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def report_rows(queryset: QuerySet, *, chunk_size: int) -> Iterator[list[dict]]:
    """The issues of ``queryset`` with their labels, chunk by chunk (one label query each)."""
    chunk: list[dict] = []
    for row in queryset.values(*ISSUE_FIELDS).iterator(chunk_size=chunk_size):
        chunk.append(row)
        if len(chunk) >= chunk_size:
            yield issue_attach_labels(chunk)
            chunk = []
    if chunk:
        yield issue_attach_labels(chunk)


class _Line:
    """What ``csv.writer`` writes to: it hands back the line instead of storing it."""

    def write(self, value: str) -> str:
        return value


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return iso_z(value)
    if isinstance(value, list):
        value = ";".join(value)
    text = str(value)
    if text.startswith(_FORMULA_STARTS):
        return "'" + text
    return text


def csv_stream(chunks: Iterable[list[dict]]) -> Iterator[bytes]:
    writer = csv.writer(_Line())
    yield writer.writerow(CSV_COLUMNS).encode()
    for chunk in chunks:
        yield "".join(
            writer.writerow([_cell(row[column]) for column in CSV_COLUMNS]) for row in chunk
        ).encode()


def json_stream(chunks: Iterable[list[dict]]) -> Iterator[bytes]:
    """The success envelope, ``data`` written one chunk at a time and ``meta.count`` last."""
    yield b'{"success":true,"data":['
    count = 0
    for chunk in chunks:
        body = b",".join(dumps(row) for row in chunk)
        yield (b"," if count else b"") + body
        count += len(chunk)
    yield b'],"meta":' + dumps({"count": count}) + b"}"
