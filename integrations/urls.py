from collab.api.routers import ID_PATTERN, ApiRouter

from .views import ApiKeyViewSet, ServiceAccountViewSet, WorkspaceServiceAccountViewSet

router = ApiRouter()
router.register("api-keys", ApiKeyViewSet, basename="api-key")
router.register(
    rf"workspaces/(?P<workspace_id>{ID_PATTERN})/service-accounts",
    WorkspaceServiceAccountViewSet,
    "workspace-service-account",
)
router.register("service-accounts", ServiceAccountViewSet, basename="service-account")

urlpatterns = router.urls
