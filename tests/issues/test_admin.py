"""Issues and labels in the admin: the pages render, and every write goes through the issue
services, so it records the same history rows, counters and events as the API."""

import pytest

from events.models import Event
from issues.models import Issue, IssueHistory, IssueStatusCount, Label
from projects.models import Project
from tests.factories import ProjectFactory, make_issue
from tests.test_admin import form_data, url


@pytest.fixture
def issue(world):
    return make_issue(
        world.project,
        world.developer,
        title="Engine stalls",
        description="At 10 km",
        type="bug",
        labels=["engine", "urgent"],
    )


def counts(project) -> dict[str, int]:
    return dict(IssueStatusCount.objects.filter(project=project).values_list("status", "count"))


def new_events() -> list[Event]:
    return list(Event.objects.exclude(type="issue.created").order_by("id"))


def post_change(browser, issue, **changes):
    page = browser.get(url(Issue, "change", issue.pk))
    assert page.status_code == 200
    data = form_data(page)
    data.update(changes)
    return browser.post(url(Issue, "change", issue.pk), data)


# Pages --------------------------------------------------------------------------------------


def test_issue_and_label_pages_render(browser, world, issue):
    make_issue(world.project, world.owner, title="Second", status="closed")
    label = Label.objects.get(name="engine")
    for page in (
        url(Issue, "changelist"),
        url(Issue, "add"),
        url(Issue, "change", issue.pk),
        url(Issue, "delete", issue.pk),
        url(Label, "changelist"),
        url(Label, "add"),
        url(Label, "change", label.pk),
        url(Label, "delete", label.pk),
    ):
        response = browser.get(page)
        assert response.status_code == 200, page

    change = browser.get(url(Issue, "change", issue.pk)).content.decode()
    assert "Engine stalls" in change
    # The history inline shows the "created" row.
    assert "created" in change


@pytest.mark.parametrize(
    ("query", "titles"),
    [
        ({"status": "closed"}, ["Second"]),
        ({"type": "bug"}, ["Engine stalls"]),
        ({"priority": "high"}, ["Second"]),
        ({"q": "stalls"}, ["Engine stalls"]),
        ({"q": "10 km"}, ["Engine stalls"]),  # description
        ({"q": "2"}, ["Second"]),  # number
        ({"q": "acme"}, []),
    ],
)
def test_issue_changelist_filters_and_search(browser, world, issue, query, titles):
    make_issue(world.project, world.owner, title="Second", status="closed", priority="high")
    listed = browser.get(url(Issue, "changelist"), query)
    assert listed.status_code == 200
    assert sorted(i.title for i in listed.context["cl"].result_list) == sorted(titles)


def test_issue_changelist_filters_by_project(browser, world, issue):
    make_issue(world.other_project, world.outsider, title="Elsewhere")
    listed = browser.get(url(Issue, "changelist"), {"project__id__exact": world.project.pk})
    assert [i.title for i in listed.context["cl"].result_list] == ["Engine stalls"]


def test_label_changelist_search(browser, world, issue):
    Label.objects.create(project=world.other_project, name="engine-room")
    listed = browser.get(url(Label, "changelist"), {"q": "engine"})
    assert sorted(str(label) for label in listed.context["cl"].result_list) == [
        "engine",
        "engine-room",
    ]
    listed = browser.get(url(Label, "changelist"), {"q": "Secret"})  # the project's name
    assert [str(label) for label in listed.context["cl"].result_list] == ["engine-room"]


# Issue writes go through the services ----------------------------------------------------


def test_changing_the_status_records_history_and_an_event(browser, root, world, issue):
    response = post_change(browser, issue, status="closed")
    assert response.status_code == 302, response.context["adminform"].form.errors

    issue.refresh_from_db()
    assert issue.status == "closed"
    assert issue.closed_at is not None
    assert issue.updated_at == issue.closed_at
    assert counts(world.project) == {"open": 0, "closed": 1}

    [row] = IssueHistory.objects.filter(issue=issue).exclude(field="created")
    assert (row.field, row.old_value, row.new_value) == ("status", "open", "closed")
    assert row.actor == root
    assert row.source == "admin"

    [event] = new_events()
    assert event.type == "issue.closed"
    assert event.actor_id == root.pk
    assert (event.workspace_id, event.project_id) == (world.acme.pk, world.project.pk)
    assert event.changes == {"status": {"previous": "open", "current": "closed"}}
    assert event.data["issue"]["status"] == "closed"
    assert event.data["issue"]["labels"] == ["engine", "urgent"]
    assert event.data["source"] == "admin"

    # Reopening clears closed_at and is its own event.
    assert post_change(browser, issue, status="open").status_code == 302
    issue.refresh_from_db()
    assert issue.closed_at is None
    assert [e.type for e in new_events()] == ["issue.closed", "issue.reopened"]
    assert counts(world.project) == {"open": 1, "closed": 0}


