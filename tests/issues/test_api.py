"""Issues and labels through the API (docs/guide/issues.md): status, the whole
envelope, the database afterwards, the history rows and the event each change records."""

import re
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC

import pytest
from django.db.models import Count

from accounts.models import ApiKey, Role, User
from collab.api.scopes import ALL_SCOPES, expand
from events.models import Event
from issues import selectors, services
from issues.models import Issue, IssueHistory, IssueStatusCount, Label
from issues.urls import router
from issues.views import IssueViewSet, LabelViewSet, ProjectIssueViewSet, ProjectLabelViewSet
from projects.models import Project
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import (
    MembershipFactory,
    ProjectFactory,
    ProjectMemberFactory,
    UserFactory,
    make_issue,
)

META_KEYS = {
    "total",
    "page",
    "per_page",
    "current_page",
    "total_pages",
    "total_count",
    "next_cursor",
}
RECORD_KEYS = {
    "id",
    "project_id",
    "number",
    "title",
    "description",
    "type",
    "priority",
    "status",
    "assignee_id",
    "reporter_id",
    "labels",
    "created_at",
    "updated_at",
    "closed_at",
    "comment_count",
}


def z(value) -> str | None:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z") if value else None


def issues_url(project) -> str:
    return f"/v1/projects/{getattr(project, 'pk', project)}/issues"


def labels_url(project) -> str:
    return f"/v1/projects/{getattr(project, 'pk', project)}/labels"


def issue_url(issue, suffix: str = "") -> str:
    return f"/v1/issues/{getattr(issue, 'pk', issue)}{suffix}"


def label_url(label) -> str:
    return f"/v1/labels/{getattr(label, 'pk', label)}"


def stored(issue) -> dict:
    """The issue as the database holds it, in the shape of the API's record."""
    issue = Issue.objects.get(pk=getattr(issue, "pk", issue))
    return {
        "id": issue.pk,
        "project_id": issue.project_id,
        "number": issue.number,
        "title": issue.title,
        "description": issue.description,
        "type": issue.type,
        "priority": issue.priority,
        "status": issue.status,
        "assignee_id": issue.assignee_id,
        "reporter_id": issue.reporter_id,
        "labels": sorted(issue.labels.values_list("name", flat=True)),
        "created_at": z(issue.created_at),
        "updated_at": z(issue.updated_at),
        "closed_at": z(issue.closed_at),
        "comment_count": issue.comment_count,
    }


def events(*types: str) -> list[Event]:
    queryset = Event.objects.filter(type__startswith="issue.").order_by("id")
    return list(queryset.filter(type__in=types) if types else queryset)


def history(issue) -> list[tuple]:
    return list(
        IssueHistory.objects.filter(issue_id=getattr(issue, "pk", issue))
        .order_by("id")
        .values_list("field", "old_value", "new_value", "actor_id")
    )


def assert_counters_exact(*projects) -> None:
    """The kept per-status counters equal a real COUNT for every status."""
    for project in projects:
        real = dict(
            Issue.objects.filter(project=project)
            .values_list("status")
            .annotate(n=Count("id"))
            .values_list("status", "n")
        )
        kept = dict(
            IssueStatusCount.objects.filter(project=project)
            .exclude(count=0)
            .values_list("status", "count")
        )
        assert kept == real


def snapshot() -> dict:
    return {
        "issues": [stored(pk) for pk in Issue.objects.order_by("id").values_list("pk", flat=True)],
        "labels": list(
            Label.objects.order_by("id").values_list("id", "project_id", "name", "color")
        ),
        "history": IssueHistory.objects.count(),
        "events": Event.objects.count(),
        "counters": list(
            IssueStatusCount.objects.order_by("id").values_list("project_id", "status", "count")
        ),
    }


@pytest.fixture
def bug(world):
    """Issue #1 of Rocket, reported by the developer."""
    return make_issue(
        world.project,
        world.developer,
        title="Engine stalls",
        description="At 10 km",
        type="bug",
        priority="high",
        labels=["engine"],
    )


@pytest.fixture
def teamless(world):
    """A developer of Acme who is not on Rocket's (private) team."""
    user = UserFactory(email="teamless@acme.test")
    MembershipFactory(workspace=world.acme, user=user, role=Role.DEVELOPER)
    return user


# Create -------------------------------------------------------------------------------------


def test_create_with_every_field(api, world):
    backend = Label.objects.create(project=world.project, name="backend", color="#ff0000")
    body = {
        "title": "Fuel leak",
        "description": "Seen on the **pad**.",
        "type": "bug",
        "priority": "critical",
        "assignee_id": world.viewer.pk,
        "labels": ["urgent", "backend"],
    }
    response = api.developer.post(issues_url(world.project), body, format="json")

    payload = assert_ok(response, 201)
    assert set(payload) == {"success", "data"}
    data = payload["data"]
    issue = Issue.objects.get()
    assert response["Location"] == f"/v1/issues/{issue.pk}"
    assert set(data) == RECORD_KEYS
    assert data == stored(issue)
    assert data["number"] == 1
    assert data["project_id"] == world.project.pk
    assert data["title"] == "Fuel leak"
    assert data["description"] == "Seen on the **pad**."
    assert (data["type"], data["priority"], data["status"]) == ("bug", "critical", "open")
    assert data["assignee_id"] == world.viewer.pk
    assert data["reporter_id"] == world.developer.pk
    assert data["labels"] == ["backend", "urgent"]
    assert data["closed_at"] is None
    assert data["created_at"] == data["updated_at"]
    assert data["created_at"].endswith("Z")

    # The known label is reused; the unknown one is created in the project.
    labels = {label.name: label for label in Label.objects.filter(project=world.project)}
    assert set(labels) == {"backend", "urgent"}
    assert labels["backend"].pk == backend.pk and labels["backend"].color == "#ff0000"
    assert labels["urgent"].color == "#6b7280"

    assert history(issue) == [("created", None, data, world.developer.pk)]
    [event] = events()
    assert event.type == "issue.created"
    assert (event.workspace_id, event.project_id) == (world.acme.pk, world.project.pk)
    assert event.actor_id == world.developer.pk
    assert event.data == {"issue": data}
    assert event.changes is None
    assert_counters_exact(world.project)


