from collab.api.routers import ID_PATTERN, ApiRouter

from .views import IssueViewSet, LabelViewSet, ProjectIssueViewSet, ProjectLabelViewSet

router = ApiRouter()
router.register(
    rf"projects/(?P<project_id>{ID_PATTERN})/issues", ProjectIssueViewSet, "project-issue"
)
router.register(
    rf"projects/(?P<project_id>{ID_PATTERN})/labels", ProjectLabelViewSet, "project-label"
)
router.register("issues", IssueViewSet, basename="issue")
router.register("labels", LabelViewSet, basename="label")

urlpatterns = router.urls
