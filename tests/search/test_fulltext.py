"""Full-text ``q`` on the issue lists: the query language, relevance, highlights, and the same
answers on the embedded default (SQLite FTS5) as on PostgreSQL."""

import json

import pytest

from collab.db import fulltext
from tests.conftest import assert_error, assert_ok
from tests.factories import make_issue
from tests.liveserver import embedded_env, python_run

from .corpus import QUERIES, TITLES, found, make_corpus

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus(world):
    return make_corpus(world.project, world.owner)


def listed(api, params):
    return assert_ok(api.owner.get(f"/v1/projects/{api.project.pk}/issues", params))


@pytest.fixture
def api(api, world):
    api.project = world.project
    return api


def test_parse_reads_words_phrases_prefixes_and_exclusions():
    query = fulltext.parse('Login "known  issue" auth* -flaky -"time out" log-in !!! ""')
    assert [(t.words, t.prefix, t.excluded) for t in query.terms] == [
        (("login",), False, False),
        (("known", "issue"), False, False),
        (("auth",), True, False),
        (("flaky",), False, True),
        (("time", "out"), False, True),
        (("log", "in"), False, False),
    ]
    assert not fulltext.parse('!!! -- * ""')
    assert len(fulltext.parse(" ".join(f"w{n}" for n in range(40))).terms) == fulltext.MAX_TERMS


@pytest.mark.parametrize("text", sorted(QUERIES))
def test_each_query_finds_what_it_should(api, corpus, text):
    body = listed(api, {"q": text, "per_page": 100})
    assert found(corpus, body["data"]) == QUERIES[text]
    assert body["meta"]["total"] == len(QUERIES[text])


def test_a_query_of_punctuation_alone_finds_nothing_and_an_empty_one_filters_nothing(api, corpus):
    assert listed(api, {"q": "!!!"})["meta"]["total"] == 0
    assert listed(api, {"q": ""})["meta"]["total"] == len(TITLES)


def test_q_combines_with_the_other_filters(api, world, corpus):
    api.owner.patch(f"/v1/issues/{corpus['failing']}", {"status": "closed"}, format="json")
    assert found(corpus, listed(api, {"q": "fails", "status": "closed"})["data"]) == {"failing"}
    assert found(corpus, listed(api, {"q": "fails", "status": "open"})["data"]) == {
        "login",
        "flaky",
    }
    everywhere = assert_ok(api.owner.get("/v1/issues", {"q": "fails -invoice"}))
    assert found(corpus, everywhere["data"]) == {"login", "failing"}


def test_the_document_follows_edits_and_deletes(api, corpus):
    issue = corpus["authors"]
    api.owner.patch(f"/v1/issues/{issue}", {"title": "Profile page is fast"}, format="json")
    assert found(corpus, listed(api, {"q": "profile"})["data"]) == {"authors"}
    assert found(corpus, listed(api, {"q": "slow"})["data"]) == set()
    api.owner.delete(f"/v1/issues/{issue}")
    assert listed(api, {"q": "profile"})["meta"]["total"] == 0


def test_relevance_puts_a_title_match_before_a_description_match(api, world, corpus):
    make_issue(world.project, world.owner, title="Charts", description="Nothing else here.")
    body = listed(api, {"q": "charts", "sort": "relevance"})
    titles = [row["title"] for row in body["data"]]
    assert titles == ["Charts", TITLES["emoji"][0]]
    # Without q, relevance is the default order (newest first).
    plain = listed(api, {"sort": "relevance", "per_page": 100})["data"]
    assert [row["id"] for row in plain] == sorted((row["id"] for row in plain), reverse=True)


def test_relevance_walks_by_cursor_as_by_page(api, world, corpus):
    for n in range(7):
        make_issue(world.project, world.owner, title=f"Charts {n}", description="charts " * n)
    params = {"q": "charts", "sort": "relevance", "per_page": 3}
    by_page = [
        row["id"] for page in (1, 2, 3) for row in listed(api, {**params, "page": page})["data"]
    ]
    by_cursor, cursor = [], None
    while True:
        body = listed(api, {**params, **({"cursor": cursor} if cursor else {})})
        by_cursor += [row["id"] for row in body["data"]]
        cursor = body["meta"]["next_cursor"]
        if not cursor:
            break
    assert by_cursor == by_page and len(by_page) == 8


def test_highlights_mark_the_words_and_escape_the_rest(api, corpus):
    body = listed(api, {"q": "script escaping", "highlight": "true"})
    [row] = body["data"]
    assert row["highlights"] == {
        "title": "&lt;<mark>script</mark>&gt;alert(1)&lt;/<mark>script</mark>&gt; in the title",
        "description": "<mark>Escaping</mark> is needed &amp; expected.",
    }
    assert row["title"] == TITLES["markup"][0]  # the record itself is unchanged
    # Without q there is nothing to mark; without highlight=true there is no key.
    assert all(r["highlights"] is None for r in listed(api, {"highlight": "true"})["data"])
    assert "highlights" not in listed(api, {"q": "script"})["data"][0]


def test_bad_highlight_and_sort_values_answer_400(api, corpus):
    for params in ({"highlight": "maybe"}, {"highlight": ""}, {"sort": "-relevance"}):
        error = assert_error(
            api.owner.get(f"/v1/projects/{api.project.pk}/issues", params), 400, "BAD_REQUEST"
        )
        assert set(error["details"]) == set(params)


def test_the_embedded_default_finds_the_same(tmp_path, embedded_database):
    """SQLite FTS5 under ./run answers every query of the corpus as PostgreSQL does."""
    env = embedded_env(tmp_path)
    embedded_database(tmp_path)
    script = (
        "import django, json; django.setup(); "
        "from tests.search.corpus import run_everywhere; print(json.dumps(run_everywhere()))"
    )
    done = python_run(env, script, timeout=300)
    done.check_returncode()
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    assert {query: set(keys) for query, keys in answers.items()} == QUERIES


def test_a_count_by_index_finds_what_a_count_finds_and_leaves_the_planner_as_it_was(world):
    from django.db import connection

    from issues.models import Issue

    make_issue(world.project, world.owner, title="Billing fails, bills pile up")
    make_issue(world.project, world.owner, title="The bill is wrong")
    make_issue(world.project, world.owner, title="Nothing")
    rows = Issue.objects.filter(project=world.project)
    for text in ("bill*", "bill* -wrong", "nothing", "zzz"):
        matching = rows.filter(fulltext.Matches(fulltext.parse(text)))
        assert fulltext.count_by_index(matching) == matching.count() == len(list(matching))
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SHOW enable_seqscan")
            assert cursor.fetchone()[0] == "on"


@pytest.mark.parametrize("in_transaction", [False, True])
def test_the_planner_is_set_for_each_statement_inside_alone(db, in_transaction):
    from contextlib import nullcontext

    from django.db import connection, transaction

    def shown() -> tuple[str, str]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('enable_indexscan'), current_setting('work_mem')"
            )
            return cursor.fetchone()

    if connection.vendor != "postgresql":
        pytest.skip("the planner's settings are PostgreSQL's")
    default = shown()
    assert default[1] != "12MB"
    with transaction.atomic() if in_transaction else nullcontext():
        with fulltext.planned("default", enable_indexscan=False, work_mem="12MB"):
            assert shown() == ("off", "12MB")
            assert shown() == ("off", "12MB")
        assert shown() == default == ("on", default[1])
    assert shown() == default
