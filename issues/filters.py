"""Every query parameter of the issue lists goes through ``IssueFilter``.

Invalid values fail the form, which the shared filter backend answers with a 400 naming the
parameter.
"""

import re

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Count, Q
from django_filters import rest_framework as filters
from drf_spectacular.utils import extend_schema_field

from accounts.models import User
from collab.api.filters import CachedFormFilterSet, DateTimeFilter, IdFilter, is_id
from collab.api.pagination import PAGING_PARAMS

from .models import Issue, IssueType, Priority, Status


class ChoiceInFilter(filters.BaseInFilter, filters.ChoiceFilter):
    """One value or several, comma-separated (``status=open,in_progress``)."""


# What ``assignee`` takes, stated once for the form and the schema: ``me``, ``none``, a user
# id, or an email address (anything with an ``@``: one no user has matches no issue).
ASSIGNEE_PATTERN = r"^(?:me|none|[1-9][0-9]{0,18}|[^@]+@[^@]+)$"
_ASSIGNEE = re.compile(ASSIGNEE_PATTERN)


class AssigneeField(forms.CharField):
    def __init__(self, **kwargs):
        super().__init__(strip=False, **kwargs)

    def clean(self, value):
        value = super().clean(value)
        if value in (None, "") or _ASSIGNEE.fullmatch(value):
            return value
        raise ValidationError("Use a user id, 'me', 'none' or an email address.", code="invalid")


@extend_schema_field({"type": "string", "pattern": ASSIGNEE_PATTERN})
class AssigneeFilter(filters.Filter):
    field_class = AssigneeField


# What ``mentioned`` takes: ``me`` or a user id.
MENTIONED_PATTERN = r"^(?:me|[1-9][0-9]{0,18})$"
_MENTIONED = re.compile(MENTIONED_PATTERN)


class MentionedField(forms.CharField):
    def __init__(self, **kwargs):
        super().__init__(strip=False, **kwargs)

    def clean(self, value):
        value = super().clean(value)
        if value in (None, "") or _MENTIONED.fullmatch(value):
            return value
        raise ValidationError("Use 'me' or a user id.", code="invalid")


@extend_schema_field({"type": "string", "pattern": MENTIONED_PATTERN})
class MentionedFilter(filters.Filter):
    field_class = MentionedField


class SortFilter(filters.OrderingFilter):
    """``sort``: one field, ``-`` for descending; ties fall back to the newest first."""

    def filter(self, qs, value):
        if not value:
            return qs
        return qs.order_by(*[self.get_ordering_value(param) for param in value], "-id")


class IssueFilter(CachedFormFilterSet):
    status = ChoiceInFilter(
        choices=Status.choices, help_text="One status or several, comma-separated."
    )
    type = ChoiceInFilter(choices=IssueType.choices, help_text="One type or several.")
    priority = ChoiceInFilter(choices=Priority.choices, help_text="One priority or several.")
    assignee = AssigneeFilter(
        method="filter_assignee",
        help_text="A user id, `me`, `none` (unassigned) or an email address.",
    )
    labels = filters.CharFilter(
        method="filter_labels",
        help_text="Label names, comma-separated: issues carrying all of them.",
    )
    q = filters.CharFilter(method="filter_text", help_text="Text in the title or description.")
    mentioned = MentionedFilter(
        method="filter_mentioned",
        help_text="`me` or a user id: issues whose comments mention that person (`@handle`).",
    )
    created_after = DateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = DateTimeFilter(field_name="created_at", lookup_expr="lt")
    updated_after = DateTimeFilter(field_name="updated_at", lookup_expr="gte")
    sort = SortFilter(
        fields=(
            ("created_at", "created_at"),
            ("updated_at", "updated_at"),
            ("number", "number"),
            ("priority_rank", "priority"),
        ),
        help_text="`-created_at` (default), `created_at`, `priority`, `-priority` (most urgent "
        "first), `updated_at`, `-updated_at`, `number`, `-number`.",
    )

    class Meta:
        model = Issue
        fields: list[str] = []

    def filter_assignee(self, queryset, name, value):
        if value == "me":
            return queryset.filter(assignee=self.request.user)
        if value == "none":
            return queryset.filter(assignee__isnull=True)
        if value.isdigit():  # past the ids' range, no one
            return queryset.filter(assignee_id=int(value)) if is_id(value) else queryset.none()
        user_id = User.objects.filter(email=value.lower()).values_list("pk", flat=True).first()
        return queryset.filter(assignee_id=user_id) if user_id else queryset.none()

    def filter_mentioned(self, queryset, name, value):
        user_id = self.request.user.pk if value == "me" else int(value)
        if not is_id(str(user_id)):
            return queryset.none()
        # The comments app keeps its mentions with the issue's id, reached by the relation's
        # name: this floor knows no model above it.
        mentioning = Issue.objects.filter(comment_mentions__user_id=user_id).values("pk")
        return queryset.filter(pk__in=mentioning)

    def filter_labels(self, queryset, name, value):
        names = sorted({part.strip() for part in value.split(",") if part.strip()})
        if not names:
            return queryset
        carrying_all = (
            Issue.labels.through.objects.filter(label__name__in=names)
            .values("issue_id")
            .annotate(matched=Count("label_id", distinct=True))
            .filter(matched=len(names))
            .values("issue_id")
        )
        return queryset.filter(pk__in=carrying_all)

    def filter_text(self, queryset, name, value):
        return queryset.filter(Q(title__icontains=value) | Q(description__icontains=value))


class GlobalIssueFilter(IssueFilter):
    project_id = IdFilter(field_name="project_id")


# Parameters whose totals the per-project, per-status counters answer exactly. ``project_id``
# only where it is a filter: on a project's own list it is an unknown parameter, left alone.
COUNTER_PARAMS = frozenset({"status", "sort"}) | PAGING_PARAMS
GLOBAL_COUNTER_PARAMS = COUNTER_PARAMS | {"project_id"}
