"""Issue lists load their labels in batch: a page of 50 issues carrying 3 labels each costs
the same number of queries as a page of 5 (STYLE.md, "What the anchors agree on", 4)."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from events.models import Event
from issues import selectors, services
from issues.models import Issue, Label
from tests.conftest import client_for
from tests.factories import make_issue

LABELS = ["backend", "urgent", "ui"]


def grow_issues(world, count: int) -> None:
    for n in range(Issue.objects.filter(project=world.project).count(), count):
        make_issue(
            world.project,
            world.owner,
            title=f"Issue {n}",
            assignee_id=world.developer.pk,
            labels=LABELS,
        )


def grow_history(issue, world, count: int) -> None:
    """Changes of the title until the issue's history has ``count`` rows."""
    for n in range(issue.history.count(), count):
        services.issue_update(issue=issue, actor=world.owner, title=f"Title {n}")


def page(client, path: str, per_page: int) -> tuple[int, list[str]]:
    separator = "&" if "?" in path else "?"
    with CaptureQueriesContext(connection) as captured:
        response = client.get(f"{path}{separator}per_page={per_page}")
    assert response.status_code == 200, response.content
    body = response.json()
    assert len(body["data"]) == per_page
    assert body["meta"]["total"] == per_page
    return len(captured), [query["sql"] for query in captured.captured_queries]


def assert_same(small, large) -> None:
    (small_count, small_sql), (large_count, large_sql) = small, large
    assert large_count == small_count, "\n".join(
        ["queries for 5 rows:", *small_sql, "", "queries for 50 rows:", *large_sql]
    )


@pytest.mark.parametrize(
    "query",
    [
        "",
        "?status=open",
        "?status=open,in_progress&sort=-priority",
        "?labels=backend",
        "?labels=backend,urgent,ui",
        "?assignee={developer}",
        "?assignee=dev@acme.test",
        "?assignee=me",
        "?q=issue&type=task&priority=medium",
    ],
)
@pytest.mark.parametrize("where", ["project", "global"])
def test_issue_list_query_count_does_not_grow_with_the_page(world, where, query):
    base = f"/v1/projects/{world.project.pk}/issues" if where == "project" else "/v1/issues"
    path = base + query.format(developer=world.developer.pk)
    # "me" is the caller: the developer is the assignee of every issue.
    client = client_for(world.developer)
    grow_issues(world, 5)
    # The first call of a key records its use (once a minute): keep it out of the count.
    client.get(path)

    small = page(client, path, 5)
    grow_issues(world, 50)
    large = page(client, path, 50)

    assert_same(small, large)
    assert all(len(item["labels"]) == 3 for item in client.get(path).json()["data"])


def test_history_query_count_does_not_grow_with_the_page(world):
    issue = make_issue(world.project, world.owner, title="Busy", labels=LABELS)
    path = f"/v1/issues/{issue.pk}/history"
    client = client_for(world.viewer)
    grow_history(issue, world, 5)
    client.get(path)

    small = page(client, path, 5)
    grow_history(issue, world, 50)
    large = page(client, path, 50)

    assert_same(small, large)


def test_label_list_query_count_does_not_grow_with_the_page(world):
    path = f"/v1/projects/{world.project.pk}/labels"
    client = client_for(world.viewer)

    def grow(count: int) -> None:
        for n in range(Label.objects.filter(project=world.project).count(), count):
            Label.objects.create(project=world.project, name=f"label-{n}")

    grow(5)
    client.get(path)
    small = page(client, path, 5)
    grow(50)
    large = page(client, path, 50)
    assert_same(small, large)


# Writes. Counted through the test client, inside the test's transaction, after a warm-up call
# (a key's first call records its use). What is counted is what production sends, but for its
# BEGIN and COMMIT (never counted) and the savepoints a transaction opened inside the test's
# makes (a change's read under lock, issues.services.issue_locked), which production makes
# only inside another transaction (an idempotent or conditional request's). The services'
# own transactions make none (issues.services._atomic). Issue 16's ceilings, on PostgreSQL:
CREATE_QUERIES = 6  # key, project and role, [assignee], [labels], number and id, the writes
PATCH_QUERIES = 4  # key, issue locked with its labels and role, [assignee | labels], writes
# The writes go as one statement on PostgreSQL (collab.db.writebatch). SQLite has no
# data-modifying WITH: it sends them one by one, up to 4 more for a create (the row, its label
# links, its counter, its history row, its event) and 5 for a change (the row, the links gone,
# the links made, the counters, the history rows, the event).
SQLITE_MORE = {"create": 4, "patch": 5}
# Labels named for the first time are made, then read again (their ids): two more statements.
NEW_LABELS = 2


def ceiling(kind: str, extra: int = 0) -> int:
    budget = {"create": CREATE_QUERIES, "patch": PATCH_QUERIES}[kind] + extra
    return budget if connection.vendor == "postgresql" else budget + SQLITE_MORE[kind]


def _counted(call) -> tuple[object, list[str]]:
    """The queries of a request, but for the rate limiter's (in the database only without
    Redis, and the same for every request)."""
    with CaptureQueriesContext(connection) as captured:
        response = call()
    queries = [query["sql"] for query in captured.captured_queries]
    return response, [
        sql for sql in queries if "ratelimitcounter" not in sql and not _SAVEPOINT.match(sql)
    ]


_SAVEPOINT = re.compile(r"(RELEASE |ROLLBACK TO )?SAVEPOINT ")


