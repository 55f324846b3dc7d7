"""The replica router's decisions, and the compiled queries following them."""

import pytest
from django.db import router, transaction

from accounts.models import ApiKey
from collab.db import routers
from collab.db.routers import PrimaryReplicaRouter, ReplicaPinMiddleware
from events.models import Event
from idempotency.models import IdempotencyKey
from issues.models import Issue
from notifications.models import Delivery
from projects.models import Project
from ratelimits.models import RateLimitCounter


@pytest.fixture
def in_request():
    routers._state.in_request, routers._state.pinned = True, False
    yield
    routers._state.in_request, routers._state.pinned = False, False


def test_request_reads_go_to_the_replica_until_the_request_writes(in_request):
    chooser = PrimaryReplicaRouter()
    assert chooser.db_for_read(Issue) == "replica"
    assert chooser.db_for_read(Project) == "replica"
    assert chooser.db_for_write(Issue) == "default"
    assert chooser.db_for_read(Issue) == "default", "read your own writes"


@pytest.mark.django_db(transaction=True)
def test_reads_inside_a_transaction_use_the_primary(in_request):
    chooser = PrimaryReplicaRouter()
    with transaction.atomic():
        assert chooser.db_for_read(Issue) == "default"
    assert chooser.db_for_read(Issue) == "replica"


def test_who_may_do_what_and_the_event_log_are_read_from_the_primary(in_request):
    chooser = PrimaryReplicaRouter()
    assert chooser.db_for_read(ApiKey) == "default"
    for model in (Event, Delivery, IdempotencyKey, RateLimitCounter):
        assert chooser.db_for_read(model) == "default", model


def test_outside_requests_everything_reads_the_primary():
    chooser = PrimaryReplicaRouter()
    assert chooser.db_for_read(Issue) == "default"


def test_the_middleware_starts_each_request_unpinned_and_clears_after():
    seen = []

    def view(request):
        seen.append(PrimaryReplicaRouter().db_for_read(Issue))
        PrimaryReplicaRouter().db_for_write(Issue)
        seen.append(PrimaryReplicaRouter().db_for_read(Issue))

    routers.pin_to_primary()
    ReplicaPinMiddleware(view)(object())
    assert seen == ["replica", "default"]
    assert PrimaryReplicaRouter().db_for_read(Issue) == "default"


def test_only_the_primary_migrates():
    chooser = PrimaryReplicaRouter()
    assert chooser.allow_migrate("default", "issues")
    assert not chooser.allow_migrate("replica", "issues")


@pytest.mark.django_db
def test_a_prepared_query_compiles_for_the_database_the_router_picks(monkeypatch, world):
    from collab.db.prepared import PreparedQuery

    query = PreparedQuery(lambda pk: Project.objects.filter(pk=pk).values("name"), pk=int)
    assert query.rows(pk=world.project.pk) == [{"name": "Rocket"}]
    assert query.alias == "default"
    asked = []

    def db_for_read(model, **hints):
        asked.append(model)
        return "default"

    monkeypatch.setattr(router, "db_for_read", db_for_read)
    assert query.rows(pk=world.project.pk) == [{"name": "Rocket"}]
    assert asked == [Project], "each run asks the router where to read"


@pytest.mark.django_db
def test_a_prepared_locking_read_goes_to_the_database_for_writes(monkeypatch, world):
    """As Django sends a select_for_update() queryset: db_for_write, which pins the request."""
    from collab.db.prepared import PreparedQuery

    query = PreparedQuery(
        lambda pk: Project.objects.select_for_update().filter(pk=pk).values("name"), pk=int
    )
    asked = []

    def db_for(kind):
        def route(model, **hints):
            asked.append((kind, model))
            return "default"

        return route

    monkeypatch.setattr(router, "db_for_read", db_for("read"))
    monkeypatch.setattr(router, "db_for_write", db_for("write"))
    with transaction.atomic():
        for _ in range(2):
            assert query.rows(pk=world.project.pk) == [{"name": "Rocket"}]
    assert asked and {kind for kind, _model in asked} == {"write"}, asked
