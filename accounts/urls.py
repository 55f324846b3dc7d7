from django.urls import path

from collab.api.routers import ApiRouter

from .views import (
    AuthViewSet,
    InvitationAcceptViewSet,
    RateLimitViewSet,
    UserViewSet,
)

router = ApiRouter()
router.register("auth", AuthViewSet, basename="auth")
router.register("users", UserViewSet, basename="user")
router.register("invitations", InvitationAcceptViewSet, basename="invitation")

urlpatterns = [
    path("rate_limit", RateLimitViewSet.as_view({"get": "retrieve"}), name="rate-limit"),
    *router.urls,
]
