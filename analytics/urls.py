from django.urls import re_path

from collab.api.routers import ID_PATTERN

from .views import IssueReportViewSet, ProjectAnalyticsViewSet, WorkspaceAnalyticsViewSet

# Analytics: single resources under a project or workspace, not collections.
_project = rf"^projects/(?P<project_id>{ID_PATTERN})"
urlpatterns = [
    re_path(
        rf"{_project}/metrics$",
        ProjectAnalyticsViewSet.as_view({"get": "metrics"}),
        name="project-metrics",
    ),
    re_path(
        rf"{_project}/dashboard$",
        ProjectAnalyticsViewSet.as_view({"get": "dashboard"}),
        name="project-dashboard",
    ),
    re_path(
        rf"{_project}/reports/issues$",
        IssueReportViewSet.as_view({"get": "issues"}),
        name="project-report-issues",
    ),
    re_path(
        rf"^workspaces/(?P<workspace_id>{ID_PATTERN})/dashboard$",
        WorkspaceAnalyticsViewSet.as_view({"get": "dashboard"}),
        name="workspace-dashboard",
    ),
]
