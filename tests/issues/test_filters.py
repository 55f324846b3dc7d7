"""The issue lists' filters, alone and combined, on /v1/projects/:id/issues and /v1/issues.

Each answer is checked three ways: hand-written expectations for single filters, a small
independent oracle (plain Python over the stored records) for every combination, and
``meta.total`` against a direct ORM count, on both ways of counting: the kept per-status
counters (when only status, sort, project_id and paging are given) and a COUNT otherwise.
"""

import itertools
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from accounts.models import Role
from issues.models import PRIORITY_RANK, Issue
from projects.models import Project
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import MembershipFactory, ProjectFactory, UserFactory, make_issue

from .test_api import stored

JAN = datetime(2026, 1, 1, 12, tzinfo=UTC)

# title: (type, priority, status, assignee, labels, day created, day updated), in Rocket.
ROCKET = {
    "Login fails": ("bug", "critical", "open", "developer", ["backend", "urgent"], 0, 30),
    "Add dark mode": ("feature", "low", "in_progress", "viewer", ["frontend"], 4, 6),
    "Refactor auth": ("improvement", "medium", "closed", "developer", ["backend"], 9, 12),
    "Write docs": ("task", "high", "open", None, [], 14, 14),
    "Crash on upload": ("bug", "high", "open", "owner", ["backend", "frontend", "urgent"], 19, 20),
    "Tidy CSS": ("improvement", "low", "closed", None, ["frontend", "urgent"], 24, 25),
}
DESCRIPTIONS = {"Login fails": "500 on submit", "Refactor auth": "Cleanup LOGIN code"}
# In Lobby, an internal project of Acme.
LOBBY = {
    "Lobby login": ("bug", "medium", "open", "developer", ["backend"], 2, 3),
    "Lobby closed": ("task", "low", "closed", None, [], 11, 40),
}
# In Globex's private project: never shown to Acme.
GLOBEX = {
    "Secret login": ("bug", "critical", "open", "outsider", ["backend", "urgent"], 1, 1),
}

# The word counters (issues.facets) are kept on PostgreSQL only: SQLite counts a search's rows.
POSTGRESQL_ONLY = pytest.mark.skipif(
    "postgresql" not in settings.DATABASES["default"]["ENGINE"],
    reason="the word counters are kept on PostgreSQL only",
)


class Board:
    def __init__(self, world):
        self.world = world
        self.lobby = ProjectFactory(
            workspace=world.acme, name="Lobby", visibility=Project.Visibility.INTERNAL
        )
        self.ids: dict[str, int] = {}
        for project, issues in (
            (world.project, ROCKET),
            (self.lobby, LOBBY),
            (world.other_project, GLOBEX),
        ):
            for title, (type_, priority, status, assignee, labels, made, changed) in issues.items():
                issue = make_issue(
                    project,
                    world.owner,
                    title=title,
                    description=DESCRIPTIONS.get(title, ""),
                    type=type_,
                    priority=priority,
                    status=status,
                    assignee_id=getattr(world, assignee).pk if assignee else None,
                    labels=labels,
                )
                Issue.objects.filter(pk=issue.pk).update(
                    created_at=JAN + timedelta(days=made),
                    updated_at=JAN + timedelta(days=changed),
                )
                self.ids[title] = issue.pk
        self.titles = {pk: title for title, pk in self.ids.items()}
        self.emails = {
            getattr(world, name).pk: getattr(world, name).email
            for name in ("owner", "developer", "viewer", "outsider", "admin")
        }

    def records(self, project=None) -> list[dict]:
        queryset = Issue.objects.filter(project__workspace=self.world.acme)
        if project is not None:
            queryset = queryset.filter(project=project)
        return [stored(pk) for pk in queryset.values_list("pk", flat=True)]


@pytest.fixture
def board(world) -> Board:
    return Board(world)


def project_path(board, suffix: str = "") -> str:
    return f"/v1/projects/{board.world.project.pk}/issues{suffix}"


def titles(body) -> list[str]:
    return [item["title"] for item in body["data"]]


def get(client, path: str, params: dict | None = None):
    query = f"?{urlencode(params)}" if params else ""
    return client.get(f"{path}{query}")


