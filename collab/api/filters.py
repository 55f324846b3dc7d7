from datetime import UTC

from django import forms
from django.core.exceptions import ValidationError
from django_filters import rest_framework as filters
from django_filters.fields import IsoDateTimeField
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from .exceptions import BadRequest


class IdField(forms.IntegerField):
    """Digits only: Django's IntegerField would also take ``1.0`` (and NumberFilter ``1.5``)."""

    def to_python(self, value):
        if value not in self.empty_values and not (
            isinstance(value, str) and value.isascii() and value.isdigit()
        ):
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


@extend_schema_field(OpenApiTypes.INT)
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
    """A FilterSet whose form class is built once per class instead of on every request.

    django-filter builds it anew for each request (a form field per filter, each label looked
    up on the model, then a new class): about a millisecond for a dozen filters, on lists that
    are otherwise served in a few. Only for filtersets whose form fields do not depend on the
    request (no ``ModelChoiceFilter`` with a queryset callable).
    """

    def get_form_class(self):
        cls = type(self)
        form_class = cls.__dict__.get("_form_class")
        if form_class is None:
            form_class = cls._form_class = super().get_form_class()
        return form_class


class FilterBackend(filters.DjangoFilterBackend):
    """django-filter, with invalid filter values answered 400 and the parameter named.

    An empty value is invalid too, except for free text: ``?status=`` is no status, and
    django-filter would quietly read it as "no filter".
    """

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