def test_create_with_only_a_title_takes_the_defaults(api, world):
    data = assert_ok(
        api.owner.post(issues_url(world.project), {"title": "Bare"}, format="json"), 201
    )["data"]
    assert data == stored(data["id"])
    assert {key: data[key] for key in RECORD_KEYS - {"id", "created_at", "updated_at"}} == {
        "project_id": world.project.pk,
        "number": 1,
        "title": "Bare",
        "description": "",
        "type": "task",
        "priority": "medium",
        "status": "open",
        "assignee_id": None,
        "reporter_id": world.owner.pk,
        "labels": [],
        "closed_at": None,
        "comment_count": 0,
    }
    assert Issue.objects.get().priority_rank == 1


def test_create_closed_sets_closed_at(api, world):
    data = assert_ok(
        api.owner.post(
            issues_url(world.project), {"title": "Done", "status": "closed"}, format="json"
        ),
        201,
    )["data"]
    assert data["closed_at"] == data["created_at"]
    assert IssueStatusCount.objects.get(project=world.project, status="closed").count == 1


def test_a_repeated_create_with_an_idempotency_key_makes_one_issue(api, world):
    def post(body):
        return api.developer.post(
            issues_url(world.project), body, format="json", HTTP_IDEMPOTENCY_KEY="issue-1"
        )

    first = post({"title": "Once", "labels": ["new"]})
    body = assert_ok(first, 201)
    again = post({"title": "Once", "labels": ["new"]})
    assert again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again["Location"] == first["Location"]
    assert again.json() == body
    assert_error(post({"title": "Twice"}), 422, "VALIDATION_ERROR")
    assert Issue.objects.count() == 1
    assert len(events("issue.created")) == 1
    assert IssueStatusCount.objects.get(project=world.project, status="open").count == 1


def test_numbers_count_per_project_and_are_never_reused(api, world):
    other = ProjectFactory(workspace=world.acme, visibility=Project.Visibility.INTERNAL)

    def create(project) -> dict:
        response = api.owner.post(issues_url(project), {"title": "n"}, format="json")
        return assert_ok(response, 201)["data"]

    assert [create(world.project)["number"] for _ in range(3)] == [1, 2, 3]
    assert create(other)["number"] == 1
    third = Issue.objects.get(project=world.project, number=3)
    assert_ok(api.owner.delete(issue_url(third)))
    assert create(world.project)["number"] == 4
    assert create(other)["number"] == 2
    assert sorted(Issue.objects.filter(project=world.project).values_list("number", flat=True)) == [
        1,
        2,
        4,
    ]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, ["title"]),
        ({"description": "No title", "type": "bug"}, ["title"]),
        ({"title": ""}, ["title"]),
        ({"title": "   "}, ["title"]),
        ({"title": None}, ["title"]),
        ({"title": "x" * 501}, ["title"]),
        # Unknown enum values.
        ({"title": "t", "type": "epic"}, ["type"]),
        ({"title": "t", "priority": "urgent"}, ["priority"]),
        ({"title": "t", "status": "done"}, ["status"]),
        ({"title": "t", "status": "OPEN"}, ["status"]),
        # Values of the wrong JSON type.
        ({"title": 5}, ["title"]),
        ({"title": ["a"]}, ["title"]),
        ({"title": "t", "description": 7}, ["description"]),
        ({"title": "t", "type": 1}, ["type"]),
        ({"title": "t", "priority": True}, ["priority"]),
        ({"title": "t", "status": {"name": "open"}}, ["status"]),
        ({"title": "t", "assignee_id": "3"}, ["assignee_id"]),
        ({"title": "t", "assignee_id": 1.5}, ["assignee_id"]),
        ({"title": "t", "assignee_id": True}, ["assignee_id"]),
        ({"title": "t", "assignee_id": 0}, ["assignee_id"]),
        ({"title": "t", "labels": "bug"}, ["labels"]),
        ({"title": "t", "labels": [1]}, ["labels.0"]),
        ({"title": "t", "labels": ["ok", ""]}, ["labels.1"]),
        ({"title": "t", "labels": ["x" * 51]}, ["labels.0"]),
        ({"title": 1, "type": "epic"}, ["title", "type"]),
    ],
)
def test_create_validation(api, world, body, fields):
    response = api.owner.post(issues_url(world.project), body, format="json")
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert sorted(error["details"]) == sorted(fields)
    for messages in error["details"].values():
        assert messages and all(isinstance(message, str) for message in messages)
    assert not Issue.objects.exists()
    assert not Label.objects.exists()
    assert not Event.objects.exists()


@pytest.mark.parametrize("body", ["[1, 2]", '"title"', "{bad json"])
def test_create_with_a_body_that_is_no_object_is_400(api, world, body):
    response = api.owner.post(issues_url(world.project), body, content_type="application/json")
    assert_error(response, 400, "BAD_REQUEST")
    assert not Issue.objects.exists()


def test_assignee_must_be_able_to_see_the_project(api, world, teamless):
    suspended = UserFactory(email="gone@acme.test", status=User.Status.SUSPENDED)
    MembershipFactory(workspace=world.acme, user=suspended, role=Role.DEVELOPER)
    ProjectMemberFactory(project=world.project, user=suspended)
    for assignee in (world.outsider.pk, teamless.pk, suspended.pk, 999_999):
        body = {"title": "Assigned", "assignee_id": assignee}
        response = api.owner.post(issues_url(world.project), body, format="json")
        error = assert_error(response, 422, "VALIDATION_ERROR")
        assert list(error["details"]) == ["assignee_id"]
    assert not Issue.objects.exists()
    assert not Event.objects.exists()
    assert not IssueStatusCount.objects.filter(count__gt=0).exists()

    # The team, and workspace admins (who see every project), can be assigned.
    for assignee in (world.viewer, world.admin, world.developer):
        body = {"title": "Assigned", "assignee_id": assignee.pk}
        data = assert_ok(api.owner.post(issues_url(world.project), body, format="json"), 201)
        assert data["data"]["assignee_id"] == assignee.pk