# The oracle ---------------------------------------------------------------------------------


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def oracle(board: Board, records: list[dict], params: dict, *, me: int) -> list[int]:
    """The ids a list with ``params`` should show, in order: the contract in plain Python."""

    def keep(record) -> bool:
        if "status" in params and record["status"] not in params["status"].split(","):
            return False
        if "type" in params and record["type"] not in params["type"].split(","):
            return False
        if "priority" in params and record["priority"] not in params["priority"].split(","):
            return False
        if "assignee" in params:
            value = params["assignee"]
            if value == "me":
                wanted = me
            elif value == "none":
                wanted = None
            elif value.isdigit():
                wanted = int(value)
            else:
                wanted = next(
                    (pk for pk, email in board.emails.items() if email == value.lower()), -1
                )
            if record["assignee_id"] != wanted:
                return False
        if "labels" in params:
            names = {name.strip() for name in params["labels"].split(",") if name.strip()}
            if not names <= set(record["labels"]):
                return False
        if "q" in params:
            needle = params["q"].lower()
            if needle not in record["title"].lower() + "\n" + record["description"].lower():
                return False
        for name, field, before in (
            ("created_after", "created_at", False),
            ("created_before", "created_at", True),
            ("updated_after", "updated_at", False),
        ):
            if name in params and (_time(record[field]) < _time(params[name])) is not before:
                return False
        return not ("project_id" in params and record["project_id"] != int(params["project_id"]))

    kept = [record for record in records if keep(record)]
    sort = params.get("sort", "-created_at")
    field = sort.lstrip("-")
    descending = sort.startswith("-")

    def key(record):
        if field == "priority":
            return PRIORITY_RANK[record["priority"]]
        return _time(record[field]) if field.endswith("_at") else record[field]

    # Ties fall back to the newest first (-id), whatever the direction.
    kept.sort(key=lambda record: -record["id"])
    kept.sort(key=key, reverse=descending)
    return [record["id"] for record in kept]


