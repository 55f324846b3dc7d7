"""A user deleted while a key of theirs is made (docs/guide/envelope-and-errors.md, "Races are
answered like any other input"): no endpoint deletes a person; the admin and the shell do, in a
transaction. The deletion succeeds, the key is made or the request answers 401/404, never a 500,
never an orphan."""

import pytest
from django.db import transaction
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import AccessToken

from accounts.models import ApiKey, User
from tests.conftest import assert_error, assert_ok
from tests.factories import UserFactory
from tests.races import MOMENTS, postgresql_only, race

pytestmark = [postgresql_only, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("moment", MOMENTS)
def test_a_user_deleted_while_a_key_is_made(world, monkeypatch, moment):
    person = UserFactory()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {AccessToken.for_user(person)}")

    def delete():
        with transaction.atomic():
            return User.objects.get(pk=person.pk).delete()

    deleted, written = race(
        monkeypatch,
        delete=delete,
        write=lambda: client.post(
            "/v1/api-keys", {"name": "CI", "scopes": ["projects:read"]}, format="json"
        ),
        moment=moment,
    )

    deleted.result()
    response = written.result()
    if response.status_code in (401, 404):
        assert_error(
            response,
            response.status_code,
            {401: "UNAUTHORIZED", 404: "NOT_FOUND"}[response.status_code],
        )
    else:
        assert_ok(response, 201)
    assert not User.objects.filter(pk=person.pk).exists()
    assert not ApiKey.objects.filter(user_id=person.pk).exists()
