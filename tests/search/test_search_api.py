"""``GET /v1/search``: issues, pull requests and comments in one ranked list, each read as
its own list is (the projects the caller sees, the scopes of its credential)."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from comments.models import Comment
from comments.services import comment_create, comment_delete
from issues.services import issue_update
from projects.models import Project
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import ProjectFactory, PullRequestFactory, RepositoryFactory, make_issue

pytestmark = pytest.mark.django_db


@pytest.fixture
def found(world):
    """One of each kind that mentions "checkout", and a secret one in another workspace."""
    issue = make_issue(
        world.project,
        world.owner,
        title="Checkout times out",
        description="The <b>payment</b> step hangs after a while.",
    )
    other = make_issue(world.project, world.owner, title="Unrelated", description="Nothing.")
    repo = RepositoryFactory(project=world.project)
    pull = PullRequestFactory(
        repository=repo, title="Faster checks", description="Caches the checkout session."
    )
    on_issue = comment_create(parent=other, actor=world.owner, body="Also breaks checkout.")
    on_pull = comment_create(parent=pull, actor=world.developer, body="LGTM, checkout is fine.")
    secret = make_issue(world.other_project, world.outsider, title="Checkout secret plan")
    return {
        "issue": issue,
        "other": other,
        "pull": pull,
        "on_issue": on_issue,
        "on_pull": on_pull,
        "secret": secret,
    }


def search(client, **params):
    return assert_ok(client.get("/v1/search", params))


def kinds(body):
    return sorted((hit["type"], hit["id"]) for hit in body["data"])


def test_every_kind_is_found_with_its_parents_and_project(api, world, found):
    body = search(api.owner, q="checkout")
    assert kinds(body) == sorted(
        [
            ("issue", found["issue"].pk),
            ("pull_request", found["pull"].pk),
            ("comment", found["on_issue"]["id"]),
            ("comment", found["on_pull"]["id"]),
        ]
    )
    assert body["meta"]["total"] == 4
    by_kind = {(hit["type"], hit["id"]): hit for hit in body["data"]}
    issue = by_kind[("issue", found["issue"].pk)]
    assert issue["project_id"] == world.project.pk
    assert (issue["issue_id"], issue["pull_request_id"]) == (found["issue"].pk, None)
    assert issue["title"] == "Checkout times out"
    assert 0 < issue["score"] < 1
    pull = by_kind[("pull_request", found["pull"].pk)]
    assert (pull["issue_id"], pull["pull_request_id"]) == (None, found["pull"].pk)
    assert pull["snippet"] == "Caches the <mark>checkout</mark> session."
    comment = by_kind[("comment", found["on_pull"]["id"])]
    assert comment["title"] == "Faster checks"  # its parent's
    assert (comment["issue_id"], comment["pull_request_id"]) == (None, found["pull"].pk)


def test_best_match_first_a_title_weighs_more_than_a_body(api, found):
    body = search(api.owner, q="checkout")
    assert body["data"][0]["type"] == "issue"  # the only one with the word in its title
    scores = [hit["score"] for hit in body["data"]]
    assert scores == sorted(scores, reverse=True)
    oldest_first = search(api.owner, q="checkout", sort="created_at")
    assert [hit["id"] for hit in oldest_first["data"]][0] == found["issue"].pk


def test_without_sort_the_best_match_comes_first_not_the_newest(api, world):
    in_title = make_issue(world.project, world.owner, title="Invoice totals wrong")
    in_text = make_issue(world.project, world.owner, title="Rounding", description="invoice")
    ranked = search(api.owner, q="invoice")["data"]
    assert [hit["id"] for hit in ranked] == [in_title.pk, in_text.pk]
    assert ranked[0]["score"] > ranked[1]["score"]
    newest = search(api.owner, q="invoice", sort="-created_at")["data"]
    assert [hit["id"] for hit in newest] == [in_text.pk, in_title.pk]


def test_a_snippet_is_escaped_html_with_the_matches_marked(api, found):
    hit = search(api.owner, q="payment", type="issue")["data"][0]
    assert hit["snippet"] == "The &lt;b&gt;<mark>payment</mark>&lt;/b&gt; step hangs after a while."


def test_type_project_id_and_workspace_id_narrow_it(api, world, found):
    assert kinds(search(api.owner, q="checkout", type="comment")) == sorted(
        [("comment", found["on_issue"]["id"]), ("comment", found["on_pull"]["id"])]
    )
    both = search(api.owner, q="checkout", type="issue,pull_request")
    assert kinds(both) == sorted([("issue", found["issue"].pk), ("pull_request", found["pull"].pk)])
    assert search(api.owner, q="checkout", project_id=world.project.pk)["meta"]["total"] == 4
    assert search(api.owner, q="checkout", project_id=world.other_project.pk)["data"] == []
    workspace = search(api.owner, q="checkout", workspace_id=world.project.workspace_id)
    assert kinds(workspace) == kinds(search(api.owner, q="checkout"))
    assert workspace["meta"]["total"] == 4
    other = search(api.owner, q="checkout", workspace_id=world.other_project.workspace_id)
    assert other["data"] == [] and other["meta"]["total"] == 0
    secret = search(api.outsider, q="checkout", workspace_id=world.other_project.workspace_id)
    assert kinds(secret) == [("issue", found["secret"].pk)]
    nowhere = search(api.owner, q="checkout", workspace_id=world.project.workspace_id + 1000)
    assert nowhere["data"] == [] and nowhere["meta"]["total"] == 0  # no such workspace


def test_a_workspace_narrows_by_its_project_ids_given_as_values(api, world, found):
    """The workspace's projects are read first and given to the search's statements as
    values, which PostgreSQL plans with (an array read while they run was a guess)."""
    from projects.models import Project

    workspace = world.project.workspace_id
    ids = sorted(Project.objects.filter(workspace_id=workspace).values_list("pk", flat=True))
    with CaptureQueriesContext(connection) as queries:
        body = search(api.owner, q="checkout", workspace_id=workspace)
    assert body["meta"]["total"] == 4
    page = [q["sql"] for q in queries.captured_queries if '"search_hit"."title"' in q["sql"]]
    listed = ", ".join(str(pk) for pk in ids)
    assert page and f'"search_hit"."project_id" IN ({listed})' in page[0], page


def test_nobody_finds_what_they_cannot_see(api, world, found):
    assert kinds(search(api.outsider, q="checkout")) == [("issue", found["secret"].pk)]
    assert search(api.admin, q="secret")["data"] == []  # a workspace admin of another one


def test_the_scopes_decide_the_kinds(world, found):
    issues_only = search(client_for(world.owner, ["issues:read"]), q="checkout")
    assert kinds(issues_only) == sorted(
        [("issue", found["issue"].pk), ("comment", found["on_issue"]["id"])]
    )
    projects_only = search(client_for(world.owner, ["projects:read"]), q="checkout")
    assert kinds(projects_only) == sorted(
        [("pull_request", found["pull"].pk), ("comment", found["on_pull"]["id"])]
    )
    neither = client_for(world.owner, ["webhooks:read"]).get("/v1/search", {"q": "checkout"})
    assert assert_error(neither, 403, "FORBIDDEN")["details"]["required_scope"] == "issues:read"


def test_edits_and_deletes_are_found_at_once(api, world, found):
    api.owner.patch(f"/v1/issues/{found['issue'].pk}", {"title": "Basket slow"}, format="json")
    comment_delete(comment=Comment.objects.get(pk=found["on_issue"]["id"]), actor=world.owner)
    remaining = kinds(search(api.owner, q="checkout"))
    assert ("comment", found["on_issue"]["id"]) not in remaining
    assert ("issue", found["issue"].pk) not in remaining
    assert kinds(search(api.owner, q="basket")) == [("issue", found["issue"].pk)]


@pytest.mark.parametrize("params", [{}, {"q": ""}, {"q": "   "}])
def test_q_is_required(api, found, params):
    error = assert_error(api.owner.get("/v1/search", params), 400, "BAD_REQUEST")
    assert "q" in error["details"]


@pytest.mark.parametrize(
    "params",
    [
        {"q": "x", "type": "wiki"},
        {"q": "x", "project_id": "abc"},
        {"q": "x", "workspace_id": "0"},
        {"q": "x", "sort": "title"},
        {"q": "x", "per_page": "0"},
    ],
)
def test_bad_filters_are_400s(api, found, params):
    assert_error(api.owner.get("/v1/search", params), 400, "BAD_REQUEST")


def test_anonymous_is_401(api, found):
    assert_error(api.anonymous.get("/v1/search", {"q": "checkout"}), 401, "UNAUTHORIZED")


def test_punctuation_alone_finds_nothing(api, found):
    assert search(api.owner, q="!!! ***")["data"] == []


def test_a_cursor_walks_the_ranking_without_repeats(api, world, found):
    for n in range(7):
        make_issue(world.project, world.owner, title=f"checkout {'checkout ' * n}case {n}")
    pages, params = [], {"q": "checkout", "per_page": 3}
    while True:
        body = search(api.owner, **params)
        pages.append([(hit["type"], hit["id"]) for hit in body["data"]])
        if not body["meta"]["next_cursor"]:
            break
        params["cursor"] = body["meta"]["next_cursor"]
    walked = [hit for page in pages for hit in page]
    ranked = search(api.owner, q="checkout", per_page=100)
    assert walked == [(hit["type"], hit["id"]) for hit in ranked["data"]]
    assert len(walked) == len(set(walked)) == 11


def test_the_answer_takes_a_fixed_number_of_queries(api, world, found):
    for n in range(10):
        make_issue(world.project, world.owner, title=f"checkout {n}")
    # Kept out of the count: a key's first call records its use, and a process asks the
    # database once for a word's stem (issues.facets.lexeme): with a cold cache, as when
    # this test runs first in its worker, the count below has one query more.
    search(api.owner, q="checkout")
    # The key, the caller's workspaces, the count and the page, with its rows' snippets
    # (PostgreSQL marks the page's rows alone in the page's query; SQLite's are read in one
    # query more, for the page alone: search.selectors.hit_snippets_attach), however many
    # hits. (Past 1,000 hits, one more: where the ranked candidates end,
    # collab.db.fulltext.CandidateScore.) The limiter's counter is not among them: kept in
    # Redis, or without it in the database.
    with CaptureQueriesContext(connection) as queries:
        body = search(api.owner, q="checkout", per_page=50)
    made = [q["sql"] for q in queries.captured_queries if "ratelimitcounter" not in q["sql"]]
    assert len(made) <= (4 if connection.vendor == "postgresql" else 5), made
    marked = [sql for sql in made if "ts_headline" in sql or "snippet(" in sql]
    assert len(marked) == 1, marked
    assert body["meta"]["total"] == 14


@pytest.mark.parametrize(
    "params",
    [
        {"q": "checkout"},
        {"q": "Checkouts", "type": "issue"},
        {"q": "checkout", "type": "comment,pull_request"},
        {"q": "checkout", "project_id": "{project}"},
        {"q": "checkout", "project_id": "{other_project}"},
        {"q": "checkout", "workspace_id": "{workspace}"},
        {"q": "checkout", "workspace_id": "{other_workspace}"},
        {"q": "checkout session"},
        {"q": "checkout -session"},
        {"q": '"checkout step"'},
        {"q": '"checkout session"'},
        {"q": "check*"},
        {"q": "the"},
    ],
    ids=lambda params: "&".join(f"{k}={v}" for k, v in params.items()),
)
@pytest.mark.parametrize("who", ["owner", "issues:read", "projects:read", "outsider"])
def test_the_total_is_exact_and_a_word_totals_the_issues_from_their_counters(
    world, found, params, who
):
    for n in range(3):  # more issues with the word, one of them closed
        issue = make_issue(world.project, world.owner, title=f"Checkout step {n}")
    issue_update(issue=issue, actor=world.owner, status="closed")
    client = {
        "owner": lambda: client_for(world.owner),
        "issues:read": lambda: client_for(world.owner, ["issues:read"]),
        "projects:read": lambda: client_for(world.owner, ["projects:read"]),
        "outsider": lambda: client_for(world.outsider),
    }[who]()
    ids = {
        "project": world.project.pk,
        "other_project": world.other_project.pk,
        "workspace": world.project.workspace_id,
        "other_workspace": world.other_project.workspace_id,
    }
    named = params.get("project_id", params.get("workspace_id", ""))
    unseen_scope = bool(named) and named.startswith("{other_") != (who == "outsider")
    params = {name: value.format(**ids) for name, value in params.items()}
    search(client, **params)  # the key's first use is recorded once: out of what is compared
    with CaptureQueriesContext(connection) as captured:
        body = search(client, **params, per_page=2)
    sql = [query["sql"] for query in captured.captured_queries]
    everything = search(client, **params, per_page=100)
    assert body["meta"]["total"] == len(everything["data"])
    # A project, or a workspace, the caller cannot see (the outsider sees only the other
    # workspace's; everyone else, only the first's): nothing to count, and nothing is.
    if unseen_scope:
        assert body["meta"]["total"] == 0
        assert not any("COUNT(" in query or "issuefacetcount" in query for query in sql), sql
        return
    # A credential reading every kind narrows the kinds in no statement (search_hits): only
    # a key of one read scope has its comments narrowed to those on what it reads.
    by_parent = [query for query in sql if '_id" IS NOT NULL' in query]
    assert (by_parent == []) == (who in ("owner", "outsider")), by_parent
    # One word, a phrase of two, a prefix, a word and one exclusion: the issues' counters
    # answer (issues.selectors.issue_search_total); several words, or a stop word, are counted.
    counters_answer = params["q"] in (
        "checkout",
        "Checkouts",
        "check*",
        "checkout -session",
        '"checkout step"',
        '"checkout session"',
    )
    issues_read = who != "projects:read" and params.get("type", "issue").find("issue") >= 0
    if connection.vendor == "postgresql" and counters_answer and issues_read:
        assert any("issues_issuefacetcount" in query for query in sql), sql
        counts = [query for query in sql if "COUNT(" in query and '"search_hit"' in query]
        other_kinds = re.compile(r"""NOT \(("?\w+"?\.)?"type" = 'issue'\)""")
        assert counts and all(other_kinds.search(query) for query in counts), counts
    else:
        assert not any("issues_issuefacetcount" in query for query in sql), sql


@pytest.fixture
def broad(world, settings):
    """Two thousand issues (the demo seeding's words: hundreds match ``e*``), and only the
    newest 50 matches ranked, however few match: the ranking without the rank indexes
    (SQLite, PostgreSQL without RUM; tests/search/test_rank_index.py has the one with them)."""
    from issues.seeding import issues_seed

    settings.SEARCH_RANK_CANDIDATES = 50
    settings.SEARCH_RANK_EVERY_UP_TO = 0
    issues_seed(project=world.project, total=2000, people=[world.owner.pk])
    return world


@pytest.mark.parametrize(
    "path",
    ["/v1/search", "/v1/projects/{project}/issues", "/v1/issues"],
)
def test_a_broad_prefix_ranks_only_the_newest_candidates(api, broad, path, monkeypatch):
    from collab.db import fulltext
    from issues.models import Issue

    # Hundreds of matches: the window is walked for them (past 10,000, by default).
    monkeypatch.setattr(fulltext, "WINDOW_LEAST_MATCHES", 200)

    params = {"q": "e*", "per_page": 10, "highlight": "true"}
    if path != "/v1/search":
        params["sort"] = "relevance"
    with CaptureQueriesContext(connection) as queries:
        body = assert_ok(api.owner.get(path.format(project=broad.project.pk), params))
    matches = Issue.objects.filter(project=broad.project).filter(fulltext_matches("e*"))
    assert body["meta"]["total"] == matches.count() > 200  # the total still counts them all
    # The ranking finds the newest 50 matches once: only the matches that new are scored, in
    # the page's query, found by created_at from the oldest of them, or (PostgreSQL, one
    # project: the window) by the keys the window read, with the rows as old as the oldest.
    windowed = connection.vendor == "postgresql" and path.startswith("/v1/projects/")
    ranked = [q["sql"] for q in queries.captured_queries if "LIMIT 50)" in q["sql"]]
    assert len(ranked) == 1 and "MIN(" in ranked[0]
    assert ("w.document @@" in ranked[0]) == windowed
    assert ("ts_rank(w.document" in ranked[0]) == windowed  # the window scores what it finds
    scored = [
        q["sql"]
        for q in queries.captured_queries
        if ("ts_rank(" in q["sql"] or "bm25(" in q["sql"]) and "MATERIALIZED" not in q["sql"]
    ]  # the page's statements (the window's scores what it finds: below)
    newest_only = '"created_at" = ' if windowed else '"created_at" >='
    assert scored and all(newest_only in sql for sql in scored), scored
    newest = set(matches.order_by("-created_at").values_list("pk", flat=True)[:50])
    ids = [row.get("object_id", row["id"]) for row in body["data"]]
    assert len(ids) == 10 and set(ids) <= newest
    # Highlights and snippets are marked for the page's rows alone, in one query.
    marking = [
        q["sql"]
        for q in queries.captured_queries
        if "highlight(" in q["sql"] or "ts_headline(" in q["sql"]
    ]
    assert len(marking) == 1 and "OFFSET" not in marking[0]


@pytest.mark.parametrize("windowed", [False, True], ids=["found-by-the-planner", "windowed"])
@pytest.mark.parametrize("path", ["/v1/search", "/v1/projects/{project}/issues"])
def test_pages_and_cursors_cross_from_the_ranked_to_the_older_matches(
    api, broad, path, windowed, monkeypatch
):
    """The ranked candidates and the older matches are read as two bands
    (collab.api.pagination._BandedWalk): every page size, page number and cursor gives the
    rows of the one ordering, across the band's end, as the ordering read in one query does.
    Windowed (PostgreSQL, in a project), the window scores the candidates, and a page reads
    the keys of those it can hold alone (``CandidateScore._narrowed``): the same rows, ties
    of score across pages and cursors included."""
    from django.db.models.expressions import OrderBy

    from collab.db import fulltext
    from issues.models import Issue

    url = path.format(project=broad.project.pk)
    params = {"q": "e*"} if path == "/v1/search" else {"q": "e*", "sort": "relevance"}
    if windowed:
        # Hundreds of matches: the window is walked for them (past 10,000, by default).
        monkeypatch.setattr(fulltext, "WINDOW_LEAST_MATCHES", 200)
        if path == "/v1/search":
            params["project_id"] = broad.project.pk

    def ids(**more):
        body = assert_ok(api.owner.get(url, {**params, **more}))
        return [row.get("object_id", row["id"]) for row in body["data"]], body["meta"]

    whole, meta = ids(per_page=100)
    matches = Issue.objects.filter(project=broad.project).filter(fulltext_matches("e*"))
    best = fulltext.CandidateScore(fulltext.parse("e*"), among=matches, candidates=50)
    in_one_query = matches.order_by(OrderBy(best, descending=True), "-id")
    assert whole == list(in_one_query.values_list("pk", flat=True)[:100])
    newest = set(matches.order_by("-created_at").values_list("pk", flat=True)[:50])
    assert set(whole[:50]) == newest and whole[50:] == sorted(whole[50:], reverse=True)
    # Page numbers: pages that end in the ranked band, straddle its end, or start past it
    # (the older band then starts as far past its top as the ranked band falls short).
    for per_page in (7, 30, 45):
        for page in range(1, 100 // per_page + 1):
            start = (page - 1) * per_page
            assert ids(per_page=per_page, page=page)[0] == whole[start : start + per_page]
    # Cursors: across the band's end, and on from a cursor in the older band.
    walked, cursor = [], None
    while len(walked) < 100:
        page, meta = ids(per_page=9, **({"cursor": cursor} if cursor else {}))
        walked += page
        cursor = meta["next_cursor"]
    assert walked[:100] == whole and len(set(walked)) == len(walked)
    if windowed and connection.vendor == "postgresql":
        # The first page's ranked statement names the keys of its 9 rows (and those scored
        # as the last of them), not the 50 candidates'.
        with CaptureQueriesContext(connection) as queries:
            assert ids(per_page=9)[0] == whole[:9]
        ranked = [
            q["sql"]
            for q in queries.captured_queries
            if "ts_rank(" in q["sql"] and "MATERIALIZED" not in q["sql"]  # not the window's
        ]
        keys = re.findall(r"ANY\('\{([0-9,]*)\}'", ranked[0])
        assert len(ranked) == 1 and keys
        assert 9 <= sum(len(found.split(",")) for found in keys) < 50


@pytest.mark.parametrize("path", ["/v1/search", "/v1/projects/{project}/issues"])
def test_a_total_counted_in_the_rows_finds_the_candidates_in_the_same_statement(api, broad, path):
    """A total no counter answers (a prefix and a word) is counted in the rows; on PostgreSQL,
    in a project, the statement that counts them also gives the newest 50 matches, which
    the page then ranks: nothing reads the matches again for them. The page is the ordering
    read in one query."""
    from django.db.models.expressions import OrderBy

    from collab.db import fulltext
    from issues.models import Issue

    text = "e* change"
    params = {"q": text, "per_page": 100}
    narrowed = {"project_id": broad.project.pk} if path == "/v1/search" else {"sort": "relevance"}
    params.update(narrowed)
    with CaptureQueriesContext(connection) as queries:
        body = assert_ok(api.owner.get(path.format(project=broad.project.pk), params))
    matches = Issue.objects.filter(project=broad.project).filter(fulltext_matches(text))
    assert body["meta"]["total"] == matches.count() > 50
    statements = [q["sql"] for q in queries.captured_queries]
    counted = [sql for sql in statements if "COUNT(" in sql.upper()]
    candidates = [sql for sql in statements if "LIMIT 50)" in sql]
    if connection.vendor == "postgresql":
        assert len(counted) == 1 and counted == candidates
        assert "WITH a AS MATERIALIZED" in counted[0] and "w.document @@" not in counted[0]
    else:
        assert len(counted) == 1 and len(candidates) == 1 and counted != candidates
    best = fulltext.CandidateScore(fulltext.parse(text), among=matches, candidates=50)
    in_one_query = matches.order_by(OrderBy(best, descending=True), "-id")
    ids = [row.get("object_id", row["id"]) for row in body["data"]]
    assert ids == list(in_one_query.values_list("pk", flat=True)[:100])


@pytest.mark.parametrize("path", ["/v1/search", "/v1/projects/{project}/issues"])
def test_every_match_counted_in_the_rows_is_ranked_by_the_keys_the_count_found(
    api, broad, settings, path
):
    """With no more matches than the ranking takes, each is a candidate; on PostgreSQL, in a
    project, the statement that counts them gives their keys, and the page reads them by key:
    the full-text index is read once, by the count, and no older band is asked for."""
    from django.db.models.expressions import OrderBy

    from collab.db import fulltext
    from issues.models import Issue

    settings.SEARCH_RANK_CANDIDATES = 2000
    text = "e* change"
    params = {"q": text, "per_page": 100}
    if path == "/v1/search":
        params["project_id"] = broad.project.pk
    else:
        params["sort"] = "relevance"
    with CaptureQueriesContext(connection) as queries:
        body = assert_ok(api.owner.get(path.format(project=broad.project.pk), params))
    matches = Issue.objects.filter(project=broad.project).filter(fulltext_matches(text))
    assert 100 < body["meta"]["total"] == matches.count() <= 2000
    statements = [q["sql"] for q in queries.captured_queries]
    ranked = [sql for sql in statements if "ts_rank(" in sql or "bm25(" in sql]
    assert len(ranked) == 1
    if connection.vendor == "postgresql":
        counted = [sql for sql in statements if "WITH a AS MATERIALIZED" in sql]
        assert len(counted) == 1 and "LIMIT 2000)" in counted[0]
        assert "= ANY(" in ranked[0]  # the page reads the counted keys
    best = fulltext.CandidateScore(fulltext.parse(text), among=matches, candidates=2000)
    in_one_query = matches.order_by(OrderBy(best, descending=True), "-id")
    ids = [row.get("object_id", row["id"]) for row in body["data"]]
    assert ids == list(in_one_query.values_list("pk", flat=True)[:100])


@pytest.mark.parametrize("text", ["change", "e* change"])  # from the counters; counted
@pytest.mark.parametrize("path", ["/v1/search", "/v1/projects/{project}/issues"])
def test_every_match_is_ranked_up_to_a_few_hundred_and_past_them_the_newest_candidates(
    api, broad, settings, text, path
):
    """More matches than the candidates (50), no more than ``SEARCH_RANK_EVERY_UP_TO``:
    every match is ranked, read through the full-text index (no window, no candidates'
    keys). One match more than that, and the newest 50 alone are ranked, the older ones
    following newest first."""
    from django.db.models.expressions import OrderBy

    from collab.db import fulltext
    from issues.models import Issue

    params = {"q": text, "per_page": 100}
    if path == "/v1/search":
        params["project_id"] = broad.project.pk
    else:
        params["sort"] = "relevance"
    matches = Issue.objects.filter(project=broad.project).filter(fulltext_matches(text))
    total = matches.count()
    assert 100 < total <= 2000
    query = fulltext.parse(text)
    every_one = matches.order_by(OrderBy(fulltext.Score(query), descending=True), "-id")
    newest = fulltext.CandidateScore(query, among=matches, candidates=50)
    candidates_first = matches.order_by(OrderBy(newest, descending=True), "-id")
    for every_up_to, expected in ((total, every_one), (total - 1, candidates_first)):
        settings.SEARCH_RANK_EVERY_UP_TO = every_up_to
        with CaptureQueriesContext(connection) as queries:
            body = assert_ok(api.owner.get(path.format(project=broad.project.pk), params))
        assert body["meta"]["total"] == total
        ids = [row.get("object_id", row["id"]) for row in body["data"]]
        assert ids == list(expected.values_list("pk", flat=True)[:100])
        # From the counters, the total tells: the newest 50 are found by a statement of
        # their own, or nothing but the page is read.
        newest_found = [
            q["sql"] for q in queries.captured_queries if "m AS MATERIALIZED" in q["sql"]
        ]
        if connection.vendor == "postgresql" and " " not in text:
            assert bool(newest_found) == (every_up_to < total), newest_found
    # The two orders differ here: which one was read is seen in the pages.
    assert list(every_one.values_list("pk", flat=True)[:100]) != list(
        candidates_first.values_list("pk", flat=True)[:100]
    )


def test_the_prepared_total_restates_every_filter_that_narrows_the_hits():
    """A total from the counters is compiled once per shape, its hits rebuilt from the
    request's kinds, projects and text (search.selectors.TOTAL_NARROWED_BY): a filter added
    to /v1/search must be restated there, or its totals would not narrow."""
    from search.filters import SearchFilter
    from search.selectors import TOTAL_NARROWED_BY

    assert set(SearchFilter.base_filters) - {"sort"} == TOTAL_NARROWED_BY


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the window is PostgreSQL's")
@pytest.mark.parametrize("window", [20, 1])
def test_the_oldest_candidate_is_found_in_a_window_of_the_newest_rows_or_else_among_all(
    broad, monkeypatch, window
):
    """In one project, the newest N matches are looked for among the newest 20 N rows first:
    with enough of them there (``e*``, in hundreds of the 2,000), the window answers; with
    too few (a window of N rows, most of which do not match), every match is searched, in a
    second statement. The oldest candidate is the same either way."""
    from collab.db import fulltext
    from issues.models import Issue

    monkeypatch.setattr(fulltext, "WINDOW_PER_CANDIDATE", window)
    rows = Issue.objects.filter(project=broad.project)
    matches = rows.filter(fulltext_matches("e*"))
    newest = list(matches.order_by("-created_at").values_list("created_at", flat=True)[:50])
    window_rows = rows.order_by("-created_at").values_list("pk", flat=True)[: window * 50]
    in_window = matches.filter(pk__in=list(window_rows)).count()
    assert (in_window >= 50) == (window == 20)  # each branch is taken
    best = fulltext.CandidateScore(fulltext.parse("e*"), among=matches, candidates=50)
    with CaptureQueriesContext(connection) as queries:
        oldest, newer = best._candidates()
    assert oldest == newest[-1]
    # Either way, with the keys of the candidates newer than the oldest: the page reads them
    # by key.
    newer_ids = set(matches.filter(created_at__gt=oldest).values_list("pk", flat=True))
    assert newer is not None and {pk for ids in newer.values() for pk in ids} == newer_ids
    statements = [q["sql"] for q in queries.captured_queries]
    assert statements[0].startswith(WALKED + 'WITH m AS MATERIALIZED (SELECT w."created_at"')
    # The fallback is a statement of its own, run only when the window finds too few, with
    # the same planner's costs: both are walks of the newest rows (fulltext.WALKED).
    assert len(statements) == (1 if window == 20 else 2)
    assert all(statement.startswith(WALKED) for statement in statements)
    assert all("w.document @@" not in statement for statement in statements[1:])

    # With a total of at most WINDOW_LEAST_MATCHES matches, the bands skip the window.
    total = matches.count()
    monkeypatch.setattr(fulltext, "WINDOW_LEAST_MATCHES", 500)
    for known, windowed in ((None, True), (total, total > 500), (500, False)):
        with CaptureQueriesContext(connection) as queries:
            [(ranked, _order, *_narrow), _older] = best.bands(matches, [], total=known)
        statements = [q["sql"] for q in queries.captured_queries]
        assert ("w.document @@" in statements[0]) == windowed
        # Either way at the walk's costs: not windowed, many matches in a small project are
        # found by walking its newest rows (the planner's choice), a few through the index.
        assert statements[0].startswith(WALKED)
        assert len(statements) == (2 if windowed and window == 1 else 1)
        assert ranked.count() == 50

    # Across several projects (no one scope), the planner alone finds them.
    across = Issue.objects.filter(fulltext_matches("e*"))
    best = fulltext.CandidateScore(fulltext.parse("e*"), among=across, candidates=50)
    with CaptureQueriesContext(connection) as queries:
        assert best._candidates()[0] == newest[-1]
    [statement] = [q["sql"] for q in queries.captured_queries]
    assert "w.document @@" not in statement and "UNION ALL" not in statement


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the window is PostgreSQL's")
@pytest.mark.parametrize("window", [20, 1])
def test_across_a_workspaces_projects_the_window_merges_their_newest_rows(
    broad, monkeypatch, window
):
    """Narrowed to several projects (a workspace's, as ``workspace_id`` gives them), the
    window is the newest 20 N rows of them all, read as each project's newest merged in
    order: the same oldest candidate as a search of every match (with too few matches there,
    each project's newest N matches, merged too, in a second statement); a project without
    rows has no branch in either. Past WINDOW_MOST_SCOPES projects, or narrowed by a subquery,
    the planner alone finds it."""
    from collab.db import fulltext
    from issues.models import Issue
    from issues.seeding import issues_seed

    second = ProjectFactory(workspace=broad.project.workspace, created_by=broad.owner)
    empty = ProjectFactory(workspace=broad.project.workspace, created_by=broad.owner)
    issues_seed(project=second, total=600, people=[broad.owner.pk])
    monkeypatch.setattr(fulltext, "WINDOW_PER_CANDIDATE", window)
    ids = [broad.project.pk, empty.pk, second.pk]
    rows = Issue.objects.filter(project_id__in=ids)
    matches = rows.filter(fulltext_matches("e*"))
    newest = matches.order_by("-created_at").values_list("created_at", "project_id")[:50]
    # The projects with rows interleave theirs.
    assert {project for _at, project in newest} == {broad.project.pk, second.pk}
    window_rows = rows.order_by("-created_at").values_list("pk", flat=True)[: window * 50]
    in_window = matches.filter(pk__in=list(window_rows)).count()
    assert (in_window >= 50) == (window == 20)  # each branch is taken

    def oldest_found(among):
        best = fulltext.CandidateScore(fulltext.parse("e*"), among=among, candidates=50)
        with CaptureQueriesContext(connection) as queries:
            assert best._candidates()[0] == newest[49][0]
        return [q["sql"] for q in queries.captured_queries]

    # Which projects hold rows is read first, in one statement of index probes.
    probe, *statements = oldest_found(matches)
    assert probe.startswith("SET LOCAL enable_seqscan = off; ") and "IS NOT NULL" in probe
    assert statements[0].startswith(WALKED + 'WITH m AS MATERIALIZED (SELECT w."created_at"')
    # The window merges the newest rows of the two projects that hold any, and the fallback
    # (with too few in the window) their newest matches.
    assert len(statements) == (1 if window == 20 else 2)
    assert all(statement.count("UNION ALL") == 1 for statement in statements)
    # In projects that hold no row, nothing is windowed: no candidate.
    nothing = Issue.objects.filter(project_id__in=[empty.pk, empty.pk + 1000]).filter(
        fulltext_matches("e*")
    )
    best = fulltext.CandidateScore(fulltext.parse("e*"), among=nothing, candidates=50)
    with CaptureQueriesContext(connection) as queries:
        assert best._candidates() == (None, {})
    assert len(queries.captured_queries) == 1
    # With a total known to be at most WINDOW_LEAST_MATCHES, no window: the newest matches of
    # the projects together, in one statement, and their keys.
    best = fulltext.CandidateScore(fulltext.parse("e*"), among=matches, candidates=50)
    total = matches.count()
    with CaptureQueriesContext(connection) as queries:
        [(ranked, _order, *_narrow), _older] = best.bands(matches, [], total=total)
    [statement] = [q["sql"] for q in queries.captured_queries]
    assert "w.document @@" not in statement and "UNION ALL" not in statement
    assert ranked.count() == 50
    # The same scope as a subquery, or with too many projects to merge: no window.
    projects = Project.objects.filter(pk__in=ids).values("pk")
    [statement] = oldest_found(
        Issue.objects.filter(project_id__in=projects).filter(fulltext_matches("e*"))
    )
    assert "w.document @@" not in statement and "UNION ALL" not in statement
    monkeypatch.setattr(fulltext, "WINDOW_MOST_SCOPES", 1)
    [statement] = oldest_found(matches)
    assert "w.document @@" not in statement and "UNION ALL" not in statement


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the window is PostgreSQL's")
@pytest.mark.parametrize("path", ["/v1/search", "/v1/projects/{project}/issues"])
def test_the_windows_candidates_are_read_by_key_with_every_row_as_old_as_the_oldest(
    api, world, monkeypatch, settings, path
):
    """The candidates the window found are read by their keys, and with them every row as
    old as the oldest candidate, which the window may have cut: 30 issues, then 200 made
    at one instant, all matching; 50 candidates in a window of 100 rows, which reads 70 of
    the 200. The ranked band holds all 230, as created_at from the oldest candidate gives
    them, and the pages walk the ordering read in one query."""
    from datetime import timedelta

    from django.db.models.expressions import OrderBy
    from django.utils import timezone

    from collab.db import fulltext
    from issues.models import Issue

    settings.SEARCH_RANK_CANDIDATES = 50
    settings.SEARCH_RANK_EVERY_UP_TO = 0
    monkeypatch.setattr(fulltext, "WINDOW_PER_CANDIDATE", 2)
    made = [make_issue(world.project, world.owner, title=f"Alpha {n}") for n in range(230)]
    instant = timezone.now() - timedelta(hours=1)
    for n, issue in enumerate(made[:30]):
        Issue.objects.filter(pk=issue.pk).update(created_at=instant + timedelta(seconds=n + 1))
    Issue.objects.filter(pk__in=[issue.pk for issue in made[30:]]).update(created_at=instant)
    rows = Issue.objects.filter(project=world.project)
    matches = rows.filter(fulltext_matches("alpha"))
    best = fulltext.CandidateScore(fulltext.parse("alpha"), among=matches, candidates=50)
    oldest, newer = best._candidates()
    assert oldest == instant and [len(ids) for ids in newer.values()] == [30]
    [(ranked, _order, narrow), (older, _rest)] = best.bands(matches, ["-id"])
    assert set(ranked.values_list("pk", flat=True)) == {issue.pk for issue in made}
    assert not older.exists()
    # Narrowed for a page of 10 (the window ranked the 30 newer ones): their first 10 by
    # score then -id, and every row as old as the oldest, which the window did not rank; after
    # a cursor's row, the 10 that follow it.
    newer_ones = rows.filter(pk__in=[issue.pk for issue in made[:30]]).order_by(
        OrderBy(fulltext.Score(fulltext.parse("alpha")), descending=True), "-id"
    )
    in_order = list(newer_ones.values_list("pk", flat=True))
    tied = {issue.pk for issue in made[30:]}
    held = set(narrow(10).values_list("pk", flat=True))
    assert held - tied == set(in_order[:10]) and tied < held
    fifth = newer_ones.annotate(score=fulltext.Score(fulltext.parse("alpha")))[4]
    held = set(narrow(10, [fifth.score, fifth.pk]).values_list("pk", flat=True))
    assert held - tied == set(in_order[5:15])
    unscored = narrow(10, ["not a score", fifth.pk]).values_list("pk", flat=True)
    assert set(unscored) == {issue.pk for issue in made}  # the whole band

    url = path.format(project=world.project.pk)
    params = {"q": "alpha"} if path == "/v1/search" else {"q": "alpha", "sort": "relevance"}
    if path == "/v1/search":
        params["project_id"] = world.project.pk

    def ids(**more):
        body = assert_ok(api.owner.get(url, {**params, **more}))
        return [row.get("object_id", row["id"]) for row in body["data"]], body["meta"]

    whole, meta = ids(per_page=100)
    walked = whole + ids(per_page=100, page=2)[0] + ids(per_page=100, page=3)[0]
    assert meta["total"] == 230 and sorted(walked) == sorted(issue.pk for issue in made)
    in_one_query = matches.order_by(OrderBy(best, descending=True), "-id")
    assert walked == list(in_one_query.values_list("pk", flat=True))


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the window is PostgreSQL's")
def test_the_window_is_the_newest_rows_of_all_the_projects_not_of_each(world, monkeypatch):
    """A project's newest rows, none matching, then older matches that are still newer than
    another project's: each project's own window would find the other's matches and miss
    these (the 3rd newest match 100 days old, where it is 12 days old). The window of both
    together holds no match at all, and the matches are then found among all."""
    from datetime import timedelta

    from django.utils import timezone

    from collab.db import fulltext
    from issues.models import Issue

    monkeypatch.setattr(fulltext, "WINDOW_PER_CANDIDATE", 2)  # 6 rows for 3 candidates
    second = ProjectFactory(workspace=world.project.workspace, created_by=world.owner)
    now = timezone.now()
    made = [
        *((world.project, "Unrelated", days) for days in range(1, 7)),
        *((world.project, "Sparrow seen", days) for days in range(10, 13)),
        *((second, "Sparrow seen", days) for days in range(100, 106)),
    ]
    for project, title, days in made:
        issue = make_issue(project, world.owner, title=title)
        Issue.objects.filter(pk=issue.pk).update(created_at=now - timedelta(days=days))
    matches = Issue.objects.filter(project_id__in=[world.project.pk, second.pk]).filter(
        fulltext_matches("sparrow")
    )
    best = fulltext.CandidateScore(fulltext.parse("sparrow"), among=matches, candidates=3)
    assert best._candidates()[0] == now - timedelta(days=12)


# How the statements that find the candidates begin: with the planner's cost of a page read
# out of order lowered (collab.db.fulltext.WALKED), for that statement alone.
WALKED = "SET LOCAL random_page_cost = '1.1'; "


def fulltext_matches(text):
    from collab.db import fulltext

    return fulltext.Matches(fulltext.parse(text))