def test_assignee_on_an_internal_project_is_any_workspace_member(api, world, teamless):
    internal = ProjectFactory(workspace=world.acme, visibility=Project.Visibility.INTERNAL)
    body = {"title": "t", "assignee_id": teamless.pk}
    assert_ok(api.owner.post(issues_url(internal), body, format="json"), 201)
    body["assignee_id"] = world.outsider.pk
    error = assert_error(
        api.owner.post(issues_url(internal), body, format="json"), 422, "VALIDATION_ERROR"
    )
    assert list(error["details"]) == ["assignee_id"]


def test_patch_to_an_assignee_who_cannot_see_is_422(api, world, bug, teamless):
    before = snapshot()
    for assignee in (world.outsider.pk, teamless.pk):
        response = api.developer.patch(
            issue_url(bug), {"assignee_id": assignee, "title": "Changed"}, format="json"
        )
        error = assert_error(response, 422, "VALIDATION_ERROR")
        assert list(error["details"]) == ["assignee_id"]
    assert snapshot() == before


# Read, replace, change, delete ------------------------------------------------------------


def test_get_one(api, world, bug):
    body = assert_ok(api.viewer.get(issue_url(bug)))
    assert set(body) == {"success", "data"}
    assert body["data"] == stored(bug)
    assert body["data"]["labels"] == ["engine"]


def test_unknown_issue_is_404(api, world):
    for path in ("/v1/issues/999999", "/v1/issues/999999/history", "/v1/labels/999999"):
        error = assert_error(api.owner.get(path), 404, "NOT_FOUND")
        assert error["details"] == {}
    assert_error(
        api.owner.patch("/v1/issues/999999", {"title": "x"}, format="json"), 404, "NOT_FOUND"
    )


def test_put_resets_omitted_optional_fields(api, world, bug):
    assert_ok(
        api.developer.patch(
            issue_url(bug),
            {"status": "closed", "assignee_id": world.viewer.pk, "labels": ["engine", "ui"]},
            format="json",
        )
    )
    before = stored(bug)
    response = api.developer.put(issue_url(bug), {"title": "Replaced"}, format="json")
    data = assert_ok(response)["data"]

    assert data == stored(bug)
    assert data["title"] == "Replaced"
    assert data["description"] == ""
    assert (data["type"], data["priority"], data["status"]) == ("task", "medium", "open")
    assert data["assignee_id"] is None
    assert data["labels"] == []
    assert data["closed_at"] is None
    assert Issue.objects.get(pk=bug.pk).priority_rank == 1
    # What a PUT cannot change.
    for key in ("id", "project_id", "number", "reporter_id", "created_at"):
        assert data[key] == before[key]
    assert data["updated_at"] > before["updated_at"]
    # The labels stay in the project; the issue just no longer carries them.
    assert set(Label.objects.values_list("name", flat=True)) == {"engine", "ui"}

    event = events()[-1]
    assert event.type == "issue.reopened"
    assert event.data == {"issue": data}
    assert event.changes == {
        "title": {"previous": "Engine stalls", "current": "Replaced"},
        "description": {"previous": "At 10 km", "current": ""},
        "type": {"previous": "bug", "current": "task"},
        "priority": {"previous": "high", "current": "medium"},
        "status": {"previous": "closed", "current": "open"},
        "assignee_id": {"previous": world.viewer.pk, "current": None},
        "labels": {"previous": ["engine", "ui"], "current": []},
    }
    # After the "created" row and the three of the PATCH above.
    rows = {row[0]: row[1:] for row in history(bug)[4:]}
    assert rows == {
        name: (change["previous"], change["current"], world.developer.pk)
        for name, change in event.changes.items()
    }
    assert_counters_exact(world.project)


def test_put_with_every_field(api, world, bug):
    body = {
        "title": "All",
        "description": "d",
        "type": "feature",
        "priority": "low",
        "status": "in_progress",
        "assignee_id": world.owner.pk,
        "labels": ["a", "b"],
    }
    data = assert_ok(api.owner.put(issue_url(bug), body, format="json"))["data"]
    assert {key: data[key] for key in body} == {**body, "labels": ["a", "b"]}
    assert data == stored(bug)
    assert Issue.objects.get(pk=bug.pk).priority_rank == 0


@pytest.mark.parametrize("body", [{}, {"description": "no title"}, {"title": ""}])
def test_put_without_title_is_422(api, world, bug, body):
    before = snapshot()
    error = assert_error(
        api.owner.put(issue_url(bug), body, format="json"), 422, "VALIDATION_ERROR"
    )
    assert list(error["details"]) == ["title"]
    assert snapshot() == before


def test_patch_changes_only_the_fields_sent(api, world, bug):
    before = stored(bug)
    data = assert_ok(api.developer.patch(issue_url(bug), {"priority": "critical"}, format="json"))[
        "data"
    ]
    assert data == stored(bug)
    assert data == {**before, "priority": "critical", "updated_at": data["updated_at"]}
    assert data["updated_at"] > before["updated_at"]
    assert Issue.objects.get(pk=bug.pk).priority_rank == 3
    [event] = events("issue.updated")
    assert event.changes == {"priority": {"previous": "high", "current": "critical"}}
    assert event.data == {"issue": data}
    assert event.actor_id == world.developer.pk


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"status": "done"}, ["status"]),
        ({"title": ""}, ["title"]),
        ({"title": None}, ["title"]),
        ({"priority": 3}, ["priority"]),
        ({"labels": None}, ["labels"]),
        ({"labels": "engine"}, ["labels"]),
        ({"assignee_id": "me"}, ["assignee_id"]),
    ],
)
def test_patch_validation_changes_nothing(api, world, bug, body, fields):
    before = snapshot()
    response = api.developer.patch(issue_url(bug), body, format="json")
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert sorted(error["details"]) == fields
    assert snapshot() == before


def test_patch_to_the_same_values_changes_nothing(api, world, bug):
    before = snapshot()
    body = {"title": "Engine stalls", "status": "open", "labels": ["engine"], "assignee_id": None}
    data = assert_ok(api.developer.patch(issue_url(bug), body, format="json"))["data"]
    assert data == before["issues"][0]
    assert snapshot() == before