def test_a_create_costs_a_fixed_number_of_queries_and_answers_what_a_read_gives(world):
    client = client_for(world.owner)
    path = f"/v1/projects/{world.project.pk}/issues"
    labels = ["beta", "Alpha", "gamma", "Zed", "_under"]  # names whose order is the database's
    client.post(path, {"title": "Warm", "labels": labels}, format="json")
    response, queries = _counted(
        lambda: client.post(path, {"title": "Counted", "labels": labels}, format="json")
    )
    assert response.status_code == 201, response.content
    assert len(queries) <= ceiling("create"), "\n".join(queries)
    created = response.json()["data"]
    read = client.get(f"/v1/issues/{created['id']}").json()["data"]
    assert created == read, "the answer is built without reading back: it must be the read"
    payload = Event.objects.filter(type="issue.created").latest("id").data["issue"]
    assert payload == read


def test_a_patch_costs_a_fixed_number_of_queries_and_answers_what_a_read_gives(world):
    client = client_for(world.owner)
    issue = make_issue(world.project, world.owner, title="Before", labels=["b", "A"])
    client.patch(f"/v1/issues/{issue.pk}", {"title": "Warm"}, format="json")
    response, queries = _counted(
        lambda: client.patch(f"/v1/issues/{issue.pk}", {"title": "After"}, format="json")
    )
    assert response.status_code == 200, response.content
    assert len(queries) <= ceiling("patch"), "\n".join(queries)
    read = client.get(f"/v1/issues/{issue.pk}").json()["data"]
    assert response.json()["data"] == read
    relabelled = client.patch(
        f"/v1/issues/{issue.pk}", {"labels": ["zeta", "Beta", "alpha"]}, format="json"
    )
    assert relabelled.json()["data"] == client.get(f"/v1/issues/{issue.pk}").json()["data"]
    unchanged = client.patch(f"/v1/issues/{issue.pk}", {"title": "After"}, format="json")
    assert unchanged.json()["data"] == client.get(f"/v1/issues/{issue.pk}").json()["data"]


@pytest.mark.parametrize(
    ("case", "extra"),
    [
        ("plain", 0),
        ("labels", 0),
        ("assignee", 0),
        ("labels and assignee", 0),
        ("closed, with every field", 0),
        ("a new label", NEW_LABELS),
    ],
)
def test_each_kind_of_create_stays_within_the_budget(world, case, extra):
    client = client_for(world.developer)
    path = f"/v1/projects/{world.project.pk}/issues"
    client.post(path, {"title": "Warm", "labels": ["backend", "ui"]}, format="json")
    body = {
        "plain": {"title": "Plain"},
        "labels": {"title": "Labelled", "labels": ["ui", "backend"]},
        "assignee": {"title": "Assigned", "assignee_id": world.viewer.pk},
        "labels and assignee": {
            "title": "Both",
            "labels": ["backend"],
            "assignee_id": world.developer.pk,
        },
        "closed, with every field": {
            "title": "Everything",
            "description": "All of it",
            "type": "bug",
            "priority": "critical",
            "status": "closed",
            "assignee_id": world.owner.pk,
            "labels": ["ui"],
        },
        "a new label": {"title": "Fresh", "labels": ["backend", "brand-new"]},
    }[case]
    response, queries = _counted(lambda: client.post(path, body, format="json"))
    assert response.status_code == 201, response.content
    assert len(queries) <= ceiling("create", extra), "\n".join(queries)
    created = response.json()["data"]
    assert created == client.get(f"/v1/issues/{created['id']}").json()["data"]


@pytest.mark.parametrize(
    ("case", "extra"),
    [
        ("title", 0),
        ("status", 0),
        ("status and priority", 0),
        ("labels", 0),
        ("assignee", 0),
        ("nothing new", 0),
        ("a new label", NEW_LABELS),
    ],
)
def test_each_kind_of_patch_stays_within_the_budget(world, case, extra):
    client = client_for(world.developer)
    issue = make_issue(world.project, world.owner, title="Before", labels=["backend", "ui"])
    make_issue(world.project, world.owner, title="Other", labels=["docs"])
    path = f"/v1/issues/{issue.pk}"
    client.patch(path, {"title": "Warm"}, format="json")
    body = {
        "title": {"title": "After"},
        "status": {"status": "closed"},
        "status and priority": {"status": "in_progress", "priority": "high"},
        "labels": {"labels": ["docs", "ui"]},
        "assignee": {"assignee_id": world.viewer.pk},
        "nothing new": {"title": "Warm", "labels": ["ui", "backend"]},
        "a new label": {"labels": ["ui", "brand-new"]},
    }[case]
    response, queries = _counted(lambda: client.patch(path, body, format="json"))
    assert response.status_code == 200, response.content
    assert len(queries) <= ceiling("patch", extra), "\n".join(queries)
    assert response.json()["data"] == client.get(path).json()["data"]


def test_the_compiled_label_reads_answer_what_the_orm_answers(world):
    """issues.selectors.labels_named, compiled once per number of names, for every number up
    to the most it compiles and one past it (which the ORM reads), names found or not."""
    for n in range(12):
        Label.objects.create(project=world.project, name=f"L{n:02}")
    Label.objects.create(project=world.other_project, name="L00")
    for count in range(selectors.LABELS_COMPILED_MAX + 2):
        names = [f"L{n:02}" for n in range(count - 1, -1, -1)] + ["absent"] * (count > 3)
        names = list(dict.fromkeys(names))
        expected = Label.objects.filter(project=world.project, name__in=names).order_by("name")
        found = selectors.labels_named(project_id=world.project.pk, names=names)
        assert [(label.pk, label.name, label.color, label.created_at) for label in found] == [
            (label.pk, label.name, label.color, label.created_at) for label in expected
        ], names
    with CaptureQueriesContext(connection) as captured:
        selectors.labels_named(project_id=world.project.pk, names=["L01", "L02"])
    assert len(captured) == 1
