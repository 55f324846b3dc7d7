"""The per-value counters (``issues.facets``): exact after every kind of write, whichever path
it takes, and the filtered lists' totals read from them instead of counting rows."""

from collections import Counter
from datetime import UTC, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from issues import facets
from issues.models import Issue, IssueFacetCount, Label
from issues.services import issue_delete, issue_update, label_delete, label_update
from projects.services import project_delete
from tests.conftest import assert_ok, client_for
from tests.factories import make_issue

pytestmark = pytest.mark.django_db


def day(moment) -> str:
    return moment.astimezone(UTC).date().isoformat()


def words(project) -> dict[int, dict[int, list[str]]]:
    """PostgreSQL: each issue's words by position, as its search document holds them."""
    places: dict[int, dict[int, list[str]]] = {}
    if connection.vendor != "postgresql":
        return places
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.id, u.lexeme, u.positions FROM issues_issue i "
            "CROSS JOIN unnest(i.search_document) AS u WHERE i.project_id = %s",
            [project.pk],
        )
        for issue_id, lexeme, positions in cursor.fetchall():
            for position in positions:
                places.setdefault(issue_id, {}).setdefault(position, []).append(lexeme)
    return places


def text_counters(places: dict[int, list[str]]) -> set[tuple[str, str]]:
    """An issue's word, head and pair counters (facet, value), from its words by position:
    each word (a longer one than the counters hold, by its head), and each word followed by
    one at the next position (a phrase of the two)."""
    most = facets.WORD_MAX
    found = {
        ("word", word) if len(word) <= most else ("head", word[:most])
        for at in places.values()
        for word in at
    }
    for position, at in places.items():
        found |= {("pair", f"{a} {b}") for a in at for b in places.get(position + 1, [])}
    return {(facet, value) for facet, value in found if len(value) <= most}


def truth(project) -> Counter:
    """The counters as the rows say they should be."""
    expected: Counter = Counter()
    lexemes = words(project)
    for issue in Issue.objects.filter(project=project).prefetch_related("labels"):
        key = (issue.status,)
        for facet, value in text_counters(lexemes.get(issue.pk, {})):
            expected[(*key, facet, value)] += 1
        expected[(*key, "type", issue.type)] += 1
        expected[(*key, "priority", issue.priority)] += 1
        expected[(*key, "assignee", str(issue.assignee_id or ""))] += 1
        expected[(*key, "created", day(issue.created_at))] += 1
        expected[(*key, "updated", day(issue.updated_at))] += 1
        for label in issue.labels.all():
            expected[(*key, "label", str(label.pk))] += 1
    return expected


def kept(project) -> Counter:
    """The counters, each key's rows added up (zeros left out)."""
    sums: Counter = Counter()
    for row in IssueFacetCount.objects.filter(project=project):
        sums[(row.status, row.facet, row.value)] += row.count
    return Counter({key: count for key, count in sums.items() if count})


def assert_exact(project):
    assert kept(project) == truth(project)


