from collections.abc import Callable
from functools import partial
from typing import Any

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import action

from collab.api import bulk
from collab.api.exceptions import EXPECTED_ERRORS, ValidationFailed
from collab.api.viewsets import ApiViewSet
from collab.db import fulltext
from projects.selectors import ProjectLookup
from projects.viewsets import ProjectAccessViewSet, ProjectScopedViewSet

from . import records, selectors, services
from .filters import (
    COUNTER_PARAMS,
    GLOBAL_COUNTER_PARAMS,
    GlobalIssueFilter,
    IssueFilter,
    highlights_attach,
    kept_filter,
    wants_highlights,
)
from .models import Issue, Label
from .serializers import (
    BulkRequestSerializer,
    IssueBulkCreateSerializer,
    IssueBulkResultSerializer,
    IssueBulkUpdateItemSerializer,
    IssueBulkUpdateSerializer,
    IssueHistorySerializer,
    IssueInputSerializer,
    IssueSerializer,
    LabelInputSerializer,
    LabelSerializer,
)


class IssueListMixin(ApiViewSet):
    """The list path: django-filter for the query, ``.values()`` rows for the output, and the
    kept counters for the total whenever they answer it exactly: the per-status ones when only
    status is filtered, the per-value ones (``issues.facets``) for one more filter."""

    counter_params: frozenset[str] = COUNTER_PARAMS

    def list_response(
        self, queryset, *, kept_count: Callable[[list[str]], int], project_ids: Callable[[], Any]
    ):
        """``kept_count(statuses)``: the exact total from the counters, for these statuses
        (all of them when empty), used when only counter parameters are given;
        ``project_ids()``: the projects listed, for the per-value counters."""
        params = self.request.query_params
        queryset = self.filter_queryset(queryset).values(*records.ISSUE_FIELDS)
        self.page_counter = partial(self._count, kept_count=kept_count, project_ids=project_ids)
        page = self.paginate_queryset(queryset) or []
        if wants_highlights(params):
            highlights_attach(page, params)
        return self.get_paginated_response(records.issue_attach_labels(page))

    def _count(self, queryset, *, kept_count, project_ids) -> int:
        params = self.request.query_params
        statuses = [status for status in params.get("status", "").split(",") if status]
        others = set(params) - self.counter_params
        if not others:
            return kept_count(statuses)
        if others == {"q"}:
            total = selectors.issue_search_total(
                text=params["q"], project_ids=project_ids(), statuses=statuses
            )
            return fulltext.count(queryset) if total is None else total
        kept = kept_filter(params, others, user=self.request.user)
        if kept is None:
            return fulltext.count(queryset)
        return selectors.issue_kept_total(project_ids=project_ids(), statuses=statuses, kept=kept)


class ProjectIssueViewSet(IssueListMixin, ProjectScopedViewSet):
    """``/v1/projects/:project_id/issues``."""

    scope_group = "issues"
    queryset = Issue.objects.none()
    filterset_class = IssueFilter
    # The list's total comes from the counters, read in the project's own query.
    project_lookup = ProjectLookup(annotations=selectors.project_issue_counts())

    @extend_schema(responses={200: IssueSerializer(many=True)})
    def list(self, request, project_id=None):
        project = self.get_project()
        return self.list_response(
            selectors.issue_list(user=request.user, project=project),
            kept_count=lambda statuses: selectors.project_issue_count(project, statuses=statuses),
            project_ids=lambda: [project.pk],
        )

    @extend_schema(request=IssueInputSerializer, responses={201: IssueSerializer})
    def create(self, request, project_id=None):
        project = self.get_project()
        data = self.validated(IssueInputSerializer)
        issue = services.issue_create(project=project, actor=request.user, **data)
        return self.created(issue.record, f"/v1/issues/{issue.pk}")

    @extend_schema(
        request=IssueBulkCreateSerializer,
        responses={200: IssueBulkResultSerializer(many=True)},
        filters=False,
    )
    @action(
        detail=False,
        methods=["post"],
        url_path="bulk",
        filterset_class=None,
        pagination_class=None,
    )
    def bulk(self, request, project_id=None):
        """Up to 100 issues at once: each item answered for itself, in input order (a bad
        item does not sink the others unless ``atomic``)."""
        project = self.get_project()
        body = self.validated(BulkRequestSerializer)
        items, results = [], []
        checked = self.validated_items(IssueInputSerializer, body["items"])
        for index, fields in enumerate(checked):
            if isinstance(fields, ValidationFailed):
                results.append(bulk.failure(index, fields))
            else:
                items.append((index, fields))
        if body["atomic"]:
            bulk.raise_first(results)
        results += services.issue_create_many(
            project=project, actor=self.actor, items=items, atomic=body["atomic"]
        )
        return self.ok(sorted(results, key=lambda result: result["index"]))


