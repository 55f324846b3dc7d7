"""``PreparedQuery`` (collab/db/prepared.py): compiled once, it answers what the ORM answers
for every call's values, converts values as the ORM does, and refuses what it cannot do."""

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Subquery
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.authentication import api_key_with_user
from accounts.models import ApiKey, Membership
from collab.db.prepared import PreparedQuery, Statement
from projects.models import Project, ProjectMember
from tests.factories import ProjectFactory, make_api_key


def project_rows(pk, user_id):
    return (
        Project.objects.filter(pk=pk)
        .annotate(
            role=Subquery(
                Membership.objects.filter(
                    workspace=OuterRef("workspace_id"), user_id=user_id
                ).values("role")[:1]
            ),
            on_team=Exists(ProjectMember.objects.filter(project=OuterRef("pk"), user_id=user_id)),
        )
        .values("id", "name", "visibility", "created_at", "role", "on_team")
    )


@pytest.fixture
def query():
    return PreparedQuery(project_rows, pk=int, user_id=int)


def test_it_answers_what_the_orm_answers_for_every_call(world, query):
    internal = ProjectFactory(workspace=world.acme, visibility="internal", created_by=world.owner)
    cases = [
        (project.pk, user.pk)
        for project in (world.project, world.other_project, internal)
        for user in (world.owner, world.developer, world.viewer, world.outsider)
    ] + [(10**9, world.owner.pk)]
    for pk, user_id in cases:
        assert query.rows(pk=pk, user_id=user_id) == list(project_rows(pk, user_id))
    row = query.rows(pk=world.project.pk, user_id=world.developer.pk)[0]
    # Converted as the ORM converts: an aware datetime and a real boolean.
    assert row["created_at"] == world.project.created_at and row["created_at"].tzinfo
    assert row["on_team"] is True and row["role"] == "developer"


def test_it_runs_one_query_per_call(world, query):
    query.rows(pk=world.project.pk, user_id=world.owner.pk)
    with CaptureQueriesContext(connection) as captured:
        query.rows(pk=world.other_project.pk, user_id=world.owner.pk)
    assert len(captured) == 1
    assert str(world.other_project.pk) in captured[0]["sql"]


def test_each_thread_compiles_for_its_own_connection(world, query):
    assert query.rows(pk=world.project.pk, user_id=world.owner.pk)
    mine = query._compiled()
    seen = []

    def other_thread():
        try:
            # Compiled there for that thread's connection, without running it (outside the
            # test's transaction, SQLite would wait on the test's lock).
            seen.append((query.alias, query._compiled()))
        finally:
            connection.close()

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    [(alias, theirs)] = seen
    assert alias == "default" and theirs is not mine
    assert theirs.sql == mine.sql
    assert query._compiled() is mine


def test_json_and_datetimes_of_an_api_key(world):
    key = make_api_key(world.owner, ["issues:read", "projects:write"], name="json")
    stored = ApiKey.objects.get(name="json")
    loaded = api_key_with_user(stored.key_hash)
    assert loaded.scopes == ["issues:read", "projects:write"]
    assert loaded.pk == stored.pk and loaded.created_at == stored.created_at
    assert loaded.user == world.owner and loaded.user.email == world.owner.email
    assert loaded.user.tier == world.owner.tier
    assert api_key_with_user("0" * 64) is None
    assert key.startswith("clb_")


def test_revocation_and_expiry_are_read_on_every_call(world):
    make_api_key(world.owner, ["issues:read"], name="short")
    stored = ApiKey.objects.get(name="short")
    assert api_key_with_user(stored.key_hash).revoked_at is None
    ApiKey.objects.filter(pk=stored.pk).update(
        revoked_at=timezone.now(), expires_at=timezone.now() - timedelta(seconds=1)
    )
    loaded = api_key_with_user(stored.key_hash)
    assert loaded.is_revoked and loaded.is_expired()


def test_wrong_parameters_are_refused(world, query):
    with pytest.raises(TypeError):
        query.rows(pk=world.project.pk)
    with pytest.raises(TypeError):
        query.rows(pk=str(world.project.pk), user_id=world.owner.pk)
    with pytest.raises(TypeError):
        PreparedQuery(project_rows, pk=float, user_id=int)


def test_a_parameter_the_compiler_rewrites_is_refused_when_compiled(world):
    text = PreparedQuery(
        lambda name: Project.objects.filter(name__icontains=name).values("id"), name=str
    )
    with pytest.raises(ValueError, match="name"):
        text.rows(name="Rocket")


def test_a_string_written_into_a_parameter_is_replaced_within_it(world):
    """``Statement(within=)``: a stand-in the query writes into a parameter of its own (here
    ``%name%``) is replaced there by each call's value."""
    token = "\x00name\x00"
    named = Project.objects.filter(name__icontains=token).values_list("pk")
    statement = Statement(named, {}, within={"name": token})
    for name in (world.project.name[1:5], world.other_project.name[:3], "no such name"):
        expected = Project.objects.filter(name__icontains=name).values_list("pk", flat=True)
        assert {pk for (pk,) in statement.rows({"name": name})} == set(expected)
    with pytest.raises(ValueError, match="other"):  # a stand-in that reached no parameter
        Statement(named, {}, within={"name": token, "other": "\x00other\x00"})


def test_model_instances_are_refused():
    plain = PreparedQuery(lambda pk: Project.objects.filter(pk=pk), pk=int)
    with pytest.raises(TypeError):
        plain.rows(pk=1)


def locked_name(pk):
    return Project.objects.select_for_update().filter(pk=pk).values("name")


def test_a_locking_read_runs_only_in_a_transaction(transactional_db, world):
    query = PreparedQuery(locked_name, pk=int)
    with pytest.raises(TransactionManagementError):
        query.rows(pk=world.project.pk)  # not even the first call, which compiles
    with transaction.atomic(), CaptureQueriesContext(connection) as captured:
        assert query.rows(pk=world.project.pk) == [{"name": world.project.name}]
    with pytest.raises(TransactionManagementError):
        query.rows(pk=world.project.pk)  # nor one after it compiled
    if connection.vendor == "postgresql":
        assert captured[-1]["sql"].endswith("FOR UPDATE"), captured[-1]["sql"]
