from django_filters import rest_framework as filters

from collab.api.filters import CachedFormFilterSet

from .models import PullRequest


class ChoiceInFilter(filters.BaseInFilter, filters.ChoiceFilter):
    """One value or several, comma-separated (``state=open,merged``)."""


class PullRequestFilter(CachedFormFilterSet):
    state = ChoiceInFilter(
        choices=PullRequest.State.choices, help_text="One state or several, comma-separated."
    )

    class Meta:
        model = PullRequest
        fields = ["state"]
