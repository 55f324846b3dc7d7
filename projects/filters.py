from django.db.models import Q
from django_filters import rest_framework as filters

from collab.api.filters import IdFilter

from .models import Project


class ProjectFilter(filters.FilterSet):
    status = filters.ChoiceFilter(choices=Project.Status.choices)
    visibility = filters.ChoiceFilter(choices=Project.Visibility.choices)
    workspace_id = IdFilter(field_name="workspace_id")
    q = filters.CharFilter(method="filter_text", help_text="Text in the name or description.")

    class Meta:
        model = Project
        fields = ["status", "visibility", "workspace_id"]

    def filter_text(self, queryset, name, value):
        return queryset.filter(Q(name__icontains=value) | Q(description__icontains=value))
