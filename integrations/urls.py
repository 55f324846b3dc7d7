from collab.api.routers import ApiRouter

from .views import ApiKeyViewSet

router = ApiRouter()
router.register("api-keys", ApiKeyViewSet, basename="api-key")

urlpatterns = router.urls
