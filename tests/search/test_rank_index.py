"""PostgreSQL's rank indexes (RUM, collab.db.fulltext): built by the migration, read in rank
order by ``/v1/search`` and ``sort=relevance``, and the same hits without them.

"Without" is the extension dropped inside the test's transaction (rolled back after it), as a
database without RUM's package is: the ranking then falls back to the newest candidates."""

import importlib
import os
from types import SimpleNamespace

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from collab.db import fulltext
from search.schema import TABLES
from tests.conftest import assert_ok
from tests.factories import make_issue

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="RUM is PostgreSQL's"),
]

# Ranked the same by RUM's cover density and by ts_rank: each issue matches its queries more
# (a title's word over a description's, more occurrences over fewer) than the next.
CORPUS = (
    ("Rocket rocket launch", "rocket launch rocket launch rocket"),
    ("Rocket launch window", "the rocket"),
    ("Rocket", "nothing else"),
    ("Launch pad", "rocket rocket, a rocket, and a launch"),
    ("Pad lights", "one rocket, then a launch"),
    ("Unrelated", "nothing to see"),
)
QUERIES = ("rocket", "rocket launch", "rock*", '"rocket launch"', "rocket -pad", "launch")


@pytest.fixture
def rum(db, settings):
    """RUM here, and the ranking reading from it (SEARCH_RANK_INDEX: off by default)."""
    settings.SEARCH_RANK_INDEX = True
    if fulltext.rank_extension_state(connection) == "missing":
        if os.environ.get("CI") == "true":
            pytest.fail("CI runs with RUM: ./test installs postgresql-<version>-rum")
        pytest.skip("the RUM extension's package is not installed")
    # Off by default, the migration built none: made here, inside the test's transaction.
    for table in TABLES:
        fulltext.rank_index_make(connection, table, concurrently=False)
    fulltext.rank_index_forget()
    yield
    fulltext.rank_index_forget()


@pytest.fixture
def corpus(world, rum):
    # Numbers (and ids) run the other way from the rank: ordering by id would fail.
    return [
        make_issue(world.project, world.owner, title=title, description=description).pk
        for title, description in reversed(CORPUS)
    ][::-1]


def without_extension() -> None:
    """This transaction's database as one without RUM: the extension and its indexes go."""
    with connection.cursor() as cursor:
        cursor.execute("DROP EXTENSION rum CASCADE")
    fulltext.rank_index_forget()


def ranked(api, world, path: str, q: str) -> list[tuple[int, float | None]]:
    params = {"q": q, "per_page": 20}
    if path == "search":
        url = "/v1/search"
        params["project_id"] = world.project.pk
    else:
        url = f"/v1/projects/{world.project.pk}/issues"
        params["sort"] = "relevance"
    rows = assert_ok(api.owner.get(url, params))["data"]
    return [(row["id"], row.get("score")) for row in rows]


def test_the_indexes_are_rum_indexes(rum):
    assert fulltext.rank_index_ready(list(TABLES))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, am.amname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_am am ON am.oid = c.relam WHERE c.relname = ANY(%s) AND i.indisvalid",
            [[fulltext.rank_index_name(table) for table in TABLES]],
        )
        assert sorted(cursor.fetchall()) == sorted(
            (fulltext.rank_index_name(table), "rum") for table in TABLES
        )


@pytest.mark.django_db(transaction=True)  # CREATE INDEX CONCURRENTLY: no transaction around
def test_the_migration_builds_them_only_when_the_setting_is_on(settings):
    migration = importlib.import_module("search.migrations.0002_rank_indexes")
    editor = SimpleNamespace(connection=connection)
    settings.SEARCH_RANK_INDEX = False
    fulltext.rank_index_forget()
    migration.rank_indexes_make(None, editor)
    assert not fulltext.rank_index_built(list(TABLES))
    if fulltext.rank_extension_state(connection) == "missing":
        pytest.skip("the RUM extension's package is not installed")
    settings.SEARCH_RANK_INDEX = True
    try:
        migration.rank_indexes_make(None, editor)
        assert fulltext.rank_index_ready(list(TABLES))
    finally:
        migration.rank_indexes_drop(None, editor)
    assert not fulltext.rank_index_built(list(TABLES))


