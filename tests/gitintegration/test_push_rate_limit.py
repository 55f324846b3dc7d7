"""Push notifications count against their repository, not against the sender's address: a
git server shared by many repositories is not held to the small anonymous budget."""

import pytest
from rest_framework.test import APIClient

from tests.conftest import assert_error
from tests.gitintegration.test_repositories import sign
from tests.ratelimit.conftest import backend  # noqa: F401 - the fixture, on each store


@pytest.mark.parametrize("signed", [True, False])
def test_each_repository_has_its_own_push_budget(backend, settings, synced, signed):  # noqa: F811
    settings.RATE_LIMIT_PUSH = 4
    client = APIClient()
    signature = sign(synced.webhook_secret, b"{}") if signed else "sha256=0"
    path = f"/v1/repositories/{synced.pk}/push"
    statuses = []
    for _ in range(4):
        response = client.generic(
            "POST",
            path,
            b"{}",
            content_type="application/json",
            HTTP_X_HUB_SIGNATURE_256=signature,
        )
        statuses.append(response.status_code)
        assert response["X-RateLimit-Limit"] == "4"
    assert statuses == [202 if signed else 401] * 4
    refused = client.generic(
        "POST", path, b"{}", content_type="application/json", HTTP_X_HUB_SIGNATURE_256=signature
    )
    error = assert_error(refused, 429, "RATE_LIMITED")
    assert "push notifications" in error["message"]
    # The address's own budget (3 in these tests) was not spent by the pushes.
    assert client.get("/v1/projects")["X-RateLimit-Remaining"] == "2"
    # Another repository's budget is its own.
    other = client.generic(
        "POST", f"/v1/repositories/{synced.pk + 1}/push", b"{}", content_type="application/json"
    )
    assert_error(other, 401, "UNAUTHORIZED")
