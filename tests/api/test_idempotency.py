from accounts.models import IdempotencyKey
from projects.models import Project
from tests.conftest import assert_error, assert_ok


def _post(client, body, key="abc-123"):
    return client.post("/v1/projects", body, format="json", HTTP_IDEMPOTENCY_KEY=key)


def test_repeat_replays_first_answer_and_creates_nothing(api, world):
    first = _post(api.owner, {"name": "Once"})
    body = assert_ok(first, 201)
    again = _post(api.owner, {"name": "Once"})
    assert again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again["Location"] == first["Location"]
    assert again.json() == body
    assert Project.objects.filter(name="Once").count() == 1


def test_same_key_with_other_body_is_422(api, world):
    assert_ok(_post(api.owner, {"name": "Once"}), 201)
    assert_error(_post(api.owner, {"name": "Twice"}), 422, "VALIDATION_ERROR")
    assert Project.objects.filter(name="Twice").count() == 0


def test_key_still_running_is_409(api, world):
    assert_ok(_post(api.owner, {"name": "Busy"}, key="busy"), 201)
    # As if the first request had not finished yet.
    IdempotencyKey.objects.filter(key="busy").update(status_code=None)
    assert_error(_post(api.owner, {"name": "Busy"}, key="busy"), 409, "CONFLICT")
    assert Project.objects.filter(name="Busy").count() == 1


def test_expired_key_runs_again(api, world):
    from datetime import timedelta

    from django.utils import timezone

    assert_ok(_post(api.owner, {"name": "Old"}, key="old"), 201)
    IdempotencyKey.objects.filter(key="old").update(created_at=timezone.now() - timedelta(hours=25))
    response = _post(api.owner, {"name": "Old"}, key="old")
    assert_ok(response, 201)
    assert "Idempotent-Replayed" not in response
    assert Project.objects.filter(name="Old").count() == 2


def test_keys_are_per_user(api, world):
    assert_ok(_post(api.owner, {"name": "Mine"}), 201)
    assert_ok(_post(api.developer, {"name": "Mine"}), 201)
    assert Project.objects.filter(name="Mine").count() == 2


def test_validation_errors_replay_too(api, world):
    assert_error(_post(api.owner, {}, key="k2"), 422, "VALIDATION_ERROR")
    again = _post(api.owner, {}, key="k2")
    assert again.status_code == 422
    assert again["Idempotent-Replayed"] == "true"