def test_every_write_path_keeps_them_exact(api, world):
    project, owner = world.project, world.owner
    path = f"/v1/projects/{project.pk}/issues"
    one = assert_ok(
        api.owner.post(
            path,
            {
                "title": "One crash",
                # A pair twice ("emoji picker"), counted once; words with stop words between.
                "description": "Crashes when the emoji picker crashes twice. Emoji picker!",
                "type": "bug",
                "labels": ["ui", "api"],
                "assignee_id": owner.pk,
            },
            format="json",
        ),
        201,
    )["data"]
    assert_exact(project)
    api.owner.post(
        f"{path}/bulk",
        {"items": [{"title": f"Bulk {n}", "labels": ["ui"], "priority": "high"} for n in range(5)]},
        format="json",
    )
    assert_exact(project)
    api.owner.patch(f"/v1/issues/{one['id']}", {"status": "closed"}, format="json")
    assert_exact(project)  # the labels moved to "closed" with it
    api.owner.patch(
        f"/v1/issues/{one['id']}",
        {"labels": ["api", "db"], "assignee_id": None, "priority": "critical"},
        format="json",
    )
    assert_exact(project)
    long_pair = "y" * (facets.WORD_MAX // 2) + " " + "z" * (facets.WORD_MAX // 2)
    api.owner.patch(  # its words change, one of them and one pair too long to count
        f"/v1/issues/{one['id']}",
        {
            "title": "Renamed picker",
            "description": "x" * (facets.WORD_MAX + 1) + f" crashes {long_pair}",
        },
        format="json",
    )
    assert_exact(project)
    bulk_ids = list(Issue.objects.filter(title__startswith="Bulk").values_list("pk", flat=True))
    api.owner.patch(
        "/v1/issues/bulk",
        {"items": [{"id": pk, "status": "in_progress", "type": "feature"} for pk in bulk_ids]},
        format="json",
    )
    assert_exact(project)
    ui = Label.objects.get(project=project, name="ui")
    label_update(label=ui, actor=owner, name="web")
    assert_exact(project)
    label_delete(label=Label.objects.get(project=project, name="api"), actor=owner)
    assert_exact(project)
    issue = Issue.objects.get(pk=bulk_ids[0])
    issue_update(issue=issue, actor=owner, status="open")
    Issue.objects.filter(pk=bulk_ids[1]).update(updated_at=timezone.now() - timedelta(days=3))
    Issue.objects.filter(pk__in=bulk_ids[1:3]).update(title="Queryset emoji title")
    assert_exact(project)
    issue_delete(issue=Issue.objects.get(pk=bulk_ids[2]), actor=owner)
    api.owner.delete(f"/v1/issues/{one['id']}")
    assert_exact(project)
    assert sum(kept(project).values()) > 0


def test_the_pairs_of_a_document_past_its_last_position_are_exact(api, world):
    """Past 16,383 words, PostgreSQL gives every further word the last position: each is then
    the successor of the word before it (the pairs are joined position to position there,
    issues.facets.PAIR_ORDERED_CHARS)."""
    # After the title (position 1): w16380 at 16,382, and w16381 onwards all at 16,383.
    words_past = [f"w{n}" for n in range(16_500)]
    long = make_issue(world.project, world.owner, title="Long", description=" ".join(words_past))
    make_issue(world.project, world.owner, title="Short", description="w16380 w16450")
    assert len(long.description) >= facets.PAIR_ORDERED_CHARS
    assert_exact(world.project)
    if connection.vendor == "postgresql":
        assert kept(world.project)[("open", "pair", "w16380 w16450")] == 2
    body = assert_ok(
        api.owner.get(f"/v1/projects/{world.project.pk}/issues", {"q": '"w16380 w16450"'})
    )
    # PostgreSQL's last position makes the two words side by side in the long document too;
    # SQLite's index keeps every position, where they are 70 apart: the short one alone.
    found = 2 if connection.vendor == "postgresql" else 1
    assert body["meta"]["total"] == len(body["data"]) == found


def test_compacting_folds_each_key_into_one_row_and_keeps_them_exact(api, world):
    for n in range(4):
        issue = make_issue(world.project, world.owner, title=f"C{n}", labels=["x"])
        issue_update(issue=issue, actor=world.owner, status="closed", priority="high")
    make_issue(world.other_project, world.outsider, title="Theirs")
    before = kept(world.project)
    assert IssueFacetCount.objects.filter(project=world.project).count() > len(before)
    assert facets.compact() >= 1
    rows = IssueFacetCount.objects.filter(project=world.project)
    assert rows.count() == len(before)  # one row per key, none at zero
    assert kept(world.project) == before == truth(world.project)
    assert_exact(world.other_project)
    assert facets.compact() == 0  # nothing left to fold
    issue_update(issue=issue, actor=world.owner, status="open")
    assert_exact(world.project)


def test_a_fold_rewrites_only_the_keys_written_since_the_last(world):
    for n in range(3):
        make_issue(world.project, world.owner, title=f"Kept {n}", type="bug", labels=["x"])
    facets.compact()
    before = {
        (row.status, row.facet, row.value): row.pk
        for row in IssueFacetCount.objects.filter(project=world.project)
    }
    make_issue(world.project, world.owner, title="Kept again", type="feature")
    written = {
        (row.status, row.facet, row.value)
        for row in IssueFacetCount.objects.filter(project=world.project, folded=False)
    }
    assert ("open", "type", "feature") in written and ("open", "type", "bug") not in written
    assert facets.compact() == 1
    after = {
        (row.status, row.facet, row.value): row.pk
        for row in IssueFacetCount.objects.filter(project=world.project)
    }
    untouched = before.keys() - written
    assert untouched and all(after[key] == before[key] for key in untouched)
    assert all(after[key] != before.get(key) for key in written)  # folded anew
    assert not IssueFacetCount.objects.filter(project=world.project, folded=False).exists()
    assert_exact(world.project)


def test_a_deleted_project_takes_its_counters(world):
    make_issue(world.project, world.owner, title="Gone", labels=["x"])
    assert IssueFacetCount.objects.filter(project=world.project).exists()
    project_id = world.project.pk
    project_delete(project=world.project, actor=world.owner)
    assert not IssueFacetCount.objects.filter(project_id=project_id).exists()


def test_rebuild_recounts_what_was_lost(world):
    for n in range(3):
        make_issue(world.project, world.owner, title=f"N{n}", labels=["a", "b"][: n % 3])
    IssueFacetCount.objects.filter(project=world.project).update(count=99)
    facets.rebuild(world.project.pk)
    assert_exact(world.project)


@pytest.fixture
def spread(world):
    """Issues over every value of every field, some of them a while ago."""
    project, owner, dev = world.project, world.owner, world.developer
    now = timezone.now()
    combos = [
        ("bug", "high", "open", owner, ["ui"], 40),
        ("bug", "low", "closed", dev, ["ui", "api"], 10),
        ("feature", "high", "in_progress", None, [], 3),
        ("task", "critical", "open", dev, ["api"], 1),
        ("improvement", "medium", "closed", None, ["db"], 0),
    ]
    texts = [
        "The emoji picker crashes",
        "Login crashed twice, then the emoji list",
        "Slow search",
        "",
        "Crashing on save with an emoji picker open",
        "Typo in the docs",
        "",
    ]
    for n, (kind, priority, status, assignee, labels, days) in enumerate(combos * 2):
        issue = make_issue(
            project,
            owner,
            title=f"Spread {n}",
            description=texts[n % len(texts)],
            type=kind,
            priority=priority,
            labels=labels,
            assignee_id=assignee.pk if assignee else None,
        )
        issue_update(issue=issue, actor=owner, status=status)
        stamp = now - timedelta(days=days, hours=n)
        Issue.objects.filter(pk=issue.pk).update(created_at=stamp, updated_at=stamp)
    return world


FILTERED = [
    {"type": "bug"},
    {"type": "bug,feature", "status": "open"},
    {"priority": "high"},
    {"priority": "critical", "status": "open,in_progress"},
    {"assignee": "me"},
    {"assignee": "none", "status": "closed"},
    {"assignee": "dev@acme.test"},
    {"assignee": "987654321"},
    {"labels": "ui"},
    {"labels": "api", "status": "closed"},
    {"labels": "nothing-like-it"},
    {"created_after": "{days_ago_5}"},
    {"created_after": "{days_ago_11}", "status": "open"},
    {"created_before": "{days_ago_5}"},
    {"created_after": "{days_ago_11}", "created_before": "{days_ago_2}"},
    {"updated_after": "{days_ago_5}", "status": "closed"},
    {"updated_after": "{days_ago_0}"},
]


def _params(params: dict) -> dict:
    now = timezone.now()
    stamps = {f"days_ago_{d}": (now - timedelta(days=d)).isoformat() for d in (0, 2, 5, 11)}
    return {name: value.format(**stamps) for name, value in params.items()}


def _rows_counted(world, where: str, params: dict) -> list[str]:
    """The list's total under ``params`` checked against every row it lists; the statements
    that counted issue rows for it."""
    client = client_for(world.owner)
    path = f"/v1/projects/{world.project.pk}/issues" if where == "project" else "/v1/issues"
    client.get(path, params)  # the key's first use is recorded once: out of what is compared
    with CaptureQueriesContext(connection) as captured:
        body = assert_ok(client.get(path, {**params, "per_page": 2}))
    # Read before the next request, which empties the connection's log of queries.
    counted = [
        query["sql"]
        for query in captured.captured_queries
        if "COUNT(" in query["sql"].upper() and 'FROM "issues_issue" ' in query["sql"]
    ]
    assert captured.captured_queries, "the request's queries were captured"
    everything = assert_ok(client.get(path, {**params, "per_page": 100}))
    assert body["meta"]["total"] == len(everything["data"])
    return counted


def _name(params: dict) -> str:
    return "&".join(f"{k}={v}" for k, v in params.items())


@pytest.mark.parametrize("params", FILTERED, ids=_name)
@pytest.mark.parametrize("where", ["project", "everywhere"])
def test_a_filtered_total_comes_from_the_counters_and_is_exact(spread, params, where):
    params = _params(params)
    counted = _rows_counted(spread, where, params)
    timed = [name for name in params if name.endswith(("_after", "_before"))]
    if not timed:
        assert counted == [], "the counters answer it: no row counted"
    for sql in counted:  # only the rows of a partial day, between two bounds
        column = timed[0].split("_")[0] + "_at"
        assert f'"{column}" >= ' in sql and f'"{column}" < ' in sql, sql


# Searches: how the total is found on PostgreSQL (issues.selectors.issue_search_total): from
# the word counters alone (a prefix that one counted word begins with, or none); from them and
# the few rows they leave, counted (a prefix: the issues holding another of its words and not
# the most common one; a word and an exclusion: the issues holding both, taken off); or from
# the rows. SQLite counts the rows.
COUNTERS, COUNTERS_AND_REST, ROWS = "counters", "counters and the rest", "rows"
SEARCHED = [
    ({"q": "emoji"}, COUNTERS),
    ({"q": "Crashing", "status": "open"}, COUNTERS),  # stemmed: crash, crashes, crashed
    ({"q": "picker", "status": "closed,in_progress"}, COUNTERS),
    ({"q": "nowhereword"}, COUNTERS),
    ({"q": "emo*"}, COUNTERS),  # emoji alone begins with it
    ({"q": "l*"}, COUNTERS_AND_REST),  # login and list: an issue holds both
    ({"q": "cra*", "status": "open"}, COUNTERS),
    ({"q": "emoji -picker"}, COUNTERS_AND_REST),
    ({"q": "crash -emo*", "status": "closed"}, COUNTERS_AND_REST),
    ({"q": 'emoji -"emoji picker"'}, COUNTERS_AND_REST),
    ({"q": "nowhere*"}, COUNTERS),  # no counted word begins with it: none
    ({"q": "emo* -picker"}, ROWS),
    ({"q": "emoji -picker -crash"}, ROWS),
    ({"q": "emoji picker"}, ROWS),
    ({"q": '"emoji picker"'}, COUNTERS),  # a phrase of two words: their pair's counters
    ({"q": '"the emoji picker"', "status": "open"}, COUNTERS),  # a stop word before them
    ({"q": '"emoji picker" -crash'}, COUNTERS_AND_REST),
    ({"q": '"picker of emoji"'}, ROWS),  # a stop word between: not side by side
    ({"q": '"emoji picker crashes"'}, ROWS),  # three words
    ({"q": "-emoji"}, ROWS),
    ({"q": "the"}, ROWS),  # a stop word
    ({"q": "emoji", "type": "bug"}, ROWS),
    ({"q": "x" * (facets.WORD_MAX + 1)}, ROWS),
]


@pytest.mark.parametrize("params,how", SEARCHED, ids=[_name(p)[:24] for p, _how in SEARCHED])
@pytest.mark.parametrize("where", ["project", "everywhere"])
def test_a_search_is_totalled_from_the_word_counters_where_they_answer(spread, params, how, where):
    counted = _rows_counted(spread, where, params)
    if connection.vendor != "postgresql" or how == ROWS:
        assert len(counted) == 1, counted
    elif how == COUNTERS:
        assert counted == [], "the word counters answer it: no row counted"
    else:
        # One count of the rows the counters leave: with the counted word excluded as the
        # documents hold it (a prefix), or with the excluded term required (an exclusion).
        assert len(counted) == 1, counted
        prefix = "*" in params["q"].split(" -")[0]
        assert ("to_tsquery('simple'" in counted[0]) == prefix, counted
        assert "!!" not in counted[0] or prefix, counted


def test_a_prefix_total_counts_the_words_too_long_for_the_counters(world):
    """A word longer than the counters hold is counted by its head: the issues holding it and
    not the prefix's most common counted word are counted in the rows, through the head; a
    prefix that only such words begin with, the same way."""
    long_word = "emo" + "x" * facets.WORD_MAX
    make_issue(world.project, world.owner, title="The emoji picker")
    make_issue(world.project, world.owner, title=f"A {long_word} only")
    make_issue(world.project, world.owner, title=f"Both: emoji and {long_word}")
    make_issue(world.project, world.owner, title=f"Longer: {long_word}yz")
    make_issue(world.project, world.owner, title="Neither")
    assert_exact(world.project)
    for text, total in (("emo*", 4), ("emox*", 3), ("emoxx*", 3), ("emoz*", 0)):
        counted = _rows_counted(world, "project", {"q": text})
        body = assert_ok(
            client_for(world.owner).get(f"/v1/projects/{world.project.pk}/issues", {"q": text})
        )
        assert body["meta"]["total"] == total, text
        if connection.vendor == "postgresql":
            # Through the heads: the prefix's own condition is not read.
            assert len(counted) == (0 if total == 0 else 1), counted
            assert all(f"{facets.lexeme(text[:-1])}':*" not in sql for sql in counted), counted


def test_a_prefix_with_more_words_than_are_named_reads_every_word_it_begins(world, monkeypatch):
    """Past PREFIX_WORDS_NAMED other words, a prefix's count reads the postings of every word
    that begins with it (its own condition), and is as exact."""
    from issues import selectors

    for title in ("Login fails", "List of logs", "Login list", "Lint", "Nothing"):
        make_issue(world.project, world.owner, title=title)
    # "list" and "login" in two issues each: the first by name is the counted one.
    for named, others in ((32, "''login'' | ''lint'' | ''log''"), (2, "''l'':*")):
        monkeypatch.setattr(selectors, "PREFIX_WORDS_NAMED", named)
        counted = _rows_counted(world, "project", {"q": "l*"})  # exact, checked there
        if connection.vendor == "postgresql":
            [sql] = counted
            assert f"'({others}) & !''list'''" in sql, sql
