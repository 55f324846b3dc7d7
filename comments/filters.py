from django_filters import rest_framework as filters

from collab.api.filters import DateTimeFilter

from .models import Comment


class CommentFilter(filters.FilterSet):
    since = DateTimeFilter(
        field_name="updated_at",
        lookup_expr="gte",
        help_text="Only comments written or edited at or after this time (ISO 8601).",
    )

    class Meta:
        model = Comment
        fields: list[str] = []
