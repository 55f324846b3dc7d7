"""Cursor pagination (docs/guide/pagination.md) beside ``page``/``per_page``: stable under
writes between pages (keyset, not an offset), every issue sort (ties included), NULLs in either
place, refused (400, in the envelope) when forged, emptied, combined with ``page`` or reused on
another list, sort or filter, and worthless to a caller who may not see the rows it points
between. Every list route of the schema is swept in test_cursor_sweep.py.
"""

import base64
import json
import re
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import pytest
from django.db.models import F
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from collab.api.cursors import CURSOR_PATTERN, MAX_CURSOR_LENGTH, cursor_decode, cursor_encode
from collab.api.pagination import PagePagination
from events.models import Event
from gitintegration import services as git_services
from issues import services as issue_services
from issues.models import PRIORITY_RANK, Issue, Priority
from projects.models import Project
from tests.api.paging import (
    CURSOR,
    CURSOR_META,
    captured,
    ids,
    links,
    walk,
    whole,
    with_query,
)
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import (
    ProjectFactory,
    make_issue,
)

SORTS = ["created_at", "updated_at", "number", "priority"]


# Issue lists: every sort, ties, and writes between pages ------------------------------------


@pytest.fixture
def tied(world):
    """Twelve issues of Rocket sharing few creation and update times and priorities, so every
    sort has runs of ties that only the id breaks."""
    instants = [datetime(2026, 3, 1, 9, tzinfo=UTC) + timedelta(hours=h) for h in (0, 0, 5)]
    priorities = list(Priority)
    made = []
    for n in range(12):
        issue = make_issue(world.project, world.owner, title=f"Tied {n}")
        Issue.objects.filter(pk=issue.pk).update(
            created_at=instants[n % 3],
            updated_at=instants[(n // 3) % 3],
            priority=priorities[n % 2],
            priority_rank=PRIORITY_RANK[priorities[n % 2]],
        )
        made.append(issue.pk)
    return made


@pytest.mark.parametrize("where", ["project", "global"])
@pytest.mark.parametrize("sort", [*SORTS, *[f"-{s}" for s in SORTS], None])
def test_every_issue_sort_walks_every_row_once_through_ties(api, world, tied, where, sort):
    path = f"/v1/projects/{world.project.pk}/issues" if where == "project" else "/v1/issues"
    if sort is not None:
        path = with_query(path, sort=sort)
    everything = whole(api.owner, path)
    assert sorted(ids(everything)) == sorted(tied)
    for per_page in (1, 5):
        walked = walk(api.owner, path, per_page)
        assert ids(walked) == ids(everything), (sort, per_page)


def test_a_cursor_stays_put_when_issues_are_created_and_deleted_between_pages(api, world):
    for n in range(6):
        make_issue(world.project, world.owner, title=f"Before {n}")
    path = f"/v1/projects/{world.project.pk}/issues?per_page=2"
    before = ids(whole(api.owner, path))
    first = assert_ok(api.owner.get(path))
    cursor = first["meta"]["next_cursor"]
    # Newest first: new issues go on top, where a page by number would shift everything down.
    make_issue(world.project, world.owner, title="Newcomer")
    make_issue(world.project, world.owner, title="Another")
    # The last row of page 1, the one the cursor was made from, goes away too.
    Issue.objects.filter(pk=ids(first["data"])[-1]).delete()
    second = assert_ok(api.owner.get(with_query(path, cursor=cursor)))
    assert ids(second["data"]) == before[2:4]
    shifted = assert_ok(api.owner.get(with_query(path, page=2)))
    assert ids(shifted["data"]) != before[2:4]  # what the cursor is for
    rest = walk_from(api.owner, path, second["meta"]["next_cursor"])
    assert ids(rest) == before[4:]


def walk_from(client, path: str, cursor: str | None) -> list:
    rows = []
    while cursor is not None:
        body = assert_ok(client.get(with_query(path, cursor=cursor)))
        rows += body["data"]
        cursor = body["meta"]["next_cursor"]
    return rows


def test_an_incremental_sync_sees_every_change_once_at_least(api, world):
    """The recipe of docs/guide/pagination.md: ``sort=updated_at&updated_after=<last sync>``,
    then cursors. A row
    changed during the walk moves behind the cursor and comes again; none is skipped."""
    start = timezone.now() - timedelta(hours=1)
    made = [make_issue(world.project, world.owner, title=f"Sync {n}") for n in range(7)]
    for n, issue in enumerate(made):
        Issue.objects.filter(pk=issue.pk).update(updated_at=start + timedelta(minutes=n))
    Issue.objects.filter(pk=made[0].pk).update(updated_at=start - timedelta(days=1))  # synced
    path = "/v1/issues?" + urlencode(
        {"sort": "updated_at", "updated_after": start.isoformat(), "per_page": 3}
    )
    first = assert_ok(api.owner.get(path))
    assert ids(first["data"]) == [issue.pk for issue in made[1:4]]
    # Changed while the client is between pages: one it has, one it has not reached yet.
    issue_services.issue_update(issue=made[2], actor=world.owner, title="Changed again")
    issue_services.issue_update(issue=made[5], actor=world.owner, title="Changed meanwhile")
    rest = walk_from(api.owner, path, first["meta"]["next_cursor"])
    assert ids(rest) == [made[4].pk, made[6].pk, made[2].pk, made[5].pk]
    latest = max(row["updated_at"] for row in rest)
    assert latest == assert_ok(api.owner.get(f"/v1/issues/{made[5].pk}"))["data"]["updated_at"]


def test_per_page_may_change_between_pages(api, world):
    for n in range(7):
        make_issue(world.project, world.owner, title=f"Issue {n}")
    path = f"/v1/projects/{world.project.pk}/issues"
    everything = ids(whole(api.owner, path))
    first = assert_ok(api.owner.get(with_query(path, per_page=2)))
    rest = assert_ok(
        api.owner.get(with_query(path, per_page=5, cursor=first["meta"]["next_cursor"]))
    )
    assert ids(first["data"]) + ids(rest["data"]) == everything
    assert rest["meta"]["next_cursor"] is None
    assert rest["meta"] == {"total": 7, "per_page": 5, "total_count": 7, "next_cursor": None}


def test_the_issue_lists_cursor_pages_read_the_kept_counters(api, world, tied):
    """A cursor is paging, not a filter: the total still comes from the counters, in the
    queries page 1 costs (no COUNT)."""
    for path in (f"/v1/projects/{world.project.pk}/issues?status=open", "/v1/issues"):
        api.owner.get(path)
        first, first_sql = captured(api.owner, with_query(path, per_page=4))
        cursor = first["meta"]["next_cursor"]
        second, second_sql = captured(api.owner, with_query(path, per_page=4, cursor=cursor))
        assert len(second_sql) == len(first_sql)
        assert not any("COUNT(" in sql.upper() for sql in second_sql), second_sql
        assert second["meta"]["total"] == first["meta"]["total"] == 12


def test_a_cursor_page_runs_as_many_queries_as_page_one(
    api, world, tied, django_assert_num_queries
):
    path = f"/v1/projects/{world.project.pk}/issues?per_page=5&sort=-priority"
    api.owner.get(path)
    first, first_sql = captured(api.owner, path)
    with django_assert_num_queries(len(first_sql)):
        api.owner.get(with_query(path, cursor=first["meta"]["next_cursor"]))


# Refusals -----------------------------------------------------------------------------------


def _cursor_of(client, path: str) -> str:
    cursor = assert_ok(client.get(with_query(path, per_page=1)))["meta"]["next_cursor"]
    assert cursor
    return cursor


@pytest.fixture
def three(world):
    return [make_issue(world.project, world.owner, title=f"Three {n}") for n in range(3)]


def test_page_and_cursor_together_are_400(api, world, three):
    path = f"/v1/projects/{world.project.pk}/issues"
    cursor = _cursor_of(api.owner, path)
    for page in ("1", "2", "", "abc"):
        answer = api.owner.get(path, {"cursor": cursor, "page": page})
        error = assert_error(answer, 400, "BAD_REQUEST")
        assert set(error["details"]) == {"page", "cursor"}
        assert set(answer.json()) == {"success", "error"}


def _tampered(cursor: str) -> str:
    raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    raw[-2] ^= 1
    return base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


def _unsigned(payload: dict) -> str:
    body = b"\0" * 12 + json.dumps(payload).encode()
    return base64.urlsafe_b64encode(body).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "make",
    [
        lambda good: "",
        lambda good: "garbage",
        lambda good: "a",
        lambda good: "!!!!",
        lambda good: "%00",
        lambda good: "é",
        lambda good: good + "x",
        lambda good: good[:-3],
        lambda good: good[::-1],
        lambda good: "A" * (MAX_CURSOR_LENGTH + 1),
        lambda good: "A" * 10_000,
        _tampered,
        lambda good: _unsigned({"f": "0", "k": [1, 2]}),
        lambda good: base64.urlsafe_b64encode(b"[1, 2, 3]").decode().rstrip("="),
    ],
)
def test_a_cursor_the_server_did_not_give_is_400_in_the_envelope(api, world, three, make):
    path = f"/v1/projects/{world.project.pk}/issues"
    answer = api.owner.get(path, {"cursor": make(_cursor_of(api.owner, path))})
    error = assert_error(answer, 400, "BAD_REQUEST")
    assert list(error["details"]) == ["cursor"]
    assert all(isinstance(message, str) for message in error["details"]["cursor"])
    assert set(answer.json()) == {"success", "error"}


def test_a_signed_payload_of_the_wrong_shape_is_400_not_500(api, world, three):
    """Only this server signs, but what it signed once in another shape is refused cleanly."""
    path = f"/v1/projects/{world.project.pk}/issues"
    good = cursor_decode(_cursor_of(api.owner, path))
    for payload in (
        {"f": good["f"]},
        {"f": good["f"], "k": "x"},
        {"f": good["f"], "k": good["k"][:1]},
        {"f": good["f"], "k": [*good["k"], 1]},
        {"f": good["f"], "o": 3},
    ):
        assert_error(api.owner.get(path, {"cursor": cursor_encode(payload)}), 400, "BAD_REQUEST")


@pytest.mark.parametrize(
    ("issued_with", "used_with"),
    [
        ({"sort": "created_at"}, {"sort": "-created_at"}),
        ({"sort": "priority"}, {"sort": "number"}),
        ({}, {"sort": "-created_at"}),  # the same order, but not the same request
        ({"status": "open"}, {"status": "closed"}),
        ({"status": "open"}, {}),
        ({}, {"q": "Three"}),
        ({"q": "Three"}, {"q": "Three", "type": "task"}),
    ],
)
def test_a_cursor_reused_with_another_sort_or_filter_is_400(
    api, world, three, issued_with, used_with
):
    path = f"/v1/projects/{world.project.pk}/issues"
    cursor = _cursor_of(api.owner, with_query(path, **issued_with))
    answer = api.owner.get(path, {**used_with, "cursor": cursor})
    error = assert_error(answer, 400, "BAD_REQUEST")
    assert list(error["details"]) == ["cursor"]
    assert "another list, sort or filter" in error["message"]


def test_a_cursor_reused_on_another_list_is_400(api, world, three):
    lobby = ProjectFactory(workspace=world.acme, name="Lobby", created_by=world.owner)
    make_issue(lobby, world.owner, title="Elsewhere")
    cursor = _cursor_of(api.owner, f"/v1/projects/{world.project.pk}/issues")
    for path in (f"/v1/projects/{lobby.pk}/issues", "/v1/issues", "/v1/projects", "/v1/events"):
        assert_error(api.owner.get(path, {"cursor": cursor}), 400, "BAD_REQUEST")


def test_a_cursor_grants_nothing_to_an_outsider(api, world, three):
    """A cursor positions within the rows its holder may list: the outsider holding the
    owner's cursor of /v1/issues sees Globex's rows only, and Rocket's list stays a 404."""
    make_issue(world.other_project, world.outsider, title="Globex's own")
    cursor = _cursor_of(api.owner, "/v1/issues")
    seen = assert_ok(api.outsider.get("/v1/issues", {"cursor": cursor, "per_page": 1}))
    assert {row["project_id"] for row in seen["data"]} <= {world.other_project.pk}
    assert seen["meta"]["total"] == 1
    rocket = f"/v1/projects/{world.project.pk}/issues"
    rocket_cursor = _cursor_of(api.owner, rocket)
    assert_error(api.outsider.get(rocket, {"cursor": rocket_cursor}), 404, "NOT_FOUND")
    history = f"/v1/issues/{three[0].pk}/history"
    issue_services.issue_update(issue=three[0], actor=world.owner, title="Again")
    assert_error(
        api.outsider.get(history, {"cursor": _cursor_of(api.owner, history)}), 404, "NOT_FOUND"
    )


def test_cursors_survive_a_key_rotation_while_the_old_key_is_a_fallback(
    api, world, three, settings
):
    path = f"/v1/projects/{world.project.pk}/issues"
    cursor = _cursor_of(api.owner, path)
    old = settings.SECRET_KEY
    settings.SECRET_KEY = "a-new-secret-key-for-this-test-only-0123456789"
    settings.SECRET_KEY_FALLBACKS = [old]
    assert len(assert_ok(api.owner.get(path, {"cursor": cursor, "per_page": 1}))["data"]) == 1
    settings.SECRET_KEY_FALLBACKS = []
    assert_error(api.owner.get(path, {"cursor": cursor}), 400, "BAD_REQUEST")


# Meta and Link ------------------------------------------------------------------------------


def test_next_cursor_is_in_every_page_by_number_and_null_on_the_last(api, world, three):
    path = f"/v1/projects/{world.project.pk}/issues?per_page=2"
    first = assert_ok(api.owner.get(path))["meta"]
    assert CURSOR.fullmatch(first["next_cursor"])
    last = assert_ok(api.owner.get(with_query(path, page=2)))["meta"]
    assert last["next_cursor"] is None
    past = assert_ok(api.owner.get(with_query(path, page=9)))
    assert past["data"] == [] and past["meta"]["next_cursor"] is None
    empty = assert_ok(api.owner.get(f"/v1/projects/{world.project.pk}/labels"))
    assert empty["data"] == [] and empty["meta"]["next_cursor"] is None


def test_link_by_cursor_keeps_the_filters_and_names_next_only_while_there_is_one(api, world, three):
    path = f"/v1/projects/{world.project.pk}/issues?status=open&q=Three&per_page=500"
    first = assert_ok(api.owner.get(with_query(path, per_page=1)))
    response = api.owner.get(with_query(path, per_page=1, cursor=first["meta"]["next_cursor"]))
    rels = links(response)
    assert set(rels) == {"first", "next"}
    assert rels["next"] == {
        "status": "open",
        "q": "Three",
        "per_page": "1",
        "cursor": response.json()["meta"]["next_cursor"],
    }
    assert rels["first"] == {"status": "open", "q": "Three", "per_page": "1", "page": "1"}
    assert response["Link"].startswith("<http")
    last = api.owner.get(with_query(path, per_page=1, cursor=rels["next"]["cursor"]))
    assert assert_ok(last)["meta"]["next_cursor"] is None
    assert set(links(last)) == {"first"}
    clamped = api.owner.get(with_query(path, cursor=first["meta"]["next_cursor"]))
    assert assert_ok(clamped)["meta"]["per_page"] == 100
    assert links(clamped)["first"]["per_page"] == "100"


def test_a_cursor_past_the_end_answers_an_empty_last_page(api, world, three):
    path = f"/v1/projects/{world.project.pk}/issues"
    first = assert_ok(api.owner.get(with_query(path, per_page=2)))
    for issue in three:
        issue_services.issue_delete(issue=issue, actor=world.owner)
    body = assert_ok(api.owner.get(with_query(path, cursor=first["meta"]["next_cursor"])))
    assert body["data"] == []
    assert body["meta"] == {"total": 0, "per_page": 20, "total_count": 0, "next_cursor": None}


# NULLs, in either place, by the paginator itself ---------------------------------------------


def _paginate(queryset, **params) -> tuple[list, str | None]:
    request = Request(APIRequestFactory().get("/v1/test", params))
    paginator = PagePagination()
    rows = paginator.paginate_queryset(queryset, request)
    return rows, paginator.next_cursor


ORDERINGS = {
    "closed_at": ["closed_at"],
    "-closed_at": ["-closed_at"],
    "closed_at nulls first": [F("closed_at").asc(nulls_first=True)],
    "-closed_at nulls last": [F("closed_at").desc(nulls_last=True)],
    "assignee then -closed_at": ["assignee_id", "-closed_at"],
    "-assignee__email then closed_at": ["-assignee__email", "closed_at", "-id"],
}


@pytest.mark.parametrize("ordering", list(ORDERINGS))
@pytest.mark.parametrize("shape", ["models", "values"])
def test_orderings_on_columns_that_can_be_null_walk_every_row_once(world, ordering, shape):
    instants = [None, datetime(2026, 2, 1, tzinfo=UTC), datetime(2026, 2, 2, tzinfo=UTC)]
    assignees = [None, world.owner.pk, world.developer.pk]
    for n in range(14):
        issue = make_issue(world.project, world.owner, title=f"Null {n}")
        Issue.objects.filter(pk=issue.pk).update(
            closed_at=instants[n % 3], assignee_id=assignees[(n // 2) % 3]
        )
    queryset = Issue.objects.filter(project=world.project).order_by(*ORDERINGS[ordering])
    if shape == "values":
        queryset = queryset.values("id", "title")
    everything, _ = _paginate(queryset, per_page=100)
    expected = [row["id"] if shape == "values" else row.pk for row in everything]
    assert len(set(expected)) == 14
    for per_page in (1, 3):
        rows, cursor = _paginate(queryset, per_page=per_page)
        walked = list(rows)
        while cursor is not None:
            rows, cursor = _paginate(queryset, per_page=per_page, cursor=cursor)
            walked += rows
        got = [row["id"] if shape == "values" else row.pk for row in walked]
        assert got == expected, (ordering, per_page)
        if shape == "values":
            assert all(set(row) == {"id", "title"} for row in walked)  # no sort values leak


def test_a_random_order_is_refused_loudly():
    """No list may be in a random order: its pages would overlap, by number or by cursor."""
    with pytest.raises(TypeError):
        _paginate(Project.objects.order_by("?"), per_page=1)


# A branch's history: pinned at the tip the walk began from ---------------------------------


@pytest.fixture
def mirrored(world, tmp_path, settings, five_commits):
    """A real repository of Rocket, a copy of five commits on main, synced: its id, and the
    origin (which a test may push to)."""
    settings.GIT_STORAGE_DIR = tmp_path / "mirrors"
    origin = five_commits.copy_to(tmp_path)
    real = git_services.repository_create(
        project=world.project, actor=world.owner, name="origin", clone_url=origin.url
    )
    git_services.repository_sync(repository_id=real.pk)
    return {"real_repository": real.pk, "origin": origin}


def test_a_branch_history_walk_is_pinned_to_its_first_tip(world, mirrored):
    known = mirrored
    client = client_for(world.owner)
    path = f"/v1/repositories/{known['real_repository']}/commits?branch=main&per_page=2"
    before = ids_of_commits(whole(client, path))
    first = assert_ok(client.get(path))
    known["origin"].commit("main", {"n.txt": "pushed\n"}, "Pushed meanwhile")
    git_services.repository_sync(repository_id=known["real_repository"])
    assert len(whole(client, path)) == len(before) + 1
    rest = walk_from(client, path, first["meta"]["next_cursor"])
    assert ids_of_commits(first["data"]) + ids_of_commits(rest) == before
    # The offset such a cursor holds is checked like the rest of it.
    signed = cursor_decode(first["meta"]["next_cursor"])
    for offset in ("2", -1, None, 2.5):
        forged = cursor_encode({**signed, "o": offset})
        assert_error(client.get(with_query(path, cursor=forged)), 400, "BAD_REQUEST")


def ids_of_commits(rows) -> list[str]:
    return [row["sha"] for row in rows]


# The schema ---------------------------------------------------------------------------------


def test_the_schema_documents_cursor_and_next_cursor_on_every_list(document):
    schemas = document["components"]["schemas"]
    for operations in document["paths"].values():
        for operation in operations.values():
            parameters = {p["name"]: p for p in operation.get("parameters", [])}
            if "cursor" not in parameters:
                continue
            assert parameters["cursor"]["schema"] == {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_CURSOR_LENGTH,
                "pattern": CURSOR_PATTERN,
            }
            assert "page" in parameters and "per_page" in parameters
            page = operation["responses"]["200"]["content"]["application/json"]["schema"]
            meta = schemas[page["$ref"].rsplit("/", 1)[1]]["properties"]["meta"]
            assert meta == {
                "anyOf": [
                    {"$ref": "#/components/schemas/PageMeta"},
                    {"$ref": "#/components/schemas/CursorMeta"},
                ]
            }
    assert "next_cursor" in schemas["PageMeta"]["required"]
    assert set(schemas["CursorMeta"]["required"]) == CURSOR_META
    assert schemas["PageMeta"]["properties"]["next_cursor"]["nullable"] is True


def test_the_cursor_pattern_is_what_the_server_makes(api, world, three):
    cursor = _cursor_of(api.owner, f"/v1/projects/{world.project.pk}/issues")
    assert re.fullmatch(CURSOR_PATTERN, cursor)
    assert "=" not in cursor
    assert Event.objects.exists()  # the issues above made events: a cursor of the log too
    assert re.fullmatch(CURSOR_PATTERN, _cursor_of(api.owner, "/v1/events"))
