from collab.api.routers import ApiRouter

from .views import ProjectViewSet, WorkspaceViewSet

router = ApiRouter()
router.register("workspaces", WorkspaceViewSet, basename="workspace")
router.register("projects", ProjectViewSet, basename="project")

urlpatterns = router.urls
