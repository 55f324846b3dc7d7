"""The plumbing learns route facts from the views: a view declares its rate limit (as DRF's
``throttle_scope``) or that it streams, and the limiter and the ASGI door read it from its
route. A view the plumbing has never heard of is treated as it declares."""

import pytest
from django.urls import include, path
from rest_framework.permissions import AllowAny
from rest_framework.test import APIClient

from collab.api.ratelimit import SIGN_IN, OwnBudget
from collab.api.viewsets import ApiViewSet
from collab.asgi import ASYNC_PATHS
from tests.conftest import assert_error, assert_ok


class ProbeViewSet(ApiViewSet):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    rate_limit = OwnBudget(
        counter="probe",
        argument="thing",
        limit_setting="RATE_LIMIT_PUSH",
        what="this thing's probes",
    )

    def create(self, request, thing):
        return self.ok({"thing": thing})

    def tail(self, request, thing):
        return self.ok({"thing": thing})


class KnockViewSet(ApiViewSet):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    rate_limit = SIGN_IN

    def create(self, request):
        return self.ok({})


urlpatterns = [
    path("v1/things/<int:thing>/probe", ProbeViewSet.as_view({"post": "create"})),
    # As an ``@action(..., streams=True)`` declares it, for this route alone.
    path("v1/things/<int:thing>/tail", ProbeViewSet.as_view({"get": "tail"}, streams=True)),
    path("v1/knock", KnockViewSet.as_view({"post": "create"})),
    path("", include("collab.urls")),
]


@pytest.mark.urls(__name__)
def test_a_view_with_a_budget_of_its_own_is_counted_per_argument(backend, settings):
    settings.RATE_LIMIT_PUSH = 4
    client = APIClient()
    for _ in range(4):
        response = client.post("/v1/things/7/probe")
        assert_ok(response)
        assert response["X-RateLimit-Limit"] == "4"
    error = assert_error(client.post("/v1/things/7/probe"), 429, "RATE_LIMITED")
    assert "this thing's probes" in error["message"]
    # Another value of the argument has a budget of its own; the address's (3) is untouched.
    assert assert_ok(client.post("/v1/things/8/probe"))["data"] == {"thing": 8}
    assert client.get("/v1/projects")["X-RateLimit-Remaining"] == "2"


@pytest.mark.urls(__name__)
def test_a_view_declared_sign_in_is_free_without_credentials(backend):
    client = APIClient()
    for _ in range(5):  # more than the anonymous budget (3)
        response = client.post("/v1/knock")
        assert_ok(response)
        assert response["X-RateLimit-Used"] == "0"
    assert client.get("/v1/projects")["X-RateLimit-Remaining"] == "2"


@pytest.mark.urls(__name__)
def test_the_asgi_door_takes_the_routes_that_declare_they_stream():
    assert "/v1/things/7/tail" in ASYNC_PATHS
    assert "/v1/things/7/probe" not in ASYNC_PATHS
    assert "/v1/events/stream" in ASYNC_PATHS
    assert "/v1/events" not in ASYNC_PATHS
    assert "/v1/events/stream/more" not in ASYNC_PATHS
