"""The JSON of exports: shown by ``ExportSerializer`` (one source for the API, the schema and
the events' payloads), built here for the services."""

from typing import Any

from .models import Export
from .serializers import ExportSerializer


def export_record(export: Export) -> dict[str, Any]:
    return dict(ExportSerializer(export).data)