def test_editing_fields_and_labels_records_one_row_per_field(browser, root, world, issue):
    keep = Label.objects.get(name="engine")
    response = post_change(
        browser,
        issue,
        title="Engine stalls at altitude",
        priority="critical",
        assignee=str(world.viewer.pk),
        labels=[str(keep.pk)],
    )
    assert response.status_code == 302, response.context["adminform"].form.errors

    issue.refresh_from_db()
    assert issue.title == "Engine stalls at altitude"
    assert (issue.priority, issue.priority_rank) == ("critical", 3)
    assert issue.assignee == world.viewer
    assert list(issue.labels.values_list("name", flat=True)) == ["engine"]
    rows = {
        row.field: (row.old_value, row.new_value)
        for row in IssueHistory.objects.filter(issue=issue).exclude(field="created")
    }
    assert rows == {
        "title": ("Engine stalls", "Engine stalls at altitude"),
        "priority": ("medium", "critical"),
        "assignee_id": (None, world.viewer.pk),
        "labels": (["engine", "urgent"], ["engine"]),
    }
    [event] = new_events()
    assert event.type == "issue.updated"
    assert set(event.changes) == set(rows)
    assert event.data["issue"]["labels"] == ["engine"]


def test_saving_without_changes_records_nothing(browser, world, issue):
    assert post_change(browser, issue).status_code == 302
    assert not new_events()
    assert list(IssueHistory.objects.filter(issue=issue).values_list("field", flat=True)) == [
        "created"
    ]


def test_adding_an_issue_in_the_admin_goes_through_issue_create(browser, root, world, issue):
    urgent = Label.objects.get(name="urgent")
    response = browser.post(
        url(Issue, "add"),
        {
            "project": world.project.pk,
            "title": "Made in the admin",
            "description": "",
            "type": "feature",
            "priority": "low",
            "status": "in_progress",
            "assignee": world.developer.pk,
            "labels": [urgent.pk],
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    made = Issue.objects.get(title="Made in the admin")
    assert made.number == 2
    assert made.reporter == root
    assert made.assignee == world.developer
    assert (made.type, made.priority, made.priority_rank, made.status) == (
        "feature",
        "low",
        0,
        "in_progress",
    )
    assert list(made.labels.values_list("name", flat=True)) == ["urgent"]
    assert counts(world.project) == {"open": 1, "in_progress": 1}
    [history] = IssueHistory.objects.filter(issue=made)
    assert history.field == "created" and history.actor == root
    event = Event.objects.filter(type="issue.created").latest("id")
    assert event.data["issue"]["id"] == made.pk
    assert event.data["issue"]["labels"] == ["urgent"]


def test_the_issue_form_keeps_the_services_rules(browser, world, issue):
    # An assignee who cannot see the private project.
    response = post_change(browser, issue, assignee=str(world.outsider.pk))
    assert response.status_code == 200
    assert "assignee" in response.context["adminform"].form.errors

    # A label of another project is no choice on an issue.
    foreign = Label.objects.create(project=world.other_project, name="foreign-label")
    page = browser.get(url(Issue, "change", issue.pk)).content.decode()
    assert "Rocket: engine" in page and "foreign-label" not in page
    response = post_change(browser, issue, labels=[str(foreign.pk)])
    assert response.status_code == 200
    assert "labels" in response.context["adminform"].form.errors

    # Nor when adding one.
    response = browser.post(
        url(Issue, "add"),
        {
            "project": world.project.pk,
            "title": "Mixed labels",
            "type": "task",
            "priority": "medium",
            "status": "open",
            "labels": [foreign.pk],
        },
    )
    assert "labels" in response.context["adminform"].form.errors

    # An archived project takes no new issue.
    archived = ProjectFactory(workspace=world.acme, status=Project.Status.ARCHIVED)
    response = browser.post(
        url(Issue, "add"),
        {
            "project": archived.pk,
            "title": "Too late",
            "type": "task",
            "priority": "medium",
            "status": "open",
        },
    )
    assert response.status_code == 200
    assert "archived" in response.content.decode()

    assert not new_events()
    assert Issue.objects.count() == 1
    issue.refresh_from_db()
    assert issue.assignee is None
    assert sorted(issue.labels.values_list("name", flat=True)) == ["engine", "urgent"]


def test_an_archived_projects_issues_are_read_only(browser, world, issue):
    page = browser.get(url(Issue, "change", issue.pk))
    data = form_data(page)
    Project.objects.filter(pk=world.project.pk).update(status=Project.Status.ARCHIVED)

    assert browser.get(url(Issue, "change", issue.pk)).status_code == 200  # view only
    data.update(status="closed")
    assert browser.post(url(Issue, "change", issue.pk), data).status_code == 403
    assert browser.post(url(Issue, "delete", issue.pk), {"post": "yes"}).status_code == 403
    response = browser.post(
        url(Issue, "changelist"),
        {"action": "delete_selected", "_selected_action": [str(issue.pk)], "post": "yes"},
    )
    assert response.status_code == 403
    issue.refresh_from_db()
    assert issue.status == "open"
    assert not new_events()


def test_deleting_issues_in_the_admin_records_the_events(browser, root, world, issue):
    other = make_issue(world.project, world.owner, title="Other", status="closed")
    third = make_issue(world.project, world.owner, title="Third")

    assert browser.post(url(Issue, "delete", issue.pk), {"post": "yes"}).status_code == 302
    response = browser.post(
        url(Issue, "changelist"),
        {"action": "delete_selected", "_selected_action": [str(other.pk)], "post": "yes"},
    )
    assert response.status_code == 302

    assert list(Issue.objects.values_list("pk", flat=True)) == [third.pk]
    assert counts(world.project) == {"open": 1, "closed": 0}
    deleted = [e for e in new_events() if e.type == "issue.deleted"]
    assert [e.data["issue"]["id"] for e in deleted] == [issue.pk, other.pk]
    assert all(e.actor_id == root.pk for e in deleted)
    # Numbers are never reused.
    assert make_issue(world.project, world.owner).number == 4


# Labels -------------------------------------------------------------------------------------


def test_labels_added_changed_and_deleted_in_the_admin_record_events(browser, root, world):
    response = browser.post(
        url(Label, "add"),
        {"project": world.project.pk, "name": "docs", "color": "#00ff00", "description": ""},
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    label = Label.objects.get(name="docs")
    assert (label.project, label.color) == (world.project, "#00ff00")
    created = Event.objects.get(type="label.created")
    assert created.data["label"]["id"] == label.pk
    assert created.actor_id == root.pk

    page = browser.get(url(Label, "change", label.pk))
    data = form_data(page)
    data.update(name="documentation", color="#0000ff")
    assert browser.post(url(Label, "change", label.pk), data).status_code == 302
    label.refresh_from_db()
    assert (label.name, label.color) == ("documentation", "#0000ff")
    updated = Event.objects.get(type="label.updated")
    assert updated.changes == {
        "name": {"previous": "docs", "current": "documentation"},
        "color": {"previous": "#00ff00", "current": "#0000ff"},
    }

    assert browser.post(url(Label, "delete", label.pk), {"post": "yes"}).status_code == 302
    assert not Label.objects.filter(pk=label.pk).exists()
    assert Event.objects.get(type="label.deleted").data["label"]["name"] == "documentation"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"name": "engine"}, "name"),  # taken in this project
        ({"color": "red"}, "color"),
        ({"color": "#12345"}, "color"),
        ({"name": ""}, "name"),
    ],
)
def test_the_label_form_keeps_the_services_rules(browser, world, issue, changes, field):
    data = {"project": world.project.pk, "name": "fresh", "color": "#123456", "description": ""}
    response = browser.post(url(Label, "add"), {**data, **changes})
    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors

    # Renaming onto a taken name, with the project read-only on the change page.
    urgent = Label.objects.get(project=world.project, name="urgent")
    page = browser.get(url(Label, "change", urgent.pk))
    response = browser.post(url(Label, "change", urgent.pk), {**form_data(page), **changes})
    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    assert not Event.objects.filter(type__startswith="label.").exists()
    assert sorted(Label.objects.values_list("name", flat=True)) == ["engine", "urgent"]