# Single filters, by hand --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, ["Tidy CSS", "Crash on upload", "Write docs", "Refactor auth", "Add dark mode",
              "Login fails"]),
        ({"status": "open"}, ["Crash on upload", "Write docs", "Login fails"]),
        ({"status": "closed"}, ["Tidy CSS", "Refactor auth"]),
        ({"status": "in_progress"}, ["Add dark mode"]),
        ({"status": "open,in_progress"},
         ["Crash on upload", "Write docs", "Add dark mode", "Login fails"]),
        ({"status": "open,in_progress,closed"},
         ["Tidy CSS", "Crash on upload", "Write docs", "Refactor auth", "Add dark mode",
          "Login fails"]),
        ({"type": "bug"}, ["Crash on upload", "Login fails"]),
        ({"type": "improvement"}, ["Tidy CSS", "Refactor auth"]),
        ({"type": "feature,task"}, ["Write docs", "Add dark mode"]),
        ({"priority": "high"}, ["Crash on upload", "Write docs"]),
        ({"priority": "low,critical"}, ["Tidy CSS", "Add dark mode", "Login fails"]),
        ({"assignee": "me"}, ["Refactor auth", "Login fails"]),  # as the developer
        ({"assignee": "none"}, ["Tidy CSS", "Write docs"]),
        ({"assignee": "{viewer}"}, ["Add dark mode"]),
        ({"assignee": "viewer@acme.test"}, ["Add dark mode"]),
        ({"assignee": "Viewer@ACME.test"}, ["Add dark mode"]),
        ({"assignee": "nobody@acme.test"}, []),
        ({"assignee": "999999"}, []),
        ({"labels": "backend"}, ["Crash on upload", "Refactor auth", "Login fails"]),
        ({"labels": "urgent,backend"}, ["Crash on upload", "Login fails"]),
        ({"labels": "backend,frontend,urgent"}, ["Crash on upload"]),
        ({"labels": " frontend , urgent,"}, ["Tidy CSS", "Crash on upload"]),
        ({"labels": "nope"}, []),
        ({"labels": ","}, ["Tidy CSS", "Crash on upload", "Write docs", "Refactor auth",
                           "Add dark mode", "Login fails"]),  # no names: no filter
        ({"labels": "backend,nope"}, []),
        ({"q": "login"}, ["Refactor auth", "Login fails"]),  # title or description
        ({"q": "LOGIN code"}, ["Refactor auth"]),
        ({"q": "500 ON"}, ["Login fails"]),
        ({"q": "zzz"}, []),
        ({"created_after": "2026-01-10T12:00:00Z"},
         ["Tidy CSS", "Crash on upload", "Write docs", "Refactor auth"]),
        ({"created_before": "2026-01-10T12:00:00Z"}, ["Add dark mode", "Login fails"]),
        # The same instant written with an offset.
        ({"created_before": "2026-01-10T14:00:00+02:00"}, ["Add dark mode", "Login fails"]),
        ({"created_after": "2026-01-05T00:00:00Z", "created_before": "2026-01-16T00:00:00Z"},
         ["Write docs", "Refactor auth", "Add dark mode"]),
        ({"updated_after": "2026-01-21T12:00:00Z"}, ["Tidy CSS", "Crash on upload", "Login fails"]),
        # Combinations.
        ({"status": "open", "assignee": "me"}, ["Login fails"]),
        ({"status": "open,closed", "labels": "urgent"},
         ["Tidy CSS", "Crash on upload", "Login fails"]),
        ({"type": "bug", "priority": "high", "labels": "frontend"}, ["Crash on upload"]),
        ({"q": "login", "status": "closed", "assignee": "dev@acme.test"}, ["Refactor auth"]),
        ({"assignee": "none", "labels": "urgent", "created_after": "2026-01-20T00:00:00Z"},
         ["Tidy CSS"]),
        # Equal priorities: the newest first.
        ({"status": "open", "sort": "priority"}, ["Crash on upload", "Write docs", "Login fails"]),
    ],
)  # fmt: skip
def test_project_list_filters(world, board, params, expected):
    params = {key: value.format(viewer=world.viewer.pk) for key, value in params.items()}
    body = assert_ok(get(client_for(world.developer), project_path(board), params))
    assert titles(body) == expected
    assert body["meta"]["total"] == len(expected)
    assert body["data"] == [stored(board.ids[title]) for title in expected]
    records = board.records(world.project)
    assert [board.titles[pk] for pk in oracle(board, records, params, me=world.developer.pk)] == (
        expected
    )


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        ("-created_at", ["Tidy CSS", "Crash on upload", "Write docs", "Refactor auth",
                         "Add dark mode", "Login fails"]),
        ("created_at", ["Login fails", "Add dark mode", "Refactor auth", "Write docs",
                        "Crash on upload", "Tidy CSS"]),
        # By urgency, low < medium < high < critical; ties newest first.
        ("priority", ["Tidy CSS", "Add dark mode", "Refactor auth", "Crash on upload",
                      "Write docs", "Login fails"]),
        ("-priority", ["Login fails", "Crash on upload", "Write docs", "Refactor auth",
                       "Tidy CSS", "Add dark mode"]),
        ("updated_at", ["Add dark mode", "Refactor auth", "Write docs", "Crash on upload",
                        "Tidy CSS", "Login fails"]),
        ("-updated_at", ["Login fails", "Tidy CSS", "Crash on upload", "Write docs",
                         "Refactor auth", "Add dark mode"]),
        ("number", ["Login fails", "Add dark mode", "Refactor auth", "Write docs",
                    "Crash on upload", "Tidy CSS"]),
        ("-number", ["Tidy CSS", "Crash on upload", "Write docs", "Refactor auth",
                     "Add dark mode", "Login fails"]),
    ],
)  # fmt: skip
def test_sort(world, board, sort, expected):
    client = client_for(world.owner)
    body = assert_ok(get(client, project_path(board), {"sort": sort}))
    assert titles(body) == expected
    assert body["meta"]["total"] == 6
    # The same order across pages.
    paged = []
    for page in (1, 2, 3):
        response = get(client, project_path(board), {"sort": sort, "per_page": 2, "page": page})
        paged += titles(assert_ok(response))
    assert paged == expected


def test_sort_ties_fall_back_to_the_newest(world, board):
    Issue.objects.filter(project=world.project).update(created_at=JAN)
    body = assert_ok(get(client_for(world.owner), project_path(board), {"sort": "created_at"}))
    assert [item["number"] for item in body["data"]] == [6, 5, 4, 3, 2, 1]
    body = assert_ok(get(client_for(world.owner), project_path(board)))
    assert [item["number"] for item in body["data"]] == [6, 5, 4, 3, 2, 1]


