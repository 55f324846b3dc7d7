from collab.api.routers import ID_PATTERN, ApiRouter

from .views import CommentViewSet, IssueCommentViewSet, PullCommentViewSet

router = ApiRouter()
router.register(
    rf"issues/(?P<issue_id>{ID_PATTERN})/comments", IssueCommentViewSet, "issue-comment"
)
router.register(rf"pulls/(?P<pull_id>{ID_PATTERN})/comments", PullCommentViewSet, "pull-comment")
router.register("comments", CommentViewSet, basename="comment")

urlpatterns = router.urls
