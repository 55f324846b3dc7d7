"""The query parameters of ``/v1/search``."""

from django_filters import rest_framework as filters
from drf_spectacular.utils import extend_schema_field

from collab.api.filters import CachedFormFilterSet, IdFilter
from collab.db import fulltext
from issues.filters import SortFilter

from .models import HitType, SearchHit


@extend_schema_field({"type": "string", "minLength": 1, "pattern": r"\S"})
class QueryFilter(filters.CharFilter):
    """Text with at least one character that is not a space."""


class TypeInFilter(filters.BaseInFilter, filters.ChoiceFilter):
    """One kind or several, comma-separated (``type=issue,comment``)."""


class SearchFilter(CachedFormFilterSet):
    q = QueryFilter(
        method="filter_text",
        required=True,
        help_text='What to find: words (`login`), `"phrases"`, prefixes (`auth*`) and '
        "exclusions (`-flaky`); every term must match, and English words match their other "
        "forms (`fails` finds `failing`). Required.",
    )
    type = TypeInFilter(
        choices=HitType.choices,
        help_text="Only these kinds, comma-separated: `issue`, `pull_request`, `comment`.",
    )
    # Both narrow the hits before these filters run (search.selectors.search_projects, with
    # who may see which project): here they are checked, and documented.
    project_id = IdFilter(method="narrowed_already", help_text="Only this project's.")
    workspace_id = IdFilter(
        method="narrowed_already", help_text="Only the projects of this workspace."
    )
    sort = SortFilter(
        fields=(("created_at", "created_at"),),
        help_text="`relevance` (default: best match first), `created_at`, `-created_at`.",
    )

    class Meta:
        model = SearchHit
        fields: list[str] = []

    def filter_text(self, queryset, name, value):
        return fulltext.search(queryset, value)

    def narrowed_already(self, queryset, name, value):
        return queryset

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset)
        if "sort" not in self.data:  # the best match first, unless asked otherwise
            best = fulltext.best_first(self.data.get("q", ""), among=queryset)
            if best is not None:
                queryset = queryset.order_by(*fulltext.tie_broken([best], "-id"))
        return queryset
