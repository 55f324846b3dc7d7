from collab.api.routers import ID_PATTERN, ApiRouter

from .views import (
    ApiKeyViewSet,
    AuthorizationViewSet,
    OAuthAppViewSet,
    ServiceAccountViewSet,
    WorkspaceAuditLogViewSet,
    WorkspaceOAuthAppViewSet,
    WorkspaceServiceAccountViewSet,
)

router = ApiRouter()
router.register("api-keys", ApiKeyViewSet, basename="api-key")
router.register(
    rf"workspaces/(?P<workspace_id>{ID_PATTERN})/service-accounts",
    WorkspaceServiceAccountViewSet,
    "workspace-service-account",
)
router.register("service-accounts", ServiceAccountViewSet, basename="service-account")
router.register(
    rf"workspaces/(?P<workspace_id>{ID_PATTERN})/oauth-apps",
    WorkspaceOAuthAppViewSet,
    "workspace-oauth-app",
)
router.register("oauth-apps", OAuthAppViewSet, basename="oauth-app")
router.register(
    rf"workspaces/(?P<workspace_id>{ID_PATTERN})/audit-log",
    WorkspaceAuditLogViewSet,
    "workspace-audit-log",
)
router.register("users/me/authorizations", AuthorizationViewSet, basename="authorization")

urlpatterns = router.urls
