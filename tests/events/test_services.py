"""The event log's floor: recording in the change's transaction, the consumers after commit,
the one update helper, and the purge."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from collab.api.exceptions import Conflict
from events import services
from events.models import Event, EventLogState
from notifications.models import Delivery
from projects.models import Project
from tests.factories import WebhookFactory

HEARD: list[int] = []


def consumer(event_ids: list[int]) -> None:
    HEARD.extend(event_ids)


@pytest.fixture
def heard(settings):
    HEARD.clear()
    settings.EVENT_LOG_CONSUMERS = ["tests.events.test_services.consumer"]
    yield HEARD
    HEARD.clear()


def record(**extra) -> Event:
    return services.event_record(type="project.updated", workspace_id=1, data={}, **extra)


def test_recording_outside_a_transaction_is_refused(transactional_db):
    with pytest.raises(RuntimeError, match="inside the transaction"):
        record()
    assert not Event.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_consumers_hear_of_an_event_once_its_transaction_commits(heard):
    with transaction.atomic():
        event = record(project_id=7, actor=3)
        assert heard == []
    assert heard == [event.pk]
    assert Event.objects.values_list("project_id", "actor_id").get(pk=event.pk) == (7, 3)


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_change_leaves_no_event_and_tells_no_one(heard):
    with pytest.raises(ValueError), transaction.atomic():
        record()
        raise ValueError("the change failed")
    assert heard == []
    assert not Event.objects.exists()


def test_changes_diff_names_only_what_changed():
    before = {"name": "a", "color": "#fff", "description": None}
    after = {"name": "b", "color": "#fff", "description": ""}
    assert services.changes_diff(before, after) == {
        "name": {"previous": "a", "current": "b"},
        "description": {"previous": None, "current": ""},
    }
    assert services.changes_diff(before, dict(before)) == {}


def _update(project, **kwargs):
    return services.model_update(
        project,
        snapshot=lambda project: {"name": project.name, "description": project.description},
        event_type=kwargs.pop("event_type", "project.updated"),
        payload=lambda project: {"project": {"id": project.pk, "name": project.name}},
        workspace_id=project.workspace_id,
        project_id=project.pk,
        actor=kwargs.pop("actor", None),
        **kwargs,
    )


def test_model_update_saves_and_records_one_event_with_the_changes(world):
    project = world.project
    with transaction.atomic(), _update(project, actor=world.owner) as update:
        project.name = "Renamed"
    assert update.changes == {"name": {"previous": "Rocket", "current": "Renamed"}}
    assert Project.objects.get(pk=project.pk).name == "Renamed"
    event = Event.objects.get(type="project.updated")
    assert event.project_id == project.pk
    assert event.actor_id == world.owner.pk
    assert event.data == {"project": {"id": project.pk, "name": "Renamed"}}
    assert event.changes == update.changes


def test_model_update_without_a_change_saves_nothing_and_records_nothing(world):
    project = world.project
    stamp = Project.objects.get(pk=project.pk).updated_at
    with transaction.atomic(), _update(project) as update:
        project.name = "Rocket"
    assert update.changes == {}
    assert Project.objects.get(pk=project.pk).updated_at == stamp
    assert not Event.objects.exists()


def test_model_update_refused_in_its_block_saves_nothing(world):
    project = world.project
    with pytest.raises(Conflict), transaction.atomic(), _update(project):
        project.name = "Half done"
        raise Conflict("not now")
    assert Project.objects.get(pk=project.pk).name == "Rocket"
    assert not Event.objects.exists()


def test_model_update_hidden_changes_and_the_kind_chosen_from_the_changes(world):
    project = world.project

    def kind(changes):
        return "project.deleted" if "secret" in changes else "project.updated"

    with transaction.atomic(), _update(project, event_type=kind) as update:
        update.hide("secret")
    event = Event.objects.get()
    assert event.type == "project.deleted"
    assert event.changes == {"secret": {"previous": "[hidden]", "current": "[hidden]"}}


def test_purge_drops_old_events_with_their_deliveries_and_moves_the_mark_up_only(world):
    webhook = WebhookFactory(project=world.project)
    with transaction.atomic():
        old = [record() for _ in range(3)]
        recent = record()
    Event.objects.filter(pk__in=[event.pk for event in old]).update(
        created_at=timezone.now() - timedelta(days=100)
    )
    Delivery.objects.create(webhook=webhook, event=old[0])
    Delivery.objects.create(webhook=webhook, event=recent)

    assert services.events_purge(older_than_days=90) == 3
    assert list(Event.objects.values_list("pk", flat=True)) == [recent.pk]
    assert list(Delivery.objects.values_list("event_id", flat=True)) == [recent.pk]
    assert EventLogState.objects.get().purged_through_id == old[-1].pk

    assert services.events_purge(older_than_days=90) == 0
    EventLogState.objects.update(purged_through_id=recent.pk + 100)
    Event.objects.filter(pk=recent.pk).update(created_at=timezone.now() - timedelta(days=100))
    assert services.events_purge(older_than_days=90) == 1
    assert EventLogState.objects.get().purged_through_id == recent.pk + 100