def test_patch_can_unassign_and_clear_labels(api, world, bug):
    assert_ok(api.owner.patch(issue_url(bug), {"assignee_id": world.viewer.pk}, format="json"))
    data = assert_ok(
        api.owner.patch(issue_url(bug), {"assignee_id": None, "labels": []}, format="json")
    )["data"]
    assert (data["assignee_id"], data["labels"]) == (None, [])
    assert data == stored(bug)


def test_patch_labels_creates_unknown_names_in_the_issues_project(api, world, bug):
    elsewhere = Label.objects.create(project=world.other_project, name="ui", color="#000000")
    data = assert_ok(
        api.developer.patch(issue_url(bug), {"labels": [" ui ", "engine", "ui"]}, format="json")
    )["data"]
    assert data["labels"] == ["engine", "ui"]
    ui = Label.objects.get(project=world.project, name="ui")
    assert ui.pk != elsewhere.pk
    assert list(Issue.objects.get(pk=bug.pk).labels.order_by("name")) == [
        Label.objects.get(project=world.project, name="engine"),
        ui,
    ]
    assert Label.objects.get(pk=elsewhere.pk).color == "#000000"
    [event] = events("issue.updated")
    assert event.changes == {"labels": {"previous": ["engine"], "current": ["engine", "ui"]}}


def test_status_transitions_and_closed_at(api, world, bug):
    def move(status: str) -> dict:
        response = api.developer.patch(issue_url(bug), {"status": status}, format="json")
        data = assert_ok(response)["data"]
        assert data == stored(bug)
        return data

    started = move("in_progress")
    assert started["closed_at"] is None
    closed = move("closed")
    assert closed["closed_at"] is not None
    assert closed["closed_at"] == closed["updated_at"]
    assert_counters_exact(world.project)
    reopened = move("open")
    assert reopened["closed_at"] is None
    # Closed, then straight back to in progress: a reopening too.
    move("closed")
    again = move("in_progress")
    assert again["closed_at"] is None

    assert [(e.type, e.changes) for e in events()[1:]] == [
        ("issue.updated", {"status": {"previous": "open", "current": "in_progress"}}),
        ("issue.closed", {"status": {"previous": "in_progress", "current": "closed"}}),
        ("issue.reopened", {"status": {"previous": "closed", "current": "open"}}),
        ("issue.closed", {"status": {"previous": "open", "current": "closed"}}),
        ("issue.reopened", {"status": {"previous": "closed", "current": "in_progress"}}),
    ]
    assert events("issue.closed")[0].data == {"issue": closed}
    assert events("issue.reopened")[0].data == {"issue": reopened}
    assert [row[:3] for row in history(bug)[1:]] == [
        ("status", "open", "in_progress"),
        ("status", "in_progress", "closed"),
        ("status", "closed", "open"),
        ("status", "open", "closed"),
        ("status", "closed", "in_progress"),
    ]
    assert_counters_exact(world.project)


def test_closing_with_other_changes_is_one_closed_event(api, world, bug):
    response = api.developer.patch(
        issue_url(bug), {"status": "closed", "title": "Fixed: engine"}, format="json"
    )
    data = assert_ok(response)["data"]
    [event] = events("issue.closed", "issue.updated")
    assert event.type == "issue.closed"
    assert set(event.changes) == {"status", "title"}
    assert event.data == {"issue": data}


READ_ONLY = {
    "id": 424242,
    "number": 99,
    "project_id": 31337,
    "created_at": "2001-01-01T00:00:00Z",
    "updated_at": "2001-01-01T00:00:00Z",
    "reporter_id": 31337,
    "closed_at": "2001-01-01T00:00:00Z",
}


def test_read_only_fields_in_a_create_change_nothing(api, world):
    body = {**READ_ONLY, "project_id": world.other_project.pk, "reporter_id": world.owner.pk}
    response = api.developer.post(issues_url(world.project), {**body, "title": "t"}, format="json")
    data = assert_ok(response, 201)["data"]
    assert data == stored(data["id"])
    assert data["id"] != 424242
    assert data["number"] == 1
    assert data["project_id"] == world.project.pk
    assert data["reporter_id"] == world.developer.pk
    assert data["closed_at"] is None
    assert not data["created_at"].startswith("2001")
    assert not Issue.objects.filter(project=world.other_project).exists()


@pytest.mark.parametrize("method", ["patch", "put"])
def test_read_only_fields_in_an_update_change_nothing(api, world, bug, method):
    body = {**READ_ONLY, "project_id": world.other_project.pk, "reporter_id": world.owner.pk}
    before = snapshot()
    if method == "put":
        # A PUT must carry the writable fields, here as they are.
        record = before["issues"][0]
        body.update({key: record[key] for key in ("title", "description", "type", "priority")})
        body.update(labels=record["labels"])
    data = assert_ok(getattr(api.developer, method)(issue_url(bug), body, format="json"))["data"]
    assert data == before["issues"][0]
    assert snapshot() == before


def test_delete(api, world, bug):
    make_issue(world.project, world.owner, title="Stays")
    record = stored(bug)
    response = api.owner.delete(issue_url(bug))
    body = assert_ok(response)
    assert body == {"success": True, "data": None}

    assert not Issue.objects.filter(pk=bug.pk).exists()
    assert not IssueHistory.objects.filter(issue_id=bug.pk).exists()
    assert Label.objects.filter(project=world.project, name="engine").exists()
    [event] = events("issue.deleted")
    assert event.data == {"issue": record}
    assert event.actor_id == world.owner.pk
    assert (event.workspace_id, event.project_id) == (world.acme.pk, world.project.pk)
    assert_counters_exact(world.project)

    assert_error(api.owner.get(issue_url(bug)), 404, "NOT_FOUND")
    assert_error(api.owner.delete(issue_url(bug)), 404, "NOT_FOUND")
    assert len(events("issue.deleted")) == 1