def test_global_list_spans_visible_projects(world, board):
    client = client_for(world.developer)
    body = assert_ok(get(client, "/v1/issues", {"q": "login"}))
    assert titles(body) == ["Refactor auth", "Lobby login", "Login fails"]
    assert body["meta"]["total"] == 3
    body = assert_ok(get(client, "/v1/issues", {"labels": "backend", "status": "open"}))
    assert titles(body) == ["Crash on upload", "Lobby login", "Login fails"]
    body = assert_ok(get(client, "/v1/issues", {"project_id": board.lobby.pk}))
    assert titles(body) == ["Lobby closed", "Lobby login"]
    body = assert_ok(get(client, "/v1/issues", {"project_id": board.lobby.pk, "status": "open"}))
    assert titles(body) == ["Lobby login"]
    assert body["meta"]["total"] == 1
    body = assert_ok(get(client, "/v1/issues", {"assignee": "outsider@globex.test"}))
    assert body["data"] == [] and body["meta"]["total"] == 0
    # Globex's issues are no one's business in Acme, whatever the filter.
    body = assert_ok(get(client, "/v1/issues", {"project_id": world.other_project.pk}))
    assert body["data"] == [] and body["meta"]["total"] == 0


def test_the_outsider_sees_only_globex(world, board):
    client = client_for(world.outsider)
    for params in ({}, {"status": "open"}, {"q": "login"}, {"labels": "backend"}):
        body = assert_ok(get(client, "/v1/issues", params))
        assert titles(body) == ["Secret login"], params
        assert body["meta"]["total"] == 1
    body = assert_ok(get(client, "/v1/issues", {"project_id": world.project.pk}))
    assert body["data"] == [] and body["meta"]["total"] == 0


# Every combination, against the oracle ------------------------------------------------------

COMBINATIONS = list(
    itertools.product(
        [None, "open", "in_progress,closed"],  # status
        [None, "me", "none", "dev@acme.test"],  # assignee
        [None, "backend", "backend,urgent"],  # labels
        [None, "bug,improvement"],  # type
        [None, "login"],  # q
        [None, "-priority"],  # sort
    )
)
NAMES = ("status", "assignee", "labels", "type", "q", "sort")


@pytest.mark.parametrize("where", ["project", "global"])
def test_every_combination_matches_the_oracle(world, board, where):
    client = client_for(world.developer)
    path = project_path(board) if where == "project" else "/v1/issues"
    records = board.records(world.project if where == "project" else None)
    checked = 0
    for values in COMBINATIONS:
        params = {name: value for name, value in zip(NAMES, values, strict=True) if value}
        expected = oracle(board, records, params, me=world.developer.pk)
        body = assert_ok(get(client, path, {**params, "per_page": 100}))
        assert [item["id"] for item in body["data"]] == expected, params
        assert body["meta"]["total"] == len(expected), params
        assert body["meta"]["total"] == _orm_count(world, board, where, params), params
        # A small page: the total stays exact, the page is the head of the list.
        body = assert_ok(get(client, path, {**params, "per_page": 2}))
        assert [item["id"] for item in body["data"]] == expected[:2], params
        assert body["meta"]["total"] == len(expected), params
        assert body["meta"]["total_pages"] == max(1, -(-len(expected) // 2)), params
        checked += 1
    assert checked == len(COMBINATIONS) == 288


def _orm_count(world, board, where: str, params: dict) -> int:
    """A direct COUNT of the same selection, written with the ORM."""
    queryset = Issue.objects.filter(project__workspace=world.acme)
    if where == "project":
        queryset = queryset.filter(project=world.project)
    if "status" in params:
        queryset = queryset.filter(status__in=params["status"].split(","))
    if "type" in params:
        queryset = queryset.filter(type__in=params["type"].split(","))
    if params.get("assignee") == "me" or params.get("assignee") == "dev@acme.test":
        queryset = queryset.filter(assignee=world.developer)
    elif params.get("assignee") == "none":
        queryset = queryset.filter(assignee__isnull=True)
    for name in params.get("labels", "").split(","):
        if name:
            queryset = queryset.filter(labels__name=name)
    if "q" in params:
        queryset = queryset.filter(
            Q(title__icontains=params["q"]) | Q(description__icontains=params["q"])
        )
    return queryset.distinct().count()


# Totals from the counters -------------------------------------------------------------------


def _count_queries(client, path: str, params: dict) -> tuple[dict, list[str]]:
    with CaptureQueriesContext(connection) as captured:
        body = assert_ok(get(client, path, params))
    return body, [query["sql"] for query in captured.captured_queries]


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"status": "open"},
        {"status": "open,closed"},
        {"status": "closed", "sort": "priority"},
        {"sort": "-number", "page": "2", "per_page": "2"},
        {"status": "in_progress", "per_page": "1"},
    ],
)
@pytest.mark.parametrize("where", ["project", "global", "global_project"])
def test_counter_path_totals_are_exact(world, board, params, where):
    client = client_for(world.owner)
    if where == "project":
        path, queryset = project_path(board), Issue.objects.filter(project=world.project)
    elif where == "global":
        path, queryset = "/v1/issues", Issue.objects.filter(project__workspace=world.acme)
    else:
        path, queryset = "/v1/issues", Issue.objects.filter(project=board.lobby)
        params = {**params, "project_id": str(board.lobby.pk)}
    if "status" in params:
        queryset = queryset.filter(status__in=params["status"].split(","))

    # A few changes through the API first: the counters follow every one of them.
    first = Issue.objects.get(pk=board.ids["Write docs"])
    assert_ok(client.patch(f"/v1/issues/{first.pk}", {"status": "closed"}, format="json"))
    assert_ok(client.patch(f"/v1/issues/{first.pk}", {"status": "in_progress"}, format="json"))
    assert_ok(client.delete(f"/v1/issues/{board.ids['Tidy CSS']}"))
    assert_ok(client.delete(f"/v1/issues/{board.ids['Lobby closed']}"))
    assert_ok(
        client.post(
            f"/v1/projects/{board.lobby.pk}/issues",
            {"title": "New", "status": "closed"},
            format="json",
        ),
        201,
    )

    body, sql = _count_queries(client, path, params)
    assert body["meta"]["total"] == queryset.count()
    assert body["meta"]["total_count"] == queryset.count()
    # The total came from the counters, not from counting the issues.
    assert any("issues_issuestatuscount" in query for query in sql)
    assert not any("COUNT(" in query and '"issues_issue"' in query for query in sql), sql


