"""Renaming or deleting a label changes the labels of every issue carrying it: each such issue
gets its ``labels`` history row and one ``issue.updated`` event, in the label's transaction,
exactly as if its labels had been edited one by one."""

import pytest
from django.db import DatabaseError

from events import services as event_services
from events.models import Event
from issues import services
from issues.models import Issue, IssueHistory, Label
from tests.conftest import assert_error, assert_ok
from tests.factories import make_issue


def label_url(label) -> str:
    return f"/v1/labels/{label.pk}"


def label_history(issue) -> list[tuple]:
    return list(
        IssueHistory.objects.filter(issue=issue, field="labels")
        .order_by("id")
        .values_list("old_value", "new_value", "actor_id")
    )


def issue_events(issue) -> list[Event]:
    return [
        event
        for event in Event.objects.filter(type="issue.updated").order_by("id")
        if event.data["issue"]["id"] == issue.pk
    ]


def record(client, issue) -> dict:
    return assert_ok(client.get(f"/v1/issues/{issue.pk}"))["data"]


@pytest.fixture
def carrying(world):
    """Two issues carrying "backend" (one with "ui" too), one without it, and an issue of
    another project carrying a label of the same name."""
    first = make_issue(world.project, world.owner, title="One", labels=["backend", "ui"])
    second = make_issue(world.project, world.owner, title="Two", labels=["backend"])
    other = make_issue(world.project, world.owner, title="Three", labels=["ui"])
    elsewhere = make_issue(world.other_project, world.outsider, title="Far", labels=["backend"])
    label = Label.objects.get(project=world.project, name="backend")
    return label, [first, second], other, elsewhere


def test_renaming_a_label_records_history_and_an_event_on_each_issue_carrying_it(
    api, world, carrying
):
    label, affected, other, elsewhere = carrying
    before = {issue.pk: record(api.owner, issue)["updated_at"] for issue in affected}
    events_before = Event.objects.count()

    response = api.developer.patch(label_url(label), {"name": "server"}, format="json")
    assert assert_ok(response)["data"]["name"] == "server"

    first, second = affected
    assert label_history(first) == [(["backend", "ui"], ["server", "ui"], world.developer.pk)]
    assert label_history(second) == [(["backend"], ["server"], world.developer.pk)]
    for issue in affected:
        data = record(api.owner, issue)
        assert "server" in data["labels"] and "backend" not in data["labels"]
        assert data["updated_at"] > before[issue.pk]
        [event] = issue_events(issue)
        assert event.data == {"issue": data}
        assert event.actor_id == world.developer.pk
        assert event.project_id == world.project.pk
        assert event.workspace_id == world.acme.pk
        assert event.changes == {
            "labels": {"previous": label_history(issue)[0][0], "current": data["labels"]}
        }
    # One label.updated, one issue.updated per affected issue, nothing for the others.
    assert Event.objects.count() == events_before + 1 + len(affected)
    for untouched in (other, elsewhere):
        assert label_history(untouched) == []
        assert issue_events(untouched) == []
    assert record(api.outsider, elsewhere)["labels"] == ["backend"]


def test_changing_only_colour_or_description_touches_no_issue(api, carrying):
    label, affected, _other, _elsewhere = carrying
    events_before = Event.objects.count()
    response = api.developer.patch(
        label_url(label), {"color": "#ff0000", "description": "Servers"}, format="json"
    )
    assert_ok(response)
    assert Event.objects.count() == events_before + 1
    assert Event.objects.order_by("id").last().type == "label.updated"
    for issue in affected:
        assert label_history(issue) == []


def test_deleting_a_label_records_history_and_an_event_on_each_issue_carrying_it(
    api, world, carrying
):
    label, affected, other, elsewhere = carrying
    events_before = Event.objects.count()

    assert_ok(api.owner.delete(label_url(label)))

    first, second = affected
    assert label_history(first) == [(["backend", "ui"], ["ui"], world.owner.pk)]
    assert label_history(second) == [(["backend"], [], world.owner.pk)]
    for issue in affected:
        data = record(api.owner, issue)
        assert "backend" not in data["labels"]
        [event] = issue_events(issue)
        assert event.data == {"issue": data}
        assert event.changes["labels"]["current"] == data["labels"]
    assert Event.objects.count() == events_before + 1 + len(affected)
    assert label_history(other) == [] and issue_events(other) == []
    assert record(api.outsider, elsewhere)["labels"] == ["backend"]


def test_an_unused_label_changes_no_issue(api, world):
    label = Label.objects.create(project=world.project, name="lonely")
    make_issue(world.project, world.owner, title="Bare")
    assert_ok(api.developer.patch(label_url(label), {"name": "alone"}, format="json"))
    assert_ok(api.owner.delete(label_url(label)))
    assert not IssueHistory.objects.filter(field="labels").exists()
    assert not Event.objects.filter(type="issue.updated").exists()


def test_a_rename_to_a_taken_name_changes_nothing(api, world, carrying):
    label, affected, _other, _elsewhere = carrying
    response = api.developer.patch(label_url(label), {"name": "ui"}, format="json")
    assert_error(response, 422, "VALIDATION_ERROR")
    assert Label.objects.get(pk=label.pk).name == "backend"
    for issue in affected:
        assert label_history(issue) == []
        assert issue_events(issue) == []


def test_history_and_events_share_the_label_change_transaction(world, carrying, monkeypatch):
    """A failure while recording the issues' events rolls the rename back entirely."""
    label, affected, _other, _elsewhere = carrying
    real = event_services.event_record
    calls = []

    def failing(**kwargs):
        calls.append(kwargs["type"])
        if kwargs["type"] == "issue.updated" and calls.count("issue.updated") == 2:
            raise DatabaseError("the event log is unavailable")
        return real(**kwargs)

    monkeypatch.setattr(services, "event_record", failing)
    history_before, events_before = IssueHistory.objects.count(), Event.objects.count()
    with pytest.raises(DatabaseError):
        services.label_update(label=label, actor=world.owner, name="server")
    assert Label.objects.get(pk=label.pk).name == "backend"
    assert (IssueHistory.objects.count(), Event.objects.count()) == (history_before, events_before)
    calls.clear()
    with pytest.raises(DatabaseError):
        services.label_delete(label=Label.objects.get(pk=label.pk), actor=world.owner)
    assert Label.objects.filter(pk=label.pk).exists()
    assert all(
        "backend" in issue.labels.values_list("name", flat=True)
        for issue in Issue.objects.filter(pk__in=[i.pk for i in affected])
    )


def test_many_issues_are_recorded_across_batches(world, monkeypatch):
    monkeypatch.setattr(services, "LABEL_CHANGE_BATCH", 3)
    issues = [
        make_issue(world.project, world.owner, title=f"#{n}", labels=["bulk"]) for n in range(7)
    ]
    label = Label.objects.get(project=world.project, name="bulk")
    services.label_update(label=label, actor=world.owner, name="heap")
    for issue in issues:
        assert label_history(issue) == [(["bulk"], ["heap"], world.owner.pk)]
        assert len(issue_events(issue)) == 1
