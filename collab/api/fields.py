"""Serializer fields of the API's own."""

from typing import Any

from rest_framework import serializers


class EmptyAsNullCharField(serializers.CharField):
    """An output text the server fills in, kept as "" in its row while absent: the API shows
    absent values as null, never "" (CONTRACT section 9), and the schema says it is nullable."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["allow_null"] = True
        super().__init__(**kwargs)

    def to_representation(self, value: Any) -> str | None:  # type: ignore[override]  # null is the point
        return super().to_representation(value) if value else None