@pytest.mark.parametrize(
    ("method", "body"), [("patch", {"status": "closed"}), ("put", {"title": "t"}), ("delete", None)]
)
def test_an_issue_deleted_while_the_request_runs_is_404(api, world, bug, monkeypatch, method, body):
    """Another request deletes the issue while this one runs: a DELETE between its read and
    its write; a PATCH or PUT (which read, check and write under one lock) before its read."""
    if method == "delete":
        read = selectors.issue_get

        def read_then_lose_it(**kwargs):
            issue = read(**kwargs)
            services.issue_delete(issue=issue, actor=world.owner)
            return issue

        monkeypatch.setattr(selectors, "issue_get", read_then_lose_it)
    else:
        locked = services.issue_locked

        @contextmanager
        def lose_it_then_read(**kwargs):
            services.issue_delete(issue=bug, actor=world.owner)
            with locked(**kwargs) as found:
                yield found

        monkeypatch.setattr(services, "issue_locked", lose_it_then_read)
    response = getattr(api.owner, method)(issue_url(bug), body, format="json")
    assert_error(response, 404, "NOT_FOUND")
    assert not Issue.objects.exists()
    assert [event.type for event in events()] == ["issue.created", "issue.deleted"]
    assert_counters_exact(world.project)


def test_admin_deletes_too(api, world, bug):
    assert_ok(api.admin.delete(issue_url(bug)))
    assert not Issue.objects.exists()


# History ----------------------------------------------------------------------------------


def test_history_lists_every_change(api, world, bug):
    created = stored(bug)
    assert_ok(
        api.developer.patch(
            issue_url(bug), {"title": "Engine stalls twice", "priority": "critical"}, format="json"
        )
    )
    assert_ok(api.owner.patch(issue_url(bug), {"status": "closed"}, format="json"))
    assert_ok(
        api.owner.patch(
            issue_url(bug), {"assignee_id": world.viewer.pk, "labels": []}, format="json"
        )
    )

    body = assert_ok(api.viewer.get(issue_url(bug, "/history")))
    assert set(body) == {"success", "data", "meta"}
    assert body["meta"]["total"] == 6
    rows = IssueHistory.objects.filter(issue=bug).order_by("id")
    assert body["data"] == [
        {
            "id": row.pk,
            "field": row.field,
            "old_value": row.old_value,
            "new_value": row.new_value,
            "actor_id": row.actor_id,
            "actor": {
                "id": row.actor_id,
                "kind": "person",
                "via": row.actor_detail["via"],
            },
            "source": None,
            "created_at": z(row.created_at),
        }
        for row in rows
    ]
    # Who, and through what: the fixture made the issue outside any request; the changes
    # came through each persona's key.
    assert body["data"][0]["actor"]["via"] is None
    developer_key = ApiKey.objects.get(user=world.developer)
    assert body["data"][1]["actor"]["via"] == {
        "credential": "api_key",
        "key_id": developer_key.pk,
        "app_id": None,
    }
    assert [(r["field"], r["old_value"], r["new_value"], r["actor_id"]) for r in body["data"]] == [
        ("created", None, created, world.developer.pk),
        ("title", "Engine stalls", "Engine stalls twice", world.developer.pk),
        ("priority", "high", "critical", world.developer.pk),
        ("status", "open", "closed", world.owner.pk),
        ("assignee_id", None, world.viewer.pk, world.owner.pk),
        ("labels", ["engine"], [], world.owner.pk),
    ]
    # Each change's rows carry the time of the change, which is the issue's updated_at then.
    closed_at = Issue.objects.get(pk=bug.pk).closed_at
    assert body["data"][3]["created_at"] == z(closed_at)
    assert body["data"][0]["created_at"] == created["created_at"]

    page = assert_ok(api.viewer.get(issue_url(bug, "/history?per_page=4&page=2")))
    assert [row["field"] for row in page["data"]] == ["assignee_id", "labels"]
    assert page["meta"] == {
        "total": 6,
        "page": 2,
        "per_page": 4,
        "current_page": 2,
        "total_pages": 2,
        "total_count": 6,
        "next_cursor": None,
    }


def test_history_rejects_bad_paging(api, world, bug):
    error = assert_error(api.owner.get(issue_url(bug, "/history?page=0")), 400, "BAD_REQUEST")
    assert list(error["details"]) == ["page"]


# Labels -----------------------------------------------------------------------------------


def test_label_create_and_list(api, world):
    response = api.developer.post(
        labels_url(world.project),
        {"name": "frontend", "color": "#00AAff", "description": "The UI"},
        format="json",
    )
    data = assert_ok(response, 201)["data"]
    label = Label.objects.get(name="frontend")
    assert response["Location"] == f"/v1/labels/{label.pk}"
    assert data == {
        "id": label.pk,
        "project_id": world.project.pk,
        "name": "frontend",
        "color": "#00AAff",
        "description": "The UI",
        "created_at": z(label.created_at),
    }
    created = Event.objects.get(type="label.created")
    assert created.data == {"label": data}
    assert created.actor_id == world.developer.pk

    defaults = assert_ok(
        api.developer.post(labels_url(world.project), {"name": "backend"}, format="json"), 201
    )["data"]
    assert (defaults["color"], defaults["description"]) == ("#6b7280", "")

    body = assert_ok(api.viewer.get(labels_url(world.project)))
    assert [item["name"] for item in body["data"]] == ["backend", "frontend"]
    assert body["data"][1] == data
    assert body["meta"]["total"] == 2 and set(body["meta"]) == META_KEYS
    assert body["meta"]["next_cursor"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "engine"}, "name"),  # taken in this project
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x" * 51}, "name"),
        ({"name": 5}, "name"),
        ({"name": "n", "color": "red"}, "color"),
        ({"name": "n", "color": "#12345"}, "color"),
        ({"name": "n", "color": "#1234567"}, "color"),
        ({"name": "n", "color": "#gggggg"}, "color"),
        ({"name": "n", "color": 123456}, "color"),
        ({"name": "n", "description": "x" * 201}, "description"),
    ],
)
def test_label_create_validation(api, world, bug, body, field):
    before = snapshot()
    response = api.owner.post(labels_url(world.project), body, format="json")
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert list(error["details"]) == [field]
    assert snapshot() == before