class IssueViewSet(IssueListMixin, ProjectAccessViewSet):
    """``/v1/issues`` across every visible project, and single issues."""

    scope_group = "issues"
    queryset = Issue.objects.none()
    filterset_class = GlobalIssueFilter
    counter_params = GLOBAL_COUNTER_PARAMS

    def _project_ids(self):
        project_ids = selectors.visible_projects(user=self.actor)
        if self.request.query_params.get("project_id"):
            project_ids = project_ids.filter(pk=int(self.request.query_params["project_id"]))
        return project_ids

    def _kept(self, statuses: list[str]) -> int:
        return selectors.issue_count(project_ids=self._project_ids(), statuses=statuses)

    @extend_schema(responses={200: IssueSerializer(many=True)})
    def list(self, request):
        return self.list_response(
            selectors.issue_list(user=request.user),
            kept_count=self._kept,
            project_ids=self._project_ids,
        )

    def get_issue(self, pk) -> Issue:
        issue = selectors.issue_get(user=self.actor, issue_id=pk)
        if issue is None:
            raise Http404
        self.check_project_ability(issue.project, self.required_ability())
        return issue

    @extend_schema(responses={200: IssueSerializer})
    def retrieve(self, request, pk=None):
        return self.ok(records.issue_record(self.get_issue(pk)))

    @extend_schema(request=IssueInputSerializer, responses={200: IssueSerializer})
    def update(self, request, pk=None):
        return self._update(pk, partial=False)

    @extend_schema(request=IssueInputSerializer, responses={200: IssueSerializer})
    def partial_update(self, request, pk=None):
        return self._update(pk, partial=True)

    def _update(self, pk, *, partial: bool):
        # Read, checked and changed under one lock: a query fewer than get_issue() first.
        with services.issue_locked(issue_id=pk, reader=self.actor) as locked:
            if locked is None:
                raise Http404
            self.check_project_ability(locked.issue.project, self.required_ability())
            data = self.validated(IssueInputSerializer, partial=partial)
            _issue, record = services.issue_update(issue=locked, actor=self.actor, **data)
        return self.ok(record)

    @extend_schema(responses={200: None})
    def destroy(self, request, pk=None):
        services.issue_delete(issue=self.get_issue(pk), actor=request.user)
        return self.deleted()

    @extend_schema(
        request=IssueBulkUpdateSerializer,
        responses={200: IssueBulkResultSerializer(many=True)},
        filters=False,
    )
    @action(
        detail=False,
        methods=["patch"],
        url_path="bulk",
        filterset_class=None,
        pagination_class=None,
    )
    def bulk(self, request):
        """Up to 100 issues changed at once, each item ``{"id", ...fields}`` answered for
        itself, in input order: one history row and one event per change, as alone."""
        body = self.validated(BulkRequestSerializer)
        items, results = [], []
        checked = self.validated_items(IssueBulkUpdateItemSerializer, body["items"], partial=True)
        for index, fields in enumerate(checked):
            try:
                if isinstance(fields, ValidationFailed):
                    raise fields
                if "id" not in fields:
                    raise ValidationFailed.field("id", "This field is required.")
                issue = self.get_issue(fields.pop("id"))
                items.append((index, (issue, fields)))
            except EXPECTED_ERRORS as exc:
                results.append(bulk.failure(index, exc))
        if body["atomic"]:
            bulk.raise_first(results)
        results += services.issue_update_many(actor=self.actor, items=items, atomic=body["atomic"])
        return self.ok(sorted(results, key=lambda result: result["index"]))

    @extend_schema(responses={200: IssueHistorySerializer(many=True)}, filters=False)
    @action(detail=True, methods=["get"], filterset_class=None)
    def history(self, request, pk=None):
        issue = self.get_issue(pk)
        return self.paginated(selectors.issue_history(issue=issue), IssueHistorySerializer)


class ProjectLabelViewSet(ProjectScopedViewSet):
    """``/v1/projects/:project_id/labels``."""

    scope_group = "issues"
    queryset = Label.objects.none()

    @extend_schema(responses={200: LabelSerializer(many=True)})
    def list(self, request, project_id=None):
        project = self.get_project()
        return self.paginated(selectors.label_list(project=project), LabelSerializer)

    @extend_schema(request=LabelInputSerializer, responses={201: LabelSerializer})
    def create(self, request, project_id=None):
        project = self.get_project()
        data = self.validated(LabelInputSerializer)
        label = services.label_create(project=project, actor=request.user, **data)
        return self.created(LabelSerializer(label).data, f"/v1/labels/{label.pk}")


class LabelViewSet(ProjectAccessViewSet):
    """``/v1/labels/:id``: one label."""

    scope_group = "issues"
    queryset = Label.objects.none()

    def get_label(self, pk) -> Label:
        label = selectors.label_get(user=self.actor, label_id=pk)
        if label is None:
            raise Http404
        self.check_project_ability(label.project, self.required_ability())
        return label

    @extend_schema(responses={200: LabelSerializer})
    def retrieve(self, request, pk=None):
        return self.ok(LabelSerializer(self.get_label(pk)).data)

    @extend_schema(request=LabelInputSerializer, responses={200: LabelSerializer})
    def update(self, request, pk=None):
        return self._update(pk, partial=False)

    @extend_schema(request=LabelInputSerializer, responses={200: LabelSerializer})
    def partial_update(self, request, pk=None):
        return self._update(pk, partial=True)

    def _update(self, pk, *, partial: bool):
        label = self.get_label(pk)
        data = self.validated(LabelInputSerializer, partial=partial)
        label = services.label_update(label=label, actor=self.actor, **data)
        return self.ok(LabelSerializer(label).data)

    @extend_schema(responses={200: None})
    def destroy(self, request, pk=None):
        services.label_delete(label=self.get_label(pk), actor=request.user)
        return self.deleted()
