"""Issue lists load their labels in batch: a page of 50 issues carrying 3 labels each costs
the same number of queries as a page of 5 (STYLE.md, "What the anchors agree on", 4)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from events.models import Event
from issues import services
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


# Writes. Counted through the test client, inside the test's transaction: the service's
# transaction shows as a SAVEPOINT and its RELEASE (in production BEGIN and COMMIT, which
# are not counted). The ceilings are today's; issue 16's targets (6 and 5) are lower.
CREATE_QUERIES = 11  # key, project, labels, number, issue, links, counter, history, event
PATCH_QUERIES = 10  # key, roles, issue, lock, labels, update, history, event


def _counted(call) -> tuple[object, list[str]]:
    """The queries of a request, but for the rate limiter's (in the database only without
    Redis, and the same for every request)."""
    with CaptureQueriesContext(connection) as captured:
        response = call()
    queries = [query["sql"] for query in captured.captured_queries]
    return response, [sql for sql in queries if "ratelimitcounter" not in sql]


def test_a_create_costs_a_fixed_number_of_queries_and_answers_what_a_read_gives(world):
    client = client_for(world.owner)
    path = f"/v1/projects/{world.project.pk}/issues"
    labels = ["beta", "Alpha", "gamma", "Zed", "_under"]  # names whose order is the database's
    client.post(path, {"title": "Warm", "labels": labels}, format="json")
    response, queries = _counted(
        lambda: client.post(path, {"title": "Counted", "labels": labels}, format="json")
    )
    assert response.status_code == 201, response.content
    assert len(queries) <= CREATE_QUERIES, "\n".join(queries)
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
    assert len(queries) <= PATCH_QUERIES, "\n".join(queries)
    read = client.get(f"/v1/issues/{issue.pk}").json()["data"]
    assert response.json()["data"] == read
    relabelled = client.patch(
        f"/v1/issues/{issue.pk}", {"labels": ["zeta", "Beta", "alpha"]}, format="json"
    )
    assert relabelled.json()["data"] == client.get(f"/v1/issues/{issue.pk}").json()["data"]
    unchanged = client.patch(f"/v1/issues/{issue.pk}", {"title": "After"}, format="json")
    assert unchanged.json()["data"] == client.get(f"/v1/issues/{issue.pk}").json()["data"]