def test_the_same_label_name_in_another_project_is_fine(api, world, bug):
    internal = ProjectFactory(workspace=world.acme, visibility=Project.Visibility.INTERNAL)
    assert_ok(api.owner.post(labels_url(internal), {"name": "engine"}, format="json"), 201)
    assert Label.objects.filter(name="engine").count() == 2


def test_label_get_put_patch_delete(api, world, bug):
    label = Label.objects.get(name="engine")
    Label.objects.filter(pk=label.pk).update(color="#111111", description="Motors")
    body = assert_ok(api.viewer.get(label_url(label)))
    assert body["data"] == {
        "id": label.pk,
        "project_id": world.project.pk,
        "name": "engine",
        "color": "#111111",
        "description": "Motors",
        "created_at": z(label.created_at),
    }

    data = assert_ok(api.developer.patch(label_url(label), {"color": "#222222"}, format="json"))[
        "data"
    ]
    assert (data["name"], data["color"], data["description"]) == ("engine", "#222222", "Motors")
    updated = Event.objects.get(type="label.updated")
    assert updated.changes == {"color": {"previous": "#111111", "current": "#222222"}}

    # PUT resets what it leaves out.
    data = assert_ok(api.developer.put(label_url(label), {"name": "motor"}, format="json"))["data"]
    assert (data["name"], data["color"], data["description"]) == ("motor", "#6b7280", "")
    assert Label.objects.get(pk=label.pk).name == "motor"
    # Issues show labels by name: a renamed label shows its new name.
    assert assert_ok(api.viewer.get(issue_url(bug)))["data"]["labels"] == ["motor"]

    assert assert_ok(api.owner.delete(label_url(label))) == {"success": True, "data": None}
    assert not Label.objects.filter(pk=label.pk).exists()
    assert Event.objects.get(type="label.deleted").data["label"]["name"] == "motor"
    assert assert_ok(api.viewer.get(issue_url(bug)))["data"]["labels"] == []
    assert_error(api.viewer.get(label_url(label)), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("method", "body", "field"),
    [
        ("patch", {"name": "urgent"}, "name"),
        ("put", {"name": "urgent"}, "name"),
        ("put", {"color": "#123456"}, "name"),
        ("patch", {"color": "blue"}, "color"),
        ("patch", {"name": None}, "name"),
    ],
)
def test_label_update_validation(api, world, bug, method, body, field):
    Label.objects.create(project=world.project, name="urgent")
    label = Label.objects.get(name="engine")
    before = snapshot()
    response = getattr(api.developer, method)(label_url(label), body, format="json")
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert list(error["details"]) == [field]
    assert snapshot() == before


# Archived projects --------------------------------------------------------------------------


@pytest.fixture
def archived(world, bug):
    Project.objects.filter(pk=world.project.pk).update(status=Project.Status.ARCHIVED)
    return world.project


def test_archived_project_reads_still_work(api, archived, bug):
    label = Label.objects.get(name="engine")
    for path in (
        issues_url(archived),
        issue_url(bug),
        issue_url(bug, "/history"),
        labels_url(archived),
        label_url(label),
        f"/v1/issues?project_id={archived.pk}",
    ):
        assert_ok(api.viewer.get(path))


def test_archived_project_writes_are_409(api, archived, bug):
    label = Label.objects.get(name="engine")
    before = snapshot()
    calls = [
        ("post", issues_url(archived), {"title": "New"}),
        ("put", issue_url(bug), {"title": "New"}),
        ("patch", issue_url(bug), {"status": "closed"}),
        ("delete", issue_url(bug), None),
        ("post", labels_url(archived), {"name": "new"}),
        ("put", label_url(label), {"name": "new"}),
        ("patch", label_url(label), {"color": "#000000"}),
        ("delete", label_url(label), None),
    ]
    for method, path, body in calls:
        # Developers may not delete at all: that is a 403 before the project's state counts.
        clients = (api.owner, api.admin) if method == "delete" else (api.owner, api.developer)
        for client in clients:
            response = getattr(client, method)(path, body, format="json")
            error = assert_error(response, 409, "CONFLICT")
            assert error["details"] == {"project_status": "archived"}
    assert snapshot() == before


def test_archived_project_role_check_comes_first(api, archived, bug):
    assert_error(api.viewer.patch(issue_url(bug), {"title": "x"}, format="json"), 403, "FORBIDDEN")
    assert_error(api.developer.delete(issue_url(bug)), 403, "FORBIDDEN")


# Who may call what --------------------------------------------------------------------------

WORKSPACE_PERSONAS = ("owner", "admin", "developer", "viewer", "outsider")
PERSONAS = (*WORKSPACE_PERSONAS, "anonymous", "no_scope", "only_scope")


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    path: str
    scope: str
    # Expected status for owner, admin, developer, viewer, outsider.
    expect: tuple[int, int, int, int, int]
    body: dict | None = None


ACME = (200, 200, 200, 200, 404)
ACME_WRITE = (200, 200, 200, 403, 404)
ACME_CREATE = (201, 201, 201, 403, 404)
ACME_DELETE = (200, 200, 403, 403, 404)
GLOBEX = (404, 404, 404, 404, 200)
GLOBEX_CREATE = (404, 404, 404, 404, 201)

