from collab.api.routers import ID_PATTERN, ApiRouter

from .views import EventViewSet, ProjectWebhookViewSet, WebhookViewSet, WorkspaceWebhookViewSet

router = ApiRouter()
router.register(
    rf"projects/(?P<project_id>{ID_PATTERN})/webhooks", ProjectWebhookViewSet, "project-webhook"
)
router.register(
    rf"workspaces/(?P<workspace_id>{ID_PATTERN})/webhooks",
    WorkspaceWebhookViewSet,
    "workspace-webhook",
)
router.register("webhooks", WebhookViewSet, basename="webhook")
router.register("events", EventViewSet, basename="event")

urlpatterns = router.urls
