from django_filters import rest_framework as filters

from .exceptions import BadRequest


class FilterBackend(filters.DjangoFilterBackend):
    """django-filter, with invalid filter values answered 400 and the parameter named."""

    def filter_queryset(self, request, queryset, view):
        filterset = self.get_filterset(request, queryset, view)
        if filterset is None:
            return queryset
        if not filterset.is_valid():
            raise BadRequest(
                "Invalid query parameters.",
                details={
                    name: [str(m) for m in messages] for name, messages in filterset.errors.items()
                },
            )
        return filterset.qs