ENDPOINTS = [
    # Rocket, Acme's private project (team: owner, developer, viewer).
    Endpoint("issues.list", "get", "/v1/projects/{project}/issues", "issues:read", ACME),
    Endpoint(
        "issues.create",
        "post",
        "/v1/projects/{project}/issues",
        "issues:write",
        ACME_CREATE,
        {"title": "Matrix"},
    ),
    Endpoint(
        "issues.bulk_create",
        "post",
        "/v1/projects/{project}/issues/bulk",
        "issues:write",
        ACME_WRITE,
        {"items": [{"title": "Matrix"}]},
    ),
    Endpoint("issues.all", "get", "/v1/issues", "issues:read", (200,) * 5),
    Endpoint("issues.get", "get", "/v1/issues/{issue}", "issues:read", ACME),
    Endpoint(
        "issues.put", "put", "/v1/issues/{issue}", "issues:write", ACME_WRITE, {"title": "Put"}
    ),
    Endpoint(
        "issues.patch",
        "patch",
        "/v1/issues/{issue}",
        "issues:write",
        ACME_WRITE,
        {"status": "closed"},
    ),
    Endpoint("issues.delete", "delete", "/v1/issues/{issue}", "issues:admin", ACME_DELETE),
    Endpoint("issues.history", "get", "/v1/issues/{issue}/history", "issues:read", ACME),
    Endpoint("labels.list", "get", "/v1/projects/{project}/labels", "issues:read", ACME),
    Endpoint(
        "labels.create",
        "post",
        "/v1/projects/{project}/labels",
        "issues:write",
        ACME_CREATE,
        {"name": "matrix"},
    ),
    Endpoint("labels.get", "get", "/v1/labels/{label}", "issues:read", ACME),
    Endpoint(
        "labels.put", "put", "/v1/labels/{label}", "issues:write", ACME_WRITE, {"name": "put"}
    ),
    Endpoint(
        "labels.patch",
        "patch",
        "/v1/labels/{label}",
        "issues:write",
        ACME_WRITE,
        {"color": "#000000"},
    ),
    Endpoint("labels.delete", "delete", "/v1/labels/{label}", "issues:admin", ACME_DELETE),
    # Globex's project, its issue and its label: a 404 for all of Acme, whatever the role.
    Endpoint("other.issues.list", "get", "/v1/projects/{other}/issues", "issues:read", GLOBEX),
    Endpoint(
        "other.issues.create",
        "post",
        "/v1/projects/{other}/issues",
        "issues:write",
        GLOBEX_CREATE,
        {"title": "Matrix"},
    ),
    Endpoint("other.issues.get", "get", "/v1/issues/{other_issue}", "issues:read", GLOBEX),
    Endpoint(
        "other.issues.put",
        "put",
        "/v1/issues/{other_issue}",
        "issues:write",
        GLOBEX,
        {"title": "Put"},
    ),
    Endpoint(
        "other.issues.patch",
        "patch",
        "/v1/issues/{other_issue}",
        "issues:write",
        GLOBEX,
        {"title": "Patch"},
    ),
    Endpoint("other.issues.delete", "delete", "/v1/issues/{other_issue}", "issues:admin", GLOBEX),
    Endpoint(
        "other.issues.history", "get", "/v1/issues/{other_issue}/history", "issues:read", GLOBEX
    ),
    Endpoint(
        "other.issues.bulk_create",
        "post",
        "/v1/projects/{other}/issues/bulk",
        "issues:write",
        GLOBEX,
        {"items": [{"title": "Matrix"}]},
    ),
    Endpoint("other.labels.list", "get", "/v1/projects/{other}/labels", "issues:read", GLOBEX),
    Endpoint(
        "other.labels.create",
        "post",
        "/v1/projects/{other}/labels",
        "issues:write",
        GLOBEX_CREATE,
        {"name": "matrix"},
    ),
    Endpoint("other.labels.get", "get", "/v1/labels/{other_label}", "issues:read", GLOBEX),
    Endpoint(
        "other.labels.put",
        "put",
        "/v1/labels/{other_label}",
        "issues:write",
        GLOBEX,
        {"name": "put"},
    ),
    Endpoint(
        "other.labels.patch",
        "patch",
        "/v1/labels/{other_label}",
        "issues:write",
        GLOBEX,
        {"name": "patch"},
    ),
    Endpoint("other.labels.delete", "delete", "/v1/labels/{other_label}", "issues:admin", GLOBEX),
]


def scopes_without(scope: str) -> list[str]:
    """Every scope that does not grant ``scope`` (``issues:read`` for ``issues:write``)."""
    return [s for s in ALL_SCOPES if scope not in expand([s])]


@pytest.fixture
def ids(world, bug):
    other_issue = make_issue(world.other_project, world.outsider, title="Secret", labels=["x"])
    return {
        "project": world.project.pk,
        "other": world.other_project.pk,
        "issue": bug.pk,
        "label": Label.objects.get(project=world.project).pk,
        "other_issue": other_issue.pk,
        "other_label": Label.objects.get(project=world.other_project).pk,
    }


