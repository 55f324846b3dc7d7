"""Every query parameter of the issue lists goes through ``IssueFilter``.

Invalid values fail the form, which the shared filter backend answers with a 400 naming the
parameter.
"""

import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Exists, OuterRef
from django_filters import rest_framework as filters
from drf_spectacular.utils import extend_schema_field

from accounts.models import User
from collab.api.filters import (
    CachedFormFilterSet,
    DateTimeFilter,
    IdFilter,
    UtcDateTimeField,
    is_id,
)
from collab.api.pagination import PAGING_PARAMS
from collab.db import fulltext

from .models import Issue, IssueType, Priority, Status
from .selectors import KeptFilter


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


RELEVANCE = "relevance"


class SortFilter(filters.OrderingFilter):
    """``sort``: fields, ``-`` for descending; ties fall back to the newest first.
    ``relevance``: the best match of the filterset's ``q`` first (nothing without ``q``)."""

    def build_choices(self, fields, labels):
        return [*super().build_choices(fields, labels), (RELEVANCE, "Relevance")]

    def filter(self, qs, value):
        terms = [self.ordering_term(param, qs) for param in value or []]
        terms = [term for term in terms if term is not None]
        if not terms:
            return qs
        return qs.order_by(*fulltext.tie_broken(terms, "-id"))

    def ordering_term(self, param, qs):
        """``qs``: the rows filtered so far (``sort`` comes last): relevance ranks only the
        newest of them (``fulltext.CandidateScore``)."""
        if param == RELEVANCE:
            return fulltext.best_first(self.parent.data.get("q", ""), among=qs)
        return self.get_ordering_value(param)


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
    q = filters.CharFilter(
        method="filter_text",
        help_text="Full-text search of the title and description: words (`login`), "
        '`"phrases"`, prefixes (`auth*`) and exclusions (`-flaky`); every term must match, '
        "and English words match their other forms (`fails` finds `failing`).",
    )
    highlight = filters.ChoiceFilter(
        choices=[("true", "true"), ("false", "false")],
        method="filter_highlight",
        help_text="`true`: with `q`, each issue carries `highlights`, its title and the best "
        "passage of its description as HTML, the matched words in `<mark>`.",
    )
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
        "first), `updated_at`, `-updated_at`, `number`, `-number`; `relevance` (best match "
        "first) with `q`, the default order without it.",
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
        # One EXISTS per name: the database walks the list in its order and checks each
        # issue's links by index, never gathering every issue that carries a label.
        links = Issue.labels.through.objects.filter(issue_id=OuterRef("pk"))
        for name in names:
            queryset = queryset.filter(Exists(links.filter(label__name=name)))
        return queryset

    def filter_text(self, queryset, name, value):
        return fulltext.search(queryset, value)

    def filter_highlight(self, queryset, name, value):
        return queryset  # what it asks for is added to the rows (``highlight_values``)


def wants_highlights(params) -> bool:
    """Whether the (already validated) query parameters ask for ``highlights``."""
    return params.get("highlight") == "true"


def highlight_values(params) -> dict[str, fulltext.Highlight]:
    """What ``highlight=true&q=...`` adds to each row of a list's ``.values()``: the title and
    the best passage of the description with the matches marked (see ``highlights``)."""
    query = fulltext.parse(params.get("q", ""))
    if not wants_highlights(params) or not query:
        return {}
    return {
        "_marked_title": fulltext.Highlight(query, "title"),
        "_marked_description": fulltext.Highlight(query, "description", snippet=True),
    }


def highlights_attach(rows: list[dict], params) -> None:
    """``highlights`` on each row of a page, read for these rows alone in one query: in the
    ranked query SQLite could mark every match before the page is cut (seconds for ``a*``
    over 5,000 issues)."""
    marks = highlight_values(params)
    marked: dict[int, dict[str, Any]] = {}
    if rows and marks:
        found: Any = Issue.objects.filter(pk__in=[row["id"] for row in rows]).order_by()
        for values in found.values("id", **marks):
            marked[values["id"]] = {name: values[name] for name in marks}
    for row in rows:
        row.update(marked.get(row["id"], {}))
        row["highlights"] = highlights(row)


def highlights(row: dict) -> dict[str, str] | None:
    """Takes the marked texts ``highlight_values`` added off ``row``, as the record's
    ``highlights``: escaped HTML with the matches in ``<mark>`` (None without a query)."""
    if "_marked_title" not in row:
        return None
    return {
        "title": fulltext.marked_html(row.pop("_marked_title")),
        "description": fulltext.marked_html(row.pop("_marked_description")),
    }


class GlobalIssueFilter(IssueFilter):
    project_id = IdFilter(field_name="project_id")


# Parameters whose totals the per-project, per-status counters answer exactly. ``project_id``
# only where it is a filter: on a project's own list it is an unknown parameter, left alone.
COUNTER_PARAMS = frozenset({"status", "sort", "highlight"}) | PAGING_PARAMS
GLOBAL_COUNTER_PARAMS = COUNTER_PARAMS | {"project_id"}


# The filters whose totals the per-value counters answer (``selectors.issue_kept_total``):
# one of these alone (with the counter parameters), or the time filters of one field. ``q``
# alone has its own (``selectors.issue_search_total``).
VALUE_FILTERS = {"type": "type", "priority": "priority", "assignee": "assignee"}
TIME_FILTERS = {
    "created_after": ("created", "start"),
    "created_before": ("created", "end"),
    "updated_after": ("updated", "start"),
}


def kept_filter(params, names: set[str], *, user) -> KeptFilter | None:
    """The counters' view of the filters ``names`` of (already validated) ``params``; None
    when the counters cannot answer them (the rows are counted then)."""
    if len(names) == 1 and (name := next(iter(names))) in (*VALUE_FILTERS, "labels"):
        value = params[name]
        if name == "labels":
            labels = {part.strip() for part in value.split(",") if part.strip()}
            return KeptFilter("label", label_name=labels.pop()) if len(labels) == 1 else None
        if name != "assignee":
            return KeptFilter(name, values=tuple(value.split(",")))
        if value == "me":
            return KeptFilter("assignee", values=(str(user.pk),))
        if value == "none":
            return KeptFilter("assignee", values=("",))
        if not value.isdigit():
            found = User.objects.filter(email=value.lower()).values_list("pk", flat=True).first()
            value = str(found or "")
            if not value:
                return KeptFilter("assignee", values=())
        return KeptFilter("assignee", values=(value,) if is_id(value) else ())
    if names and names <= TIME_FILTERS.keys():
        fields = {TIME_FILTERS[name][0] for name in names}
        if len(fields) != 1:
            return None
        bounds = {TIME_FILTERS[name][1]: UtcDateTimeField().clean(params[name]) for name in names}
        return KeptFilter(fields.pop(), **bounds)
    return None