@pytest.mark.parametrize(
    "params",
    [
        {"assignee": "none"},
        {"labels": "urgent"},
        {"type": "bug"},
        {"priority": "low", "status": "closed"},
        {"created_after": "2026-01-10T00:00:00Z"},
        {"status": "open", "updated_after": "2026-01-10T00:00:00Z"},
        pytest.param({"q": "login"}, marks=POSTGRESQL_ONLY),
        pytest.param({"q": "LOGIN", "status": "open"}, marks=POSTGRESQL_ONLY),
    ],
)
def test_one_more_filter_reads_the_per_value_counters(world, board, params):
    """One filter besides status (a value, one label, a time range from midnight, one plain
    word searched on PostgreSQL): its total comes from the per-value counters of
    issues.facets, exact, no issue counted."""
    client = client_for(world.owner)
    body, sql = _count_queries(client, project_path(board), params)
    expected = oracle(board, board.records(world.project), params, me=world.owner.pk)
    assert body["meta"]["total"] == len(expected)
    assert [item["id"] for item in body["data"]] == expected
    assert any("issues_issuefacetcount" in query for query in sql), sql
    assert not any(
        query.startswith('SELECT COUNT(*) AS "__count" FROM "issues_issue"') for query in sql
    ), sql


@pytest.mark.parametrize(
    "params",
    [
        {"q": "login fails"},  # prefixes and exclusions: tests/issues/test_facet_counts.py
        {"labels": "urgent,backend"},
        {"type": "bug", "priority": "high"},
        {"assignee": "none", "created_after": "2026-01-10T00:00:00Z"},
        {"status": "open", "unknown": "1"},
    ],
)
def test_other_filters_count_the_rows(world, board, params):
    """The rest count the rows: several filters, several labels, a search that is not one
    plain word or a phrase of two (any search on SQLite, which keeps no word counters)."""
    client = client_for(world.owner)
    body, sql = _count_queries(client, project_path(board), params)
    expected = oracle(board, board.records(world.project), params, me=world.owner.pk)
    assert body["meta"]["total"] == len(expected)
    assert [item["id"] for item in body["data"]] == expected
    # The total came from counting the issues; the counters are only read, unused, in the
    # project's own lookup (which reads them for every request of the list).
    assert any("COUNT(" in query and '"issues_issue"' in query for query in sql), sql
    assert all(
        query.startswith('SELECT "projects_project"')
        for query in sql
        if "issues_issuestatuscount" in query
    ), sql