@pytest.mark.parametrize(
    ("endpoint", "persona"),
    [
        pytest.param(endpoint, persona, id=f"{endpoint.name}-{persona}")
        for endpoint in ENDPOINTS
        for persona in PERSONAS
    ],
)
def test_permission_matrix(world, ids, endpoint, persona):
    if persona == "anonymous":
        client, expected = client_for(), 401
    elif persona == "no_scope":
        client, expected = client_for(world.owner, scopes_without(endpoint.scope)), 403
    elif persona == "only_scope":
        client, expected = client_for(world.owner, [endpoint.scope]), endpoint.expect[0]
    else:
        client = client_for(getattr(world, persona))
        expected = endpoint.expect[WORKSPACE_PERSONAS.index(persona)]
    before = snapshot()

    path = endpoint.path.format(**ids)
    response = getattr(client, endpoint.method)(path, endpoint.body, format="json")

    assert response.status_code == expected, response.content
    if expected < 300:
        assert_ok(response, expected)
        if endpoint.method == "get":
            assert snapshot() == before
        else:
            assert snapshot() != before, "a successful write changed nothing"
        return
    code = {401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND"}[expected]
    error = assert_error(response, expected, code)
    assert snapshot() == before, "a refused call changed the database"
    if persona == "no_scope":
        assert error["details"] == {"required_scope": endpoint.scope}
    if expected == 404:
        assert error["details"] == {}
        assert "Secret" not in response.content.decode()


def test_matrix_covers_every_issue_route():
    """A new route of the issue viewsets must come with its rows: compare with the router."""
    viewsets = (IssueViewSet, LabelViewSet, ProjectIssueViewSet, ProjectLabelViewSet)
    routed = set()
    for url in router.urls:
        if url.callback.cls not in viewsets:
            continue
        path = re.sub(r"\(\?P<\w+>[^)]*\)", "{id}", str(url.pattern).strip("^$"))
        routed |= {(method, f"/v1/{path}") for method in url.callback.actions if method != "head"}
    covered = {
        (endpoint.method, re.sub(r"\{\w+\}", "{id}", endpoint.path)) for endpoint in ENDPOINTS
    }
    assert len(routed) == 16
    # PATCH /v1/issues/bulk answers each item's access in its results (a viewer's item 403, an
    # outsider's 404): tests/issues/test_bulk.py sweeps it over the same personas.
    assert routed - covered == {("patch", "/v1/issues/bulk")}


def test_a_key_with_only_issues_read_cannot_write(world, bug):
    client = client_for(world.developer, ["issues:read"])
    assert_ok(client.get(issues_url(world.project)))
    assert_ok(client.get(issue_url(bug, "/history")))
    before = snapshot()
    for method, path, body in [
        ("post", issues_url(world.project), {"title": "t"}),
        ("patch", issue_url(bug), {"title": "t"}),
        ("post", labels_url(world.project), {"name": "t"}),
    ]:
        error = assert_error(getattr(client, method)(path, body, format="json"), 403, "FORBIDDEN")
        assert error["details"] == {"required_scope": "issues:write"}
    error = assert_error(client.delete(issue_url(bug)), 403, "FORBIDDEN")
    assert error["details"] == {"required_scope": "issues:admin"}
    assert snapshot() == before


def test_write_scope_implies_read_and_projects_scopes_do_not_grant_issues(world, bug):
    writer = client_for(world.developer, ["issues:write"])
    assert_ok(writer.get(issue_url(bug)))
    assert_ok(writer.patch(issue_url(bug), {"title": "t"}, format="json"))
    projects_only = client_for(world.owner, ["projects:admin", "users:write"])
    error = assert_error(projects_only.get(issues_url(world.project)), 403, "FORBIDDEN")
    assert error["details"] == {"required_scope": "issues:read"}


def test_roles_apply_to_keys_with_every_scope(api, world, bug):
    """A developer creates and changes but does not delete; a viewer only reads."""
    data = assert_ok(
        api.developer.post(issues_url(world.project), {"title": "Mine"}, format="json"), 201
    )["data"]
    assert_ok(api.developer.patch(issue_url(data["id"]), {"status": "closed"}, format="json"))
    error = assert_error(api.developer.delete(issue_url(data["id"])), 403, "FORBIDDEN")
    assert error["details"]["required_ability"] == "manage"
    before = snapshot()
    assert_error(
        api.viewer.post(issues_url(world.project), {"title": "t"}, format="json"), 403, "FORBIDDEN"
    )
    assert_error(api.viewer.patch(issue_url(bug), {"title": "t"}, format="json"), 403, "FORBIDDEN")
    assert snapshot() == before
    assert_ok(api.owner.delete(issue_url(data["id"])))


# Isolation ----------------------------------------------------------------------------------


@pytest.fixture
def spread(world, bug, teamless):
    """Issues in projects of every visibility, in both workspaces."""
    vault = ProjectFactory(workspace=world.acme, name="Vault")  # private, no team
    lobby = ProjectFactory(
        workspace=world.acme, name="Lobby", visibility=Project.Visibility.INTERNAL
    )
    plaza = ProjectFactory(workspace=world.acme, name="Plaza", visibility=Project.Visibility.PUBLIC)
    g_public = ProjectFactory(
        workspace=world.globex, name="Globex Public", visibility=Project.Visibility.PUBLIC
    )
    made = {"rocket": bug}
    for name, project in (
        ("vault", vault),
        ("lobby", lobby),
        ("plaza", plaza),
        ("secret", world.other_project),
        ("g_public", g_public),
    ):
        made[name] = make_issue(project, None, title=f"In {name}")
    return made


@pytest.mark.parametrize(
    ("persona", "visible"),
    [
        ("owner", ["rocket", "vault", "lobby", "plaza", "g_public"]),
        ("admin", ["rocket", "vault", "lobby", "plaza", "g_public"]),
        ("developer", ["rocket", "lobby", "plaza", "g_public"]),
        ("viewer", ["rocket", "lobby", "plaza", "g_public"]),
        ("teamless", ["lobby", "plaza", "g_public"]),
        ("outsider", ["plaza", "secret", "g_public"]),
    ],
)
def test_the_global_list_shows_only_visible_issues(world, spread, teamless, persona, visible):
    user = teamless if persona == "teamless" else getattr(world, persona)
    client = client_for(user)
    expected = sorted(spread[name].pk for name in visible)
    for query in ("", "?status=open", "?sort=number", "?type=task", "?per_page=100"):
        body = assert_ok(client.get(f"/v1/issues{query}"))
        # The bug is Rocket's only issue, and its one of type bug.
        expected_here = [
            pk for pk in expected if query != "?type=task" or pk != spread["rocket"].pk
        ]
        assert sorted(item["id"] for item in body["data"]) == expected_here, query
        assert body["meta"]["total"] == len(expected_here), query

    for name, issue in spread.items():
        response = client.get(issue_url(issue))
        if name in visible:
            assert_ok(response)
        else:
            assert_error(response, 404, "NOT_FOUND")
            assert_error(client.get(issue_url(issue, "/history")), 404, "NOT_FOUND")


def test_project_id_of_another_workspace_gives_an_empty_list(api, world, spread):
    for client, project in (
        (api.owner, world.other_project),
        (api.outsider, world.project),
    ):
        for query in (f"project_id={project.pk}", f"project_id={project.pk}&status=open"):
            body = assert_ok(client.get(f"/v1/issues?{query}"))
            assert body["data"] == []
            assert body["meta"]["total"] == 0
    body = assert_ok(api.owner.get(f"/v1/issues?project_id={world.project.pk}"))
    assert [item["id"] for item in body["data"]] == [spread["rocket"].pk]


def test_public_projects_issues_are_readable_but_not_writable_from_outside(api, world, spread):
    issue = spread["plaza"]
    assert_ok(api.outsider.get(issue_url(issue)))
    assert_ok(api.outsider.get(issues_url(issue.project_id)))
    before = snapshot()
    assert_error(
        api.outsider.patch(issue_url(issue), {"title": "x"}, format="json"), 403, "FORBIDDEN"
    )
    assert_error(
        api.outsider.post(issues_url(issue.project_id), {"title": "x"}, format="json"),
        403,
        "FORBIDDEN",
    )
    assert snapshot() == before