def test_the_same_label_name_is_fine_in_another_project(browser, world, issue):
    response = browser.post(
        url(Label, "add"),
        {"project": world.other_project.pk, "name": "engine", "color": "#123456"},
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Label.objects.filter(name="engine").count() == 2


def test_label_bulk_delete_and_archived_labels(browser, world, issue):
    engine, urgent = Label.objects.get(name="engine"), Label.objects.get(name="urgent")
    response = browser.post(
        url(Label, "changelist"),
        {"action": "delete_selected", "_selected_action": [str(engine.pk)], "post": "yes"},
    )
    assert response.status_code == 302
    assert Event.objects.get(type="label.deleted").data["label"]["name"] == "engine"
    assert list(issue.labels.values_list("name", flat=True)) == ["urgent"]

    Project.objects.filter(pk=world.project.pk).update(status=Project.Status.ARCHIVED)
    page = browser.get(url(Label, "change", urgent.pk))
    assert page.status_code == 200  # view only
    data = {"name": "renamed", "color": "#000000", "description": ""}
    assert browser.post(url(Label, "change", urgent.pk), data).status_code == 403
    assert browser.post(url(Label, "delete", urgent.pk), {"post": "yes"}).status_code == 403
    response = browser.post(
        url(Label, "changelist"),
        {"action": "delete_selected", "_selected_action": [str(urgent.pk)], "post": "yes"},
    )
    assert response.status_code == 403
    response = browser.post(
        url(Label, "add"), {"project": world.project.pk, "name": "late", "color": "#000000"}
    )
    assert "archived" in response.content.decode()
    assert list(Label.objects.values_list("name", flat=True)) == ["urgent"]
    assert Event.objects.filter(type__startswith="label.").count() == 1
