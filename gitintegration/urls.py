from collab.api.routers import ID_PATTERN, ApiRouter

from .views import (
    ProjectRepositoryViewSet,
    PullRequestViewSet,
    PullReviewViewSet,
    RepositoryPullViewSet,
    RepositoryPushViewSet,
    RepositoryViewSet,
)

router = ApiRouter()
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

urlpatterns = router.urls
