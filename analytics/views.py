from datetime import datetime

from django.conf import settings
from django.http import Http404, StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.negotiation import DefaultContentNegotiation

from accounts.roles import require_ability
from collab.api.exceptions import BadRequest
from collab.api.permissions import READ
from collab.api.viewsets import ApiViewSet
from issues import selectors as issue_selectors
from issues.filters import IssueFilter
from issues.models import Issue
from issues.serializers import IssueSerializer
from projects.selectors import ProjectLookup
from projects.viewsets import ProjectScopedViewSet

from . import selectors
from .periods import PERIOD_PATTERN, period_parse
from .reports import csv_stream, json_stream, report_rows
from .serializers import DashboardSerializer, MetricsSerializer, WorkspaceDashboardSerializer

PERIOD = OpenApiParameter(
    "period",
    str,
    pattern=PERIOD_PATTERN,
    description="A number and a unit `h`, `d`, `w`, `m` (months) or `y` (`30d`, `12w`), or "
    "`all`; default `30d`. `h` covers whole UTC hours ending with the current one (`12h`: this "
    "hour and the 11 before); the other units whole UTC days ending today (`30d`: today and "
    "the 29 days before).",
)
FORMAT = OpenApiParameter(
    "format", str, enum=["csv", "json"], description="`csv` (default) or `json`."
)


def _period(request, now: datetime):
    return period_parse(request.query_params.get("period"), now=now)


class ProjectAnalyticsViewSet(ProjectScopedViewSet):
    """A project's metrics and dashboard data, read from the daily rollups."""

    scope_group = "projects"
    # What the figures need to know of the project first comes with its row.
    project_lookup = ProjectLookup(annotations=selectors.FACTS)

    @extend_schema(parameters=[PERIOD], responses={200: MetricsSerializer}, filters=False)
    def metrics(self, request, project_id=None):
        """Issue, commit and pull request figures over a period (docs/guide/analytics.md)."""
        project = self.get_project()
        period = _period(request, timezone.now())
        return self.ok(selectors.metrics(projects=[project], period=period))

    @extend_schema(parameters=[PERIOD], responses={200: DashboardSerializer}, filters=False)
    def dashboard(self, request, project_id=None):
        """Daily series for charts over the period, and issue breakdowns."""
        project = self.get_project()
        period = _period(request, timezone.now())
        return self.ok(selectors.dashboard(projects=[project], period=period))


class WorkspaceAnalyticsViewSet(ApiViewSet):
    """The dashboard data of every project of a workspace the caller may see, summed."""

    scope_group = "projects"

    @extend_schema(
        parameters=[PERIOD], responses={200: WorkspaceDashboardSerializer}, filters=False
    )
    def dashboard(self, request, workspace_id=None):
        """Daily series and breakdowns over the workspace's projects visible to the caller."""
        projects = selectors.workspace_projects(user=request.user, workspace_id=int(workspace_id))
        if projects is None:
            raise Http404
        require_ability(request.user, int(workspace_id), READ)
        period = _period(request, timezone.now())
        data = selectors.dashboard(projects=projects, period=period)
        return self.ok({**data, "project_ids": [project.pk for project in projects]})


class IgnoreFormatParameter(DefaultContentNegotiation):
    """``format`` names the report's format here, not one of DRF's renderers: answers that
    are not the stream (errors) are the JSON envelope."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class IssueReportViewSet(ProjectScopedViewSet):
    """``/v1/projects/:project_id/reports/issues``."""

    scope_group = "projects"
    queryset = Issue.objects.none()
    filterset_class = IssueFilter
    content_negotiation_class = IgnoreFormatParameter
    pagination_class = None

    @extend_schema(
        parameters=[FORMAT],
        responses={
            (200, "application/json"): OpenApiResponse(
                IssueSerializer(many=True),
                description="The issues, with `meta.count` (their number) after them.",
            ),
            (200, "text/csv"): OpenApiResponse(
                OpenApiTypes.STR,
                description="A header line, then one line per issue (labels joined by `;`).",
            ),
        },
        filters=True,
    )
    def issues(self, request, project_id=None):
        """Every issue matching the issue list's filters, streamed as CSV or JSON (the JSON
        envelope carries ``meta.count`` at the end instead of pages)."""
        project = self.get_project()
        report_format = request.query_params.get("format", "csv")
        if report_format not in ("csv", "json"):
            raise BadRequest("Invalid query parameters.", details={"format": ["Use csv or json."]})
        # Filters are checked here, before the first byte: a bad one is still a JSON 400.
        queryset = self.filter_queryset(
            issue_selectors.issue_list(user=request.user, project=project)
        )
        chunks = report_rows(queryset, chunk_size=settings.ANALYTICS_REPORT_CHUNK_SIZE)
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        if report_format == "csv":
            response = StreamingHttpResponse(csv_stream(chunks), content_type="text/csv")
            response["Content-Disposition"] = (
                f'attachment; filename="project-{project.pk}-issues-{stamp}.csv"'
            )
        else:
            response = StreamingHttpResponse(json_stream(chunks), content_type="application/json")
        return response
