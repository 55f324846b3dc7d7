from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiYamlRenderer
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from accounts.views import (
    ApiKeyViewSet,
    AuthViewSet,
    InvitationAcceptViewSet,
    RateLimitViewSet,
    UserViewSet,
    WorkspaceViewSet,
)
from collab import views
from collab.api.routers import ID_PATTERN, ApiRouter
from issues.views import IssueViewSet, LabelViewSet, ProjectIssueViewSet, ProjectLabelViewSet
from projects.views import ProjectViewSet


class SchemaView(SpectacularAPIView):
    """The OpenAPI document, JSON unless YAML is asked for (``?format=yaml``)."""

    renderer_classes = [OpenApiJsonRenderer, OpenApiYamlRenderer]


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

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("v1/schema", SchemaView.as_view(), name="schema"),
    path("v1/docs", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("v1/rate_limit", RateLimitViewSet.as_view({"get": "retrieve"}), name="rate-limit"),
    path("v1/", include(router.urls)),
    path("admin/", admin.site.urls),
    re_path(r"^(?!admin/|static/).*$", views.not_found),
]

handler404 = "collab.views.not_found"
handler500 = "collab.views.server_error"
