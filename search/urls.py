from collab.api.routers import ApiRouter

from .views import SearchViewSet

router = ApiRouter()
router.register("search", SearchViewSet, basename="search")

urlpatterns = router.urls
