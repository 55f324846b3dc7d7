"""Handles: every user has a unique one, derived from the email at creation and changeable;
shown in user records."""

import pytest

from accounts.handles import handle_base, mentioned_handles
from accounts.models import User
from accounts.services import user_create
from tests.conftest import assert_error, assert_ok
from tests.factories import UserFactory


@pytest.mark.parametrize(
    ("email", "handle"),
    [
        ("dana@example.com", "dana"),
        ("Dana.Smith+work@example.com", "dana-smith"),
        ("o'brien@example.com", "o-brien"),
        ("__x__@example.com", "x"),
        ("!!!@example.com", "user"),
        ("é@example.com", "user"),
        (f"{'a' * 60}@example.com", "a" * 31),
    ],
)
def test_a_handle_is_derived_from_the_email(email, handle):
    assert handle_base(email) == handle


def test_mentions_in_text():
    text = "@Dana, ask @bob_ and @carol-; not me@example.com nor @@eve, (@frank) @dana again"
    assert mentioned_handles(text) == ["dana", "bob", "carol", "frank"]


def test_new_users_get_free_handles(db):
    first, _ = user_create(email="sam@a.test", password=None)
    second, _ = user_create(email="sam@b.test", password=None)
    third = UserFactory(email="SAM@c.test")
    assert [first.handle, second.handle, third.handle] == ["sam", "sam-2", "sam-3"]
    assert User.objects.filter(handle__startswith="sam").count() == 3


def test_records_show_the_handle(api, world):
    me = assert_ok(api.developer.get("/v1/users/me"))["data"]
    assert me["handle"] == "dev"
    members = assert_ok(api.owner.get("/v1/users"))["data"]
    assert {m["email"]: m["handle"] for m in members}["viewer@acme.test"] == "viewer"
    one = assert_ok(api.owner.get(f"/v1/users/{world.developer.pk}"))["data"]
    assert one["handle"] == "dev"
    # The members' text search finds a handle too.
    found = assert_ok(api.owner.get("/v1/users", {"q": "vie"}))["data"]
    assert [m["handle"] for m in found] == ["viewer"]


def test_a_user_changes_their_handle_and_name(api, world):
    data = assert_ok(
        api.developer.patch("/v1/users/me", {"handle": "Dana-Dev", "name": "Dana"}, format="json")
    )["data"]
    assert data["handle"] == "dana-dev" and data["name"] == "Dana"
    world.developer.refresh_from_db()
    assert (world.developer.handle, world.developer.name) == ("dana-dev", "Dana")
    # Only what is sent changes.
    data = assert_ok(api.developer.patch("/v1/users/me", {"name": "D."}, format="json"))["data"]
    assert data["handle"] == "dana-dev"


@pytest.mark.parametrize(
    "handle",
    ["", "-dana", "dana-", "da na", "dana!", "a" * 40, "dana.smith", "é", 12, None],
)
def test_a_malformed_handle_is_refused(api, world, handle):
    error = assert_error(
        api.developer.patch("/v1/users/me", {"handle": handle}, format="json"),
        422,
        "VALIDATION_ERROR",
    )
    assert "handle" in error["details"]
    world.developer.refresh_from_db()
    assert world.developer.handle == "dev"


def test_a_taken_handle_is_refused(api, world):
    error = assert_error(
        api.developer.patch("/v1/users/me", {"handle": "OWNER"}, format="json"),
        422,
        "VALIDATION_ERROR",
    )
    assert error["details"]["handle"] == ["This handle is taken."]
    # Keeping one's own is no conflict.
    assert_ok(api.developer.patch("/v1/users/me", {"handle": "dev"}, format="json"))


def test_changing_a_handle_needs_users_write(world):
    from tests.conftest import client_for

    reader = client_for(world.developer, scopes=["users:read"])
    error = assert_error(
        reader.patch("/v1/users/me", {"handle": "x"}, format="json"), 403, "FORBIDDEN"
    )
    assert error["details"]["required_scope"] == "users:write"
