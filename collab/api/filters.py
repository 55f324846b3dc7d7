import functools
from datetime import UTC
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django_filters import rest_framework as filters
from django_filters.fields import IsoDateTimeField
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from .exceptions import BadRequest
from .routers import MAX_ID


def is_id(value) -> bool:
    """Whether ``value`` is the text of an identifier: digits only, 1 to ``MAX_ID``."""
    return (
        isinstance(value, str)
        and value.isascii()
        and value.isdigit()
        and len(value) <= 19
        and 0 < int(value) <= MAX_ID
    )


class IdField(forms.IntegerField):
    """Digits only, within the ids' range: Django's IntegerField would also take ``1.0`` (and
    NumberFilter ``1.5``), and numbers no column can hold."""

    def to_python(self, value):
        if value not in self.empty_values and not is_id(value):
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


ID_SCHEMA = {"type": "integer", "minimum": 1, "maximum": MAX_ID}


@extend_schema_field(ID_SCHEMA)
class IdFilter(filters.NumberFilter):
    field_class = IdField


class UtcDateTimeField(IsoDateTimeField):
    """An ISO 8601 time, converted to UTC here: databases refuse some offsets (PostgreSQL
    stops at 15:59) and times near the ends of the calendar overflow once shifted."""

    def to_python(self, value):
        parsed = super().to_python(value)
        if parsed is None:
            return parsed
        try:
            return parsed.astimezone(UTC)
        except (OverflowError, ValueError):
            raise ValidationError(self.error_messages["invalid"], code="invalid") from None


@extend_schema_field(OpenApiTypes.DATETIME)
class DateTimeFilter(filters.IsoDateTimeFilter):
    field_class = UtcDateTimeField


class CachedFormFilterSet(filters.FilterSet):
    """A FilterSet that costs a request only the filters it names.

    django-filter builds the form class anew for each request (a form field per filter, each
    label looked up on the model, then a new class), and every instance deep-copies all of its
    filters and form fields, validates every field and applies every filter, given or not:
    together about two milliseconds for a dozen filters, on lists otherwise served in a few.

    Here the form class is built once per class, and ``narrowed(params)`` answers a subclass
    holding only the filters whose parameters the request carries, built once per combination
    and kept. A filter left out is one whose parameter is absent, which would have filtered
    nothing. Only for filtersets whose form fields do not depend on the request (no
    ``ModelChoiceFilter`` with a queryset callable).
    """

    def get_form_class(self):
        cls = type(self)
        form_class = cls.__dict__.get("_form_class")
        if form_class is None:
            form_class = cls._form_class = super().get_form_class()
        return form_class

    @classmethod
    def narrowed(cls, params) -> type["CachedFormFilterSet"]:
        """This filterset with only the filters the query parameters ``params`` name."""
        names = frozenset(name for name in cls.base_filters if _names_filter(params, name))
        if len(names) == len(cls.base_filters):
            return cls
        return _narrowed(cls, names)  # type: ignore[arg-type]  # a class hashes by identity


def _names_filter(params, name: str) -> bool:
    # A filter whose widget has several inputs reads ``<name>_<suffix>`` (``_min``, ``_0``):
    # any parameter starting so keeps it. Keeping one too many only costs time.
    return name in params or any(param.startswith(f"{name}_") for param in params)


@functools.lru_cache(maxsize=1024)
def _narrowed(cls: Any, names: frozenset[str]) -> Any:
    # At most one class per combination of a filterset's filters that requests use, so the
    # cache stays small; the bound keeps made-up combinations from growing it for ever.
    narrowed: Any = type(cls.__name__, (cls,), {"__module__": cls.__module__})
    narrowed.base_filters = {
        name: filter_ for name, filter_ in cls.base_filters.items() if name in names
    }
    return narrowed


class FilterBackend(filters.DjangoFilterBackend):
    """django-filter, with invalid filter values answered 400 and the parameter named.

    An empty value is invalid too, except for free text (a ``CharFilter``: ``q``, ``labels``),
    where it means no filter: ``?status=`` is no status, and django-filter would quietly read
    it as "no filter". The schema says the same: every filter but free text has a
    ``minLength``, a pattern or an enum that leaves the empty value out.
    """

    def get_filterset(self, request, queryset, view):
        filterset_class = self.get_filterset_class(view, queryset)
        if filterset_class is None:
            return None
        if issubclass(filterset_class, CachedFormFilterSet):
            filterset_class = filterset_class.narrowed(request.query_params)
        return filterset_class(**self.get_filterset_kwargs(request, queryset, view))

    def filter_queryset(self, request, queryset, view):
        filterset = self.get_filterset(request, queryset, view)
        if filterset is None:
            return queryset
        errors = {name: [str(m) for m in messages] for name, messages in filterset.errors.items()}
        for name, filter_field in filterset.filters.items():
            if request.query_params.get(name) == "" and not isinstance(
                filter_field, filters.CharFilter
            ):
                errors.setdefault(name, []).append("An empty value is not allowed here.")
        if errors:
            raise BadRequest("Invalid query parameters.", details=errors)
        return filterset.qs
