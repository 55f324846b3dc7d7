"""Refresh-token reuse: a rotated refresh token presented again after the grace period ends
its whole session; within it, it is only refused (a retry, or two tabs refreshing at once)."""

import logging
import time
from datetime import timedelta

from django.db.models import F
from django.utils import timezone
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken
from rest_framework_simplejwt.tokens import RefreshToken

from accounts.models import DeniedToken
from tests.accounts.test_auth import assert_unauthorized, bearer, login
from tests.accounts.test_logout import logout, redis_expiry, refresh, session_of
from tests.conftest import assert_ok

ME = "/v1/users/me"


def spent_long_ago(tokens: dict, seconds: float) -> None:
    """Move the rotation of ``tokens``' refresh token ``seconds`` into the past."""
    jti = RefreshToken(tokens["refresh_token"], verify=False)["jti"]
    spent = BlacklistedToken.objects.filter(token__jti=jti)
    assert spent.update(blacklisted_at=F("blacklisted_at") - timedelta(seconds=seconds)) == 1


def test_a_replay_after_the_grace_ends_the_whole_session(backend, world, settings, caplog):
    settings.JWT_REFRESH_REUSE_GRACE_SECONDS = 10
    first = assert_ok(login("dev@acme.test"))["data"]
    second = assert_ok(refresh(first))["data"]
    third = assert_ok(refresh(second))["data"]
    other_session = assert_ok(login("dev@acme.test"))["data"]
    spent_long_ago(first, 11)

    with caplog.at_level(logging.WARNING, logger="collab.auth"):
        assert_unauthorized(refresh(first))

    # Every refresh token descended from the login is refused, and every access token of the
    # session, the newest included.
    assert_unauthorized(refresh(third))
    for tokens in (first, second, third):
        assert_unauthorized(bearer(tokens["access_token"]).get(ME))
    assert DeniedToken.objects.filter(key=f"sid:{session_of(third['access_token'])}").exists()
    # The user's other sign-ins go on.
    assert_ok(bearer(other_session["access_token"]).get(ME))
    assert_ok(refresh(other_session))
    # The event is logged, never the token.
    warnings = [r for r in caplog.records if "reuse" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING
    for tokens in (first, second, third):
        for token in tokens.values():
            assert str(token) not in caplog.text


def test_a_replay_within_the_grace_is_refused_and_ends_nothing(backend, world, settings, caplog):
    settings.JWT_REFRESH_REUSE_GRACE_SECONDS = 10
    first = assert_ok(login("dev@acme.test"))["data"]
    second = assert_ok(refresh(first))["data"]
    spent_long_ago(first, 9)

    with caplog.at_level(logging.WARNING, logger="collab.auth"):
        assert_unauthorized(refresh(first))

    assert not DeniedToken.objects.exists()
    assert_ok(bearer(second["access_token"]).get(ME))
    third = assert_ok(refresh(second))["data"]
    assert_ok(bearer(third["access_token"]).get(ME))
    assert "reuse" not in caplog.text


def test_the_end_of_a_replayed_session_outlasts_its_refresh_tokens(backend, world):
    first = assert_ok(login("dev@acme.test"))["data"]
    second = assert_ok(refresh(first))["data"]
    spent_long_ago(first, 60)
    assert_unauthorized(refresh(first))
    key = f"sid:{session_of(second['access_token'])}"

    # The newest token is refused without being spent.
    assert_unauthorized(refresh(second))
    jti = RefreshToken(second["refresh_token"], verify=False)["jti"]
    assert not BlacklistedToken.objects.filter(token__jti=jti).exists()
    # A logout (whose end need outlast only access tokens) does not shorten it.
    assert_ok(logout(second))
    ends_in = DeniedToken.objects.get(key=key).expires_at - timezone.now()
    assert ends_in > timedelta(days=6, hours=23)
    if backend == "redis":
        assert redis_expiry(key) > time.time() + 6 * 86400
