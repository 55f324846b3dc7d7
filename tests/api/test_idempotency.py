import threading

import pytest
from django.db import connection

from idempotency.models import IdempotencyKey
from projects.models import Project
from tests.conftest import assert_error, assert_ok, client_for


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


@pytest.mark.django_db(transaction=True)
def test_key_still_running_is_409(world, monkeypatch):
    """A second request while the first is really running (its claim not committed yet)."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite serialises the two: the second waits for the first, then replays")
    from projects import services as project_services

    entered, release = threading.Event(), threading.Event()
    create = project_services.project_create

    def slow_create(**kwargs):
        entered.set()
        assert release.wait(10)
        return create(**kwargs)

    monkeypatch.setattr(project_services, "project_create", slow_create)
    first = {}

    def run_first():
        try:
            first["response"] = _post(client_for(world.owner), {"name": "Busy"}, key="busy")
        finally:
            connection.close()

    thread = threading.Thread(target=run_first)
    thread.start()
    assert entered.wait(10)
    second = _post(client_for(world.owner), {"name": "Busy"}, key="busy")
    release.set()
    thread.join(10)
    assert_error(second, 409, "CONFLICT")
    assert_ok(first["response"], 201)
    assert Project.objects.filter(name="Busy").count() == 1
    replay = _post(client_for(world.owner), {"name": "Busy"}, key="busy")
    assert replay.status_code == 201 and replay["Idempotent-Replayed"] == "true"


def test_a_failed_request_leaves_neither_its_work_nor_its_key(api, world, monkeypatch):
    """A 500 (or a server killed mid-request) rolls the claim back with the work: the retry
    runs afresh instead of meeting a key held forever."""
    from projects import services as project_services

    create = project_services.project_create

    def failing_create(**kwargs):
        create(**kwargs)
        raise RuntimeError("the server died after writing")

    monkeypatch.setattr(project_services, "project_create", failing_create)
    api.owner.raise_request_exception = False
    response = _post(api.owner, {"name": "Doomed"}, key="doomed")
    assert response.status_code == 500
    assert not Project.objects.filter(name="Doomed").exists()
    assert not IdempotencyKey.objects.filter(key="doomed").exists()
    monkeypatch.setattr(project_services, "project_create", create)
    assert_ok(_post(api.owner, {"name": "Doomed"}, key="doomed"), 201)
    assert Project.objects.filter(name="Doomed").count() == 1


def test_a_claim_left_without_an_answer_is_taken_over(api, world):
    """A row claimed but never answered (only a server before claims were transactional
    could leave one) does not hold the key."""
    assert_ok(_post(api.owner, {"name": "Left"}, key="left"), 201)
    IdempotencyKey.objects.filter(key="left").update(status_code=None)
    response = _post(api.owner, {"name": "Left"}, key="left")
    assert_ok(response, 201)
    assert "Idempotent-Replayed" not in response


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


@pytest.mark.django_db(transaction=True)
def test_the_requests_own_work_may_wait_for_locks_as_without_a_key(world):
    """The short lock timeout that answers a running duplicate 409 covers the key's insert
    only: a create that waits on its project's number row longer still succeeds."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's lock timeout")
    from django.db import transaction

    from issues.models import Issue, IssueSequence
    from tests.factories import make_issue

    make_issue(world.project, world.owner, title="First")  # the number row exists
    held, release = threading.Event(), threading.Event()

    def hold_the_number_row():
        try:
            with transaction.atomic():
                IssueSequence.objects.select_for_update().get(project=world.project)
                held.set()
                release.wait(10)
        finally:
            connection.close()

    thread = threading.Thread(target=hold_the_number_row)
    thread.start()
    assert held.wait(10)
    threading.Timer(0.8, release.set).start()
    response = client_for(world.owner).post(
        f"/v1/projects/{world.project.pk}/issues",
        {"title": "Waited"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="waits",
    )
    thread.join(10)
    assert_ok(response, 201)
    assert Issue.objects.filter(title="Waited").count() == 1
