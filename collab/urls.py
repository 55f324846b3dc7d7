from django.contrib import admin
from django.urls import include, path, re_path

from accounts.views import (
    ApiKeyViewSet,
    AuthViewSet,
    InvitationAcceptViewSet,
    RateLimitViewSet,
    UserViewSet,
    WorkspaceViewSet,
)
from analytics.views import (
    IssueReportViewSet,
    ProjectAnalyticsViewSet,
    WorkspaceAnalyticsViewSet,
)
from collab import views
from collab.api.routers import ID_PATTERN, ApiRouter
from gitintegration.views import (
    ProjectRepositoryViewSet,
    PullRequestViewSet,
    PullReviewViewSet,
    RepositoryPullViewSet,
    RepositoryPushViewSet,
    RepositoryViewSet,
)
from issues.views import IssueViewSet, LabelViewSet, ProjectIssueViewSet, ProjectLabelViewSet
from notifications.views import EventViewSet, ProjectWebhookViewSet, WebhookViewSet
from projects.views import ProjectViewSet

router = ApiRouter()
router.register("auth", AuthViewSet, basename="auth")
router.register("api-keys", ApiKeyViewSet, basename="api-key")
router.register("users", UserViewSet, basename="user")
router.register("workspaces", WorkspaceViewSet, basename="workspace")
router.register("invitations", InvitationAcceptViewSet, basename="invitation")
router.register("projects", ProjectViewSet, basename="project")
router.register(
    rf"projects/(?P<project_id>{ID_PATTERN})/issues", ProjectIssueViewSet, "project-issue"
)
router.register(
    rf"projects/(?P<project_id>{ID_PATTERN})/labels", ProjectLabelViewSet, "project-label"
)
router.register("issues", IssueViewSet, basename="issue")
router.register("labels", LabelViewSet, basename="label")
router.register(
    rf"projects/(?P<project_id>{ID_PATTERN})/webhooks", ProjectWebhookViewSet, "project-webhook"
)
router.register("webhooks", WebhookViewSet, basename="webhook")
router.register("events", EventViewSet, basename="event")
# Git integration.
router.register(
    rf"projects/(?P<project_id>{ID_PATTERN})/repositories",
    ProjectRepositoryViewSet,
    "project-repository",
)
router.register("repositories", RepositoryViewSet, basename="repository")
router.register(
    rf"repositories/(?P<repository_id>{ID_PATTERN})/pulls", RepositoryPullViewSet, "repo-pull"
)
router.register(
    rf"repositories/(?P<repository_id>{ID_PATTERN})/push", RepositoryPushViewSet, "repo-push"
)
router.register("pulls", PullRequestViewSet, basename="pull")
router.register(rf"pulls/(?P<pull_id>{ID_PATTERN})/reviews", PullReviewViewSet, "pull-review")

# Analytics: single resources under a project or workspace, not collections.
_project = rf"^v1/projects/(?P<project_id>{ID_PATTERN})"
analytics_urls = [
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
        rf"^v1/workspaces/(?P<workspace_id>{ID_PATTERN})/dashboard$",
        WorkspaceAnalyticsViewSet.as_view({"get": "dashboard"}),
        name="workspace-dashboard",
    ),
]

urlpatterns = [
    *analytics_urls,
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("v1/schema", views.SchemaView.as_view(), name="schema"),
    path("v1/docs", views.DocsView.as_view(url_name="schema"), name="docs"),
    path("v1/rate_limit", RateLimitViewSet.as_view({"get": "retrieve"}), name="rate-limit"),
    path("v1/", include(router.urls)),
    path("admin/", admin.site.urls),
    re_path(r"^(?!admin/|static/).*$", views.not_found),
]

handler404 = "collab.views.not_found"
handler500 = "collab.views.server_error"
