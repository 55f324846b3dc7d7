from datetime import UTC, datetime
from typing import cast

from django.conf import settings
from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny
from rest_framework.request import Request

from collab.api.exceptions import NotFound
from collab.api.filters import ID_SCHEMA
from collab.api.pagination import positive_int_param
from collab.api.ratelimit import (
    SIGN_IN,
    STATUS,
    account_identity,
    client_address,
    rate_limit_peek,
)
from collab.api.viewsets import ApiViewSet

from . import selectors, services
from .filters import UserFilter
from .models import Membership, User
from .serializers import (
    InvitationAcceptSerializer,
    LoginSerializer,
    MeSerializer,
    MeUpdateSerializer,
    RateLimitSerializer,
    RefreshSerializer,
    TokenPairSerializer,
    UserSerializer,
)

BAD_LOGIN = OpenApiResponse(description="Wrong email or password, or an inactive account.")
BAD_REFRESH = OpenApiResponse(description="The refresh token is invalid, expired or used.")
TOO_MANY_FAILED_LOGINS = OpenApiResponse(
    description="Too many failed sign-ins for this email or from this address: slowed down, "
    "then refused for a while. `Retry-After` says when to try again."
)
LOGOUT_OTHER_ACCOUNT = OpenApiResponse(
    description="`refresh_token` is missing, or it is another account's than the access token "
    "sent; nothing is revoked."
)
WORKSPACE_ID = OpenApiParameter(
    "workspace_id",
    ID_SCHEMA,
    description="The workspace whose members to read; by default the caller's first.",
)


def signed_in(request: Request) -> User:
    """The request's user, where authentication let no anonymous request this far."""
    return cast(User, request.user)


class AuthViewSet(ApiViewSet):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    rate_limit = SIGN_IN

    @extend_schema(
        request=LoginSerializer,
        responses={200: TokenPairSerializer, 401: BAD_LOGIN, 429: TOO_MANY_FAILED_LOGINS},
    )
    @action(detail=False, methods=["post"])
    def login(self, request):
        data = self.validated(LoginSerializer)
        return self.ok(
            services.auth_login(
                email=data["email"],
                password=data["password"],
                client_address=client_address(request),
            )
        )

    @extend_schema(
        request=RefreshSerializer, responses={200: TokenPairSerializer, 401: BAD_REFRESH}
    )
    @action(detail=False, methods=["post"])
    def refresh(self, request):
        data = self.validated(RefreshSerializer)
        return self.ok(services.auth_refresh(refresh_token=data["refresh_token"]))

    @extend_schema(
        request=RefreshSerializer,
        responses={200: None, 401: BAD_REFRESH, 422: LOGOUT_OTHER_ACCOUNT},
        description="Ends the session of `refresh_token`: the refresh token, the access tokens "
        "issued from it, and the access token sent as `Authorization: Bearer`, if any.",
    )
    @action(detail=False, methods=["post"])
    def logout(self, request):
        data = self.validated(RefreshSerializer)
        # This endpoint authenticates nobody (an expired access token must not stop a logout);
        # the service reads the bearer token only to end it.
        scheme, _, credential = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        services.auth_logout(
            refresh_token=data["refresh_token"],
            access_token=credential.strip() if scheme.lower() == "bearer" else None,
        )
        return self.ok(None)


class RateLimitViewSet(ApiViewSet):
    """The caller's rate limit: tier, limit and the current window. Reading it is free: it
    does not count against the limit. The same figures come on every response as
    `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Used` and `X-RateLimit-Reset`."""

    serializer_class = RateLimitSerializer
    rate_limit = STATUS

    @extend_schema(responses={200: RateLimitSerializer})
    def retrieve(self, request):
        identity = account_identity(request.user)
        # The middleware has read the window already (without counting); read it here when
        # the limiter is switched off.
        usage = getattr(request, "rate_limit", None) or rate_limit_peek(identity)
        window = settings.RATE_LIMIT_WINDOW_SECONDS
        data = {"tier": identity.tier, "limit": identity.limit, "window_seconds": window}
        data.update(
            remaining=usage.remaining if usage else None,
            used=usage.used if usage else None,
            reset=usage.reset if usage else None,
            reset_at=datetime.fromtimestamp(usage.reset, UTC) if usage else None,
        )
        return self.ok(RateLimitSerializer(data).data)


class UserViewSet(ApiViewSet):
    """Members of one workspace (``workspace_id``, by default the caller's first)."""

    scope_group = "users"
    serializer_class = UserSerializer
    filterset_class = UserFilter

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema generator has no user
            return Membership.objects.none()
        return selectors.member_list(workspace_id=self._workspace_id())

    def _workspace_id(self) -> int:
        if "workspace_id" in self.request.query_params:
            raw = positive_int_param(self.request, "workspace_id", 0)
            workspace = selectors.workspace_get(user=signed_in(self.request), workspace_id=raw)
            if workspace is None:
                raise NotFound("No such workspace.")
            return workspace.pk
        return selectors.default_workspace_id(user=signed_in(self.request)) or 0

    @extend_schema(
        parameters=[WORKSPACE_ID],
        responses={
            200: UserSerializer(many=True),
            404: OpenApiResponse(description="No such workspace among the caller's."),
        },
    )
    def list(self, request):
        return self.paginated(self.filter_queryset(self.get_queryset()), UserSerializer)

    @extend_schema(
        parameters=[WORKSPACE_ID, OpenApiParameter("id", ID_SCHEMA, OpenApiParameter.PATH)],
        description="A member of the workspace, by user id.",
    )
    def retrieve(self, request, pk=None):
        membership = self.get_queryset().filter(user_id=pk).first()
        if membership is None:
            raise Http404
        return self.ok(UserSerializer(membership).data)

    @extend_schema(responses={200: MeSerializer})
    @action(detail=False, methods=["get"], url_path="me")
    def me(self, request):
        return self.ok(MeSerializer(request.user).data)

    @extend_schema(request=MeUpdateSerializer, responses={200: MeSerializer})
    @me.mapping.patch
    def me_update(self, request):
        """Change your own name or handle (the `@handle` others mention you by)."""
        data = self.validated(MeUpdateSerializer, partial=True)
        user = services.user_update(user=signed_in(request), **data)
        return self.ok(MeSerializer(user).data)


class InvitationAcceptViewSet(ApiViewSet):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    rate_limit = SIGN_IN

    @extend_schema(
        request=InvitationAcceptSerializer,
        responses={
            200: MeSerializer,
            404: OpenApiResponse(description="No invitation matches this token."),
            409: OpenApiResponse(description="The invitation is accepted, revoked or expired."),
        },
    )
    @action(detail=False, methods=["post"])
    def accept(self, request):
        data = self.validated(InvitationAcceptSerializer)
        user = services.invitation_accept(
            token=data["token"], name=data["name"], password=data["password"]
        )
        return self.ok(MeSerializer(user).data)
