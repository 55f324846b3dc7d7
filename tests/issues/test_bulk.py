"""Bulk issue writes (docs/guide/bulk-writes.md): ``POST /v1/projects/:id/issues/bulk`` and
``PATCH /v1/issues/bulk``. Each item is answered for itself, in input order; a bad item
does not sink the others unless ``atomic``; each change writes what it would alone (its
history row, its event, the project's counts), and the cost in queries does not grow with
the number of items created."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from events.models import Event
from issues.models import Issue, IssueHistory, IssueStatusCount
from projects.models import Project
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import ProjectFactory, make_issue

BULK_UPDATE = "/v1/issues/bulk"


def bulk_create_url(project) -> str:
    return f"/v1/projects/{getattr(project, 'pk', project)}/issues/bulk"


def fingerprint(project) -> tuple[int, int, int, list]:
    """What a refused bulk request must leave as it was."""
    return (
        Issue.objects.filter(project=project).count(),
        IssueHistory.objects.filter(issue__project=project).count(),
        Event.objects.filter(project_id=project.pk).count(),
        sorted(IssueStatusCount.objects.filter(project=project).values_list("status", "count")),
    )


def test_each_item_is_answered_for_itself_in_input_order(api, world):
    items = [
        {"title": "First", "labels": ["bug", "ui"], "priority": "high"},
        {"description": "no title"},
        {"title": "Third", "priority": "someday"},
        {"title": "Fourth", "assignee_id": world.outsider.pk},
        {"title": "Fifth", "status": "closed", "assignee_id": world.developer.pk},
    ]
    body = assert_ok(
        api.owner.post(bulk_create_url(world.project), {"items": items}, format="json")
    )
    results = body["data"]
    assert [result["index"] for result in results] == [0, 1, 2, 3, 4]
    assert [result["status"] for result in results] == [201, 422, 422, 422, 201]
    first, no_title, bad_priority, outsider, fifth = results
    assert first["error"] is None and fifth["error"] is None
    assert no_title["data"] is None
    assert no_title["error"]["code"] == "VALIDATION_ERROR"
    assert "title" in no_title["error"]["details"]
    assert "priority" in bad_priority["error"]["details"]
    assert "assignee_id" in outsider["error"]["details"]
    # The written ones are real issues, numbered in input order, read back as they were answered.
    assert first["data"]["labels"] == ["bug", "ui"]
    assert fifth["data"]["status"] == "closed" and fifth["data"]["closed_at"]
    assert fifth["data"]["number"] == first["data"]["number"] + 1
    for result in (first, fifth):
        read = assert_ok(api.owner.get(f"/v1/issues/{result['data']['id']}"))["data"]
        assert read == result["data"]
    assert Issue.objects.filter(project=world.project).count() == 2


def test_each_created_issue_has_its_history_row_event_and_count(api, world):
    items = [{"title": f"Issue {n}", "labels": ["triage"]} for n in range(3)]
    items.append({"title": "Done already", "status": "closed"})
    results = assert_ok(
        api.developer.post(bulk_create_url(world.project), {"items": items}, format="json")
    )["data"]
    ids = [result["data"]["id"] for result in results]
    history = IssueHistory.objects.filter(issue_id__in=ids)
    assert sorted(history.values_list("issue_id", "field")) == [(pk, "created") for pk in ids]
    events = Event.objects.filter(type="issue.created", project_id=world.project.pk).order_by("pk")
    assert [event.data["issue"] for event in events] == [result["data"] for result in results]
    assert {event.actor_id for event in events} == {world.developer.pk}
    counts = dict(
        IssueStatusCount.objects.filter(project=world.project).values_list("status", "count")
    )
    assert counts.get("open") == 3 and counts.get("closed") == 1
    listed = assert_ok(api.owner.get(f"/v1/projects/{world.project.pk}/issues?status=open"))
    assert listed["meta"]["total"] == 3


def test_atomic_is_all_or_nothing(api, world):
    make_issue(world.project, world.owner, title="Before")
    before = fingerprint(world.project)
    items = [{"title": "Fine"}, {"title": "Fine too"}, {"title": ""}]
    error = assert_error(
        api.owner.post(
            bulk_create_url(world.project), {"items": items, "atomic": True}, format="json"
        ),
        422,
        "VALIDATION_ERROR",
    )
    assert error["details"]["index"] == 2
    assert "title" in error["details"]
    assert fingerprint(world.project) == before
    # Atomic and all good: every item is written.
    results = assert_ok(
        api.owner.post(
            bulk_create_url(world.project), {"items": items[:2], "atomic": True}, format="json"
        )
    )["data"]
    assert [result["status"] for result in results] == [201, 201]


def test_an_atomic_request_refused_for_an_assignee_writes_nothing(api, world):
    before = fingerprint(world.project)
    items = [{"title": "Fine"}, {"title": "Theirs", "assignee_id": world.outsider.pk}]
    error = assert_error(
        api.owner.post(
            bulk_create_url(world.project), {"items": items, "atomic": True}, format="json"
        ),
        422,
        "VALIDATION_ERROR",
    )
    assert error["details"]["index"] == 1
    assert fingerprint(world.project) == before


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"items": []},
        {"items": [{"title": "x"}] * 101},
        {"items": "not a list"},
        {"items": [{"title": "x"}, "not an object"]},
        {"items": [{"title": "x"}], "atomic": "perhaps"},
    ],
    ids=["missing", "empty", "over-100", "not-a-list", "non-object-item", "atomic-not-bool"],
)
def test_a_malformed_bulk_request_is_refused_whole(api, world, body):
    before = fingerprint(world.project)
    error = assert_error(
        api.owner.post(bulk_create_url(world.project), body, format="json"),
        422,
        "VALIDATION_ERROR",
    )
    assert error["details"]
    assert fingerprint(world.project) == before
    assert_error(api.owner.patch(BULK_UPDATE, body, format="json"), 422, "VALIDATION_ERROR")


def test_a_hundred_items_are_accepted(api, world):
    items = [{"title": f"Issue {n}"} for n in range(100)]
    results = assert_ok(
        api.owner.post(bulk_create_url(world.project), {"items": items}, format="json")
    )["data"]
    assert [result["status"] for result in results] == [201] * 100
    numbers = [result["data"]["number"] for result in results]
    assert numbers == list(range(numbers[0], numbers[0] + 100))


def test_who_may_create_in_bulk(api, world):
    body = {"items": [{"title": "Mine"}]}
    assert_error(
        api.viewer.post(bulk_create_url(world.project), body, format="json"), 403, "FORBIDDEN"
    )
    assert_error(
        api.outsider.post(bulk_create_url(world.project), body, format="json"), 404, "NOT_FOUND"
    )
    assert_error(
        api.anonymous.post(bulk_create_url(world.project), body, format="json"), 401, "UNAUTHORIZED"
    )
    assert_error(api.owner.post(bulk_create_url(987654), body, format="json"), 404, "NOT_FOUND")
    archived = ProjectFactory(
        workspace=world.acme, name="Old", created_by=world.owner, status=Project.Status.ARCHIVED
    )
    assert_error(api.owner.post(bulk_create_url(archived), body, format="json"), 409, "CONFLICT")
    assert not Issue.objects.exists()


def test_bulk_create_costs_the_same_queries_for_5_items_as_for_50(api, world):
    def cost(count: int) -> int:
        items = [{"title": f"Issue {n}", "labels": ["a", "b"]} for n in range(count)]
        with CaptureQueriesContext(connection) as captured:
            assert_ok(
                api.owner.post(bulk_create_url(world.project), {"items": items}, format="json")
            )
        return len([q for q in captured.captured_queries if "ratelimit" not in q["sql"]])

    cost(1)  # the labels exist from here on
    assert cost(50) == cost(5)


def test_a_replayed_bulk_create_writes_once(api, world):
    body = {"items": [{"title": "Once"}, {"title": "Twice?"}]}
    first = api.owner.post(
        bulk_create_url(world.project), body, format="json", HTTP_IDEMPOTENCY_KEY="bulk-1"
    )
    again = api.owner.post(
        bulk_create_url(world.project), body, format="json", HTTP_IDEMPOTENCY_KEY="bulk-1"
    )
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    assert Issue.objects.filter(project=world.project).count() == 2


@pytest.fixture
def three(world):
    return [make_issue(world.project, world.owner, title=f"Issue {n}") for n in range(3)]


def test_bulk_update_answers_each_item(api, world, three):
    theirs = make_issue(world.other_project, world.outsider, title="Theirs")
    items = [
        {"id": three[0].pk, "status": "in_progress", "labels": ["doing"]},
        {"id": three[1].pk, "priority": "whenever"},
        {"id": 987654, "status": "closed"},
        {"id": theirs.pk, "status": "closed"},
        {"status": "closed"},
        {"id": three[2].pk, "assignee_id": world.developer.pk, "type": "bug"},
    ]
    results = assert_ok(api.owner.patch(BULK_UPDATE, {"items": items}, format="json"))["data"]
    assert [result["status"] for result in results] == [200, 422, 404, 404, 422, 200]
    assert results[2]["error"]["code"] == results[3]["error"]["code"] == "NOT_FOUND"
    assert "id" in results[4]["error"]["details"]
    assert results[0]["data"]["status"] == "in_progress"
    assert results[0]["data"]["labels"] == ["doing"]
    assert results[5]["data"]["assignee_id"] == world.developer.pk
    for result in (results[0], results[5]):
        read = assert_ok(api.owner.get(f"/v1/issues/{result['data']['id']}"))["data"]
        assert read == result["data"]
    theirs.refresh_from_db()
    assert theirs.status == "open"
    three[1].refresh_from_db()
    assert three[1].priority == "medium"
    # One event per change, with what changed, as a single PATCH would record.
    updated = Event.objects.filter(type="issue.updated").order_by("pk")
    assert [event.data["issue"]["id"] for event in updated] == [three[0].pk, three[2].pk]
    assert set(updated[0].changes) == {"status", "labels"}
    assert set(updated[1].changes) == {"assignee_id", "type"}


def test_bulk_update_atomic_changes_nothing_when_an_item_fails(api, world, three):
    before = fingerprint(world.project)
    items = [
        {"id": three[0].pk, "status": "closed"},
        {"id": three[1].pk, "status": "closed"},
        {"id": 987654, "status": "closed"},
    ]
    error = assert_error(
        api.owner.patch(BULK_UPDATE, {"items": items, "atomic": True}, format="json"),
        404,
        "NOT_FOUND",
    )
    assert error["details"]["index"] == 2
    assert fingerprint(world.project) == before
    assert set(Issue.objects.values_list("status", flat=True)) == {"open"}


def test_bulk_update_checks_each_issue_s_project(api, world, three):
    archived = ProjectFactory(workspace=world.acme, name="Old", created_by=world.owner)
    old = make_issue(archived, world.owner, title="Old")
    Project.objects.filter(pk=archived.pk).update(status=Project.Status.ARCHIVED)
    items = [{"id": three[0].pk, "status": "closed"}, {"id": old.pk, "status": "closed"}]
    results = assert_ok(api.owner.patch(BULK_UPDATE, {"items": items}, format="json"))["data"]
    assert [result["status"] for result in results] == [200, 409]
    assert results[1]["error"]["code"] == "CONFLICT"
    # A viewer may read the issues and change none of them.
    viewed = assert_ok(api.viewer.patch(BULK_UPDATE, {"items": items[:1]}, format="json"))["data"]
    assert viewed[0]["status"] == 403 and viewed[0]["error"]["code"] == "FORBIDDEN"
    old.refresh_from_db()
    assert old.status == "open"


@pytest.mark.parametrize(
    ("persona", "item_status"),
    [("owner", 200), ("admin", 200), ("developer", 200), ("viewer", 403), ("outsider", 404)],
)
def test_bulk_update_answers_each_persona_s_access_per_item(world, persona, item_status):
    issue = make_issue(world.project, world.owner, title="Shared")
    client = client_for(getattr(world, persona))
    body = {"items": [{"id": issue.pk, "status": "closed"}]}
    result = assert_ok(client.patch(BULK_UPDATE, body, format="json"))["data"][0]
    assert result["status"] == item_status
    issue.refresh_from_db()
    assert issue.status == ("closed" if item_status == 200 else "open")
    if persona == "viewer":
        assert result["error"]["details"] == {"role": "viewer", "required_ability": "write"}
    if persona == "outsider":
        assert result["error"]["details"] == {}
        assert "Shared" not in str(result)


def test_bulk_update_needs_credentials_and_the_write_scope(world):
    issue = make_issue(world.project, world.owner, title="Shared")
    body = {"items": [{"id": issue.pk, "status": "closed"}]}
    assert_error(client_for().patch(BULK_UPDATE, body, format="json"), 401, "UNAUTHORIZED")
    reader = client_for(world.owner, ["issues:read"])
    error = assert_error(reader.patch(BULK_UPDATE, body, format="json"), 403, "FORBIDDEN")
    assert error["details"] == {"required_scope": "issues:write"}
    issue.refresh_from_db()
    assert issue.status == "open"