def test_a_project_id_on_the_project_list_is_ignored(world, board):
    """``project_id`` filters /v1/issues only; on a project's own list it is an unknown
    parameter, ignored like any other: it must neither change the total nor fail."""
    client = client_for(world.owner)
    for value in (str(board.lobby.pk), str(world.other_project.pk), "abc"):
        for extra in ({}, {"status": "open"}):
            body = assert_ok(get(client, project_path(board), {"project_id": value, **extra}))
            expected = 3 if extra else 6
            assert len(body["data"]) == body["meta"]["total"] == expected, (value, extra)
            assert {item["project_id"] for item in body["data"]} == {world.project.pk}


def test_a_public_project_of_another_workspace_counts_in_the_global_total(world, board):
    plaza = ProjectFactory(workspace=world.globex, visibility=Project.Visibility.PUBLIC)
    make_issue(plaza, world.outsider, title="Public one")
    client = client_for(world.viewer)
    for params in ({}, {"status": "open"}, {"q": "-zzz"}):  # q: matches every issue, counted
        body = assert_ok(get(client, "/v1/issues", {**params, "per_page": 100}))
        assert "Public one" in titles(body)
        assert "Secret login" not in titles(body)
        assert body["meta"]["total"] == len(body["data"]), params


def test_a_private_project_off_the_team_counts_nowhere(world, board):
    vault = ProjectFactory(workspace=world.acme, name="Vault")
    make_issue(vault, world.owner, title="Vault issue")
    newcomer = UserFactory()
    MembershipFactory(workspace=world.acme, user=newcomer, role=Role.DEVELOPER)
    for user, sees in ((world.developer, False), (world.admin, True), (newcomer, False)):
        for params in ({}, {"status": "open"}, {"project_id": vault.pk}):
            body = assert_ok(get(client_for(user), "/v1/issues", {**params, "per_page": 100}))
            assert ("Vault issue" in titles(body)) is sees
            assert body["meta"]["total"] == len(body["data"])


# Invalid values -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"status": "bogus"}, ["status"]),
        ({"status": "open,bogus"}, ["status"]),
        ({"status": ""}, ["status"]),
        ({"type": "epic"}, ["type"]),
        ({"priority": "urgent"}, ["priority"]),
        ({"assignee": "not-an-email"}, ["assignee"]),
        ({"assignee": "-3"}, ["assignee"]),
        ({"assignee": ""}, ["assignee"]),
        ({"sort": "title"}, ["sort"]),
        ({"sort": "-title"}, ["sort"]),
        ({"sort": "priority_rank"}, ["sort"]),
        ({"sort": ""}, ["sort"]),
        ({"created_after": "yesterday"}, ["created_after"]),
        ({"created_before": "2026-13-01T00:00:00Z"}, ["created_before"]),
        ({"updated_after": "abc"}, ["updated_after"]),
        ({"created_after": ""}, ["created_after"]),
        ({"status": "bogus", "sort": "title"}, ["sort", "status"]),
        ({"page": "0"}, ["page"]),
        ({"page": "abc"}, ["page"]),
        ({"per_page": "0"}, ["per_page"]),
        ({"per_page": "-5"}, ["per_page"]),
    ],
)
@pytest.mark.parametrize("where", ["project", "global"])
def test_invalid_values_are_400_naming_the_parameter(world, board, params, named, where):
    path = project_path(board) if where == "project" else "/v1/issues"
    error = assert_error(get(client_for(world.owner), path, params), 400, "BAD_REQUEST")
    assert sorted(error["details"]) == named
    for messages in error["details"].values():
        assert messages and all(isinstance(message, str) for message in messages)


@pytest.mark.parametrize("value", ["abc", "1.5", "-1", "", "1e3"])
def test_invalid_project_id_is_400(world, board, value):
    response = get(client_for(world.owner), "/v1/issues", {"project_id": value})
    error = assert_error(response, 400, "BAD_REQUEST")
    assert list(error["details"]) == ["project_id"]


def test_a_page_past_the_end_is_empty(world, board):
    for params in ({"page": 9}, {"page": 9, "q": "login"}):
        body = assert_ok(get(client_for(world.owner), project_path(board), params))
        assert body["data"] == []
        assert body["meta"]["total"] == (6 if "q" not in params else 2)


def test_per_page_is_clamped_to_100(world, board):
    body = assert_ok(get(client_for(world.owner), "/v1/issues", {"per_page": 1000}))
    assert body["meta"]["per_page"] == 100
    assert len(body["data"]) == 8
