from django import forms
from django.core.exceptions import ValidationError
from django_filters import rest_framework as filters
from drf_spectacular.utils import extend_schema_field

from collab.api.filters import CachedFormFilterSet, IdFilter
from events.catalogue import EVENT_KINDS, TYPES_PATTERN, unknown_patterns
from events.models import Event

from .models import Delivery
from .selectors import types_q


class TypesField(forms.CharField):
    """Comma-separated event kinds; ``issue.*`` selects a family. Exactly ``TYPES_PATTERN``."""

    def __init__(self, **kwargs):
        super().__init__(strip=False, **kwargs)

    def clean(self, value):
        value = super().clean(value)
        if value in (None, ""):
            return value
        patterns = [part.strip(" ") for part in value.split(",") if part.strip(" ")]
        unknown = unknown_patterns(patterns)
        if not patterns or unknown:
            raise ValidationError(
                f"Unknown event kinds: {', '.join(unknown) or value}. See GET /v1/events/kinds.",
                code="invalid",
            )
        return patterns


@extend_schema_field({"type": "string", "pattern": TYPES_PATTERN})
class TypesFilter(filters.Filter):
    field_class = TypesField

    def filter(self, qs, value):
        return qs.filter(types_q(value)) if value else qs


class EventFilter(CachedFormFilterSet):
    project_id = IdFilter(help_text="Only this project's events.")
    types = TypesFilter(help_text="Kinds, comma-separated; `issue.*` selects a family.")
    after_id = IdFilter(field_name="id", lookup_expr="gt", help_text="Only events after this id.")
    sort = filters.OrderingFilter(
        fields=(("id", "id"),), help_text="`-id` (newest first, the default) or `id`."
    )

    class Meta:
        model = Event
        fields: list[str] = []


@extend_schema_field({"type": "string", "enum": list(EVENT_KINDS)})
class EventKindFilter(filters.ChoiceFilter):
    def __init__(self, **kwargs):
        super().__init__(choices=[(kind, kind) for kind in EVENT_KINDS], **kwargs)


class DeliveryFilter(CachedFormFilterSet):
    status = filters.ChoiceFilter(choices=Delivery.Status.choices)
    event_type = EventKindFilter(field_name="event__type")

    class Meta:
        model = Delivery
        fields: list[str] = []
