"""collab.db.writebatch: writes sent together, one statement on PostgreSQL, one by one elsewhere."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from collab.db.writebatch import WriteBatch
from issues.models import Label


def label(world, name: str, **fields) -> Label:
    return Label(project=world.project, name=name, **fields)


def test_inserts_updates_deletes_and_statements_of_ones_own_go_together(world):
    doomed = Label.objects.create(project=world.project, name="doomed")
    kept = Label.objects.create(project=world.project, name="kept", description="old")
    Label.objects.create(project=world.project, name="other")
    new = [label(world, "one", description="100% new"), label(world, "two")]
    returned = label(world, "three")
    heard: list[int | None] = []
    batch = WriteBatch()
    batch.insert(new)
    batch.insert([returned], returning=True)
    batch.update(Label.objects.filter(pk=kept.pk), description="new")
    batch.delete(Label.objects.filter(pk=doomed.pk))
    batch.add(
        f"UPDATE {Label._meta.db_table} SET color = %s WHERE name = %s",  # noqa: S608
        ["#000000", "other"],
    )
    batch.on_run(lambda: heard.append(returned.pk))

    with transaction.atomic(), CaptureQueriesContext(connection) as captured:
        batch.run()

    statements = [query["sql"] for query in captured.captured_queries]
    statements = [sql for sql in statements if not sql.startswith(("SAVEPOINT", "RELEASE"))]
    assert len(statements) == (1 if connection.vendor == "postgresql" else 5), statements
    rows = dict(Label.objects.filter(project=world.project).values_list("name", "description"))
    assert rows == {"one": "100% new", "two": "", "three": "", "kept": "new", "other": ""}
    assert Label.objects.get(name="other").color == "#000000"
    assert returned.pk == Label.objects.get(name="three").pk
    assert heard == [returned.pk]
    assert not returned._state.adding and not new[0]._state.adding


def test_rows_with_their_keys_keep_them(world):
    first = Label.objects.create(project=world.project, name="first")
    given = label(world, "given")
    given.pk = first.pk + 1000
    batch = WriteBatch()
    batch.insert([given])
    with transaction.atomic():
        batch.run()
    assert Label.objects.get(pk=first.pk + 1000).name == "given"


def test_rows_with_and_without_keys_cannot_be_mixed(world):
    with_key = label(world, "a")
    with_key.pk = 10_000
    with pytest.raises(ValueError, match="all have their primary key"):
        WriteBatch().insert([with_key, label(world, "b")])


def test_an_empty_batch_sends_nothing_and_runs_once(world):
    batch = WriteBatch()
    batch.insert([])
    with CaptureQueriesContext(connection) as captured:
        batch.run()
        batch.run()
    assert captured.captured_queries == []
