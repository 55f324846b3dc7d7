"""Lists against a real (scripted) HTTP server: iteration follows ``meta.next_cursor`` from the
first page on, keeps the filters on every request, and falls back to page numbers with a server
that gives no cursors; ``page(n)`` and ``after(cursor)`` take one page each."""

import asyncio
from urllib.parse import parse_qs, urlsplit

from collab_client import AsyncCollab, Collab
from scripted import Answer, ScriptedServer


def page_answer(ids: list[int], **meta) -> Answer:
    return Answer(
        body={"success": True, "data": [{"id": i, "title": f"#{i}"} for i in ids], "meta": meta}
    )


def by_number(page: int, total_pages: int, next_cursor: str | None) -> dict:
    return {
        "total": 5,
        "page": page,
        "per_page": 2,
        "current_page": page,
        "total_pages": total_pages,
        "total_count": 5,
        "next_cursor": next_cursor,
    }


def by_cursor(next_cursor: str | None) -> dict:
    return {"total": 5, "per_page": 2, "total_count": 5, "next_cursor": next_cursor}


CURSORED = [
    page_answer([5, 4], **by_number(1, 3, "c1")),
    page_answer([3, 2], **by_cursor("c2")),
    page_answer([1], **by_cursor(None)),
]


def queries(server) -> list[dict[str, str]]:
    return [
        {name: values[0] for name, values in parse_qs(urlsplit(seen.path).query).items()}
        for seen in server.seen
    ]


def test_iteration_follows_the_cursors_with_the_same_filters():
    with ScriptedServer(CURSORED) as server, Collab(server.url, api_key="clb_test") as client:
        walked = [issue.id for issue in client.issues.list(1, status="open", per_page=2)]
    assert walked == [5, 4, 3, 2, 1]
    assert queries(server) == [
        {"status": "open", "per_page": "2", "page": "1"},
        {"status": "open", "per_page": "2", "cursor": "c1"},
        {"status": "open", "per_page": "2", "cursor": "c2"},
    ]
    assert {urlsplit(seen.path).path for seen in server.seen} == {"/v1/projects/1/issues"}


def test_a_server_without_cursors_is_walked_by_page_number():
    old = [
        page_answer([5, 4], **{**by_number(1, 3, None), "next_cursor": None}),
        page_answer([3, 2], **by_number(2, 3, None)),
        page_answer([1], **by_number(3, 3, None)),
    ]
    for answer in old:
        del answer.body["meta"]["next_cursor"]
    with ScriptedServer(old) as server, Collab(server.url, api_key="clb_test") as client:
        walked = [issue.id for issue in client.issues.list(1, per_page=2)]
    assert walked == [5, 4, 3, 2, 1]
    assert [query.get("page") for query in queries(server)] == ["1", "2", "3"]
    assert not any("cursor" in query for query in queries(server))


def test_one_page_by_number_then_the_one_after_it_by_cursor():
    answers = [page_answer([3, 2], **by_number(2, 3, "c2")), CURSORED[2]]
    with ScriptedServer(answers) as server, Collab(server.url, api_key="clb_test") as client:
        pager = client.issues.list(1)
        page = pager.page(2, per_page=2)
        assert (page.meta.page, page.meta.total_pages, page.next_cursor) == (2, 3, "c2")
        assert page.has_next
        last = pager.after(page.next_cursor, per_page=2)
    assert [issue.id for issue in last.data] == [1]
    assert (last.meta.page, last.meta.total, last.next_cursor, last.has_next) == (
        None,
        5,
        None,
        False,
    )
    assert queries(server)[1] == {"per_page": "2", "cursor": "c2"}


def test_async_iteration_follows_the_cursors_too():
    async def walk(url: str) -> list[int]:
        async with AsyncCollab(url, api_key="clb_test") as client:
            return [issue.id async for issue in client.issues.list(1, per_page=2)]

    with ScriptedServer(CURSORED) as server:
        assert asyncio.run(walk(server.url)) == [5, 4, 3, 2, 1]
    assert [query.get("cursor") for query in queries(server)] == [None, "c1", "c2"]
