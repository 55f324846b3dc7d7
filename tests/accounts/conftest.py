import pytest

from accounts import token_denylist
from accounts.models import DeniedToken


@pytest.fixture(params=["database", "redis"])
def backend(request, settings, db):
    """Runs the test once on each denylist store (the database always keeps the record)."""
    if request.param == "redis" and not settings.REDIS_URL:
        pytest.skip("needs REDIS_URL (CI runs it with Redis)")
    settings.TOKEN_DENYLIST_BACKEND = request.param
    denylist = token_denylist.store()
    yield request.param
    if request.param == "redis":
        for entry in DeniedToken.objects.values_list("key", flat=True):
            denylist.client.delete(f"{token_denylist.REDIS_KEY_PREFIX}{entry}")