@pytest.mark.parametrize("path", ["search", "issues"])
def test_the_same_hits_with_and_without_the_extension(api, world, corpus, path):
    with_index = {q: ranked(api, world, path, q) for q in QUERIES}
    without_extension()
    assert not fulltext.rank_index_ready(list(TABLES))
    without = {q: ranked(api, world, path, q) for q in QUERIES}
    for q in QUERIES:
        ids = [pk for pk, _score in with_index[q]]
        assert ids == [pk for pk, _score in without[q]], q
        assert ids, q
        # No ties in this corpus, on either scale: the order is the ranking's, not a tie-break.
        if path == "search":
            for rows in (with_index[q], without[q]):
                scores = [score for _pk, score in rows]
                assert scores == sorted(scores, reverse=True) and len(set(scores)) == len(rows)
    assert [pk for pk, _ in with_index["rocket"]] == corpus[:5]
    assert [pk for pk, _ in with_index["rocket -pad"]] == corpus[:3]
    assert [pk for pk, _ in with_index['"rocket launch"']] == corpus[:2]


@pytest.mark.parametrize("path", ["/v1/search", "/v1/projects/{project}/issues?sort=relevance&"])
def test_a_page_is_read_from_the_index_in_rank_order(api, world, corpus, path):
    url = path.format(project=world.project.pk)
    url += ("&" if "?" in url else "?") + "q=rocket&per_page=2"
    with CaptureQueriesContext(connection) as queries:
        assert_ok(api.owner.get(url.replace("?&", "?").replace("&&", "&")))
    [page] = [
        q["sql"] for q in queries.captured_queries if "<=>" in q["sql"] and "LIMIT" in q["sql"]
    ]
    with connection.cursor() as cursor:
        # A few rows: the planner would read them all and sort them. As at a million rows, the
        # order must come from the index (whether it can is what is tested).
        cursor.execute("SET LOCAL enable_seqscan = off")
        if "issues" in path:  # (the view's small branches are sorted for the Merge Append)
            cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN " + page)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Scan using issues_issue_search_rank" in plan, plan
    assert "Order By: (search_document <=>" in plan, plan
    # Nothing sorts the issues above the index scan (a Merge Append merges its order).
    above = plan.split("Index Scan using issues_issue_search_rank")[0]
    assert "Sort  (" not in above and "Incremental Sort" not in above, plan


def test_a_cursor_walks_the_ranking_as_pages_do(api, world, corpus):
    params = {"q": "rocket", "sort": "relevance", "per_page": 2}
    url = f"/v1/projects/{world.project.pk}/issues"
    by_page = [
        row["id"]
        for page in (1, 2, 3)
        for row in assert_ok(api.owner.get(url, {**params, "page": page}))["data"]
    ]
    by_cursor, cursor = [], None
    while True:
        body = assert_ok(api.owner.get(url, {**params, **({"cursor": cursor} if cursor else {})}))
        by_cursor += [row["id"] for row in body["data"]]
        cursor = body["meta"]["next_cursor"]
        if not cursor:
            break
    assert by_cursor == by_page == corpus[:5]


def test_the_setting_turns_them_off(api, world, corpus, settings):
    settings.SEARCH_RANK_INDEX = False  # the default
    assert not fulltext.rank_index_ready(list(TABLES))
    with CaptureQueriesContext(connection) as queries:
        ranked(api, world, "search", "rocket")
    assert not any("<=>" in q["sql"] for q in queries.captured_queries)


@pytest.mark.django_db(transaction=True)  # CREATE INDEX CONCURRENTLY: no transaction around
def test_the_command_drops_shows_and_builds_them(rum, capsys):
    call_command("search_index", "--drop", verbosity=0)
    assert not fulltext.rank_index_ready(list(TABLES))
    call_command("search_index", "--status")
    assert "issues_issue: none" in capsys.readouterr().out
    call_command("search_index", verbosity=0)
    assert fulltext.rank_index_ready(list(TABLES))
    out = capsys.readouterr().out
    assert all(f"{table}: built" in out for table in TABLES)
    call_command("search_index", verbosity=0)
    assert "issues_issue: already there" in capsys.readouterr().out
    call_command("search_index", "--drop", verbosity=0)  # as the migration left it


def test_without_the_package_the_command_says_what_to_install(rum, monkeypatch):
    monkeypatch.setattr(fulltext, "rank_extension_state", lambda connection: "missing")
    with pytest.raises(CommandError, match="postgresql-<version>-rum"):
        call_command("search_index", verbosity=0)
