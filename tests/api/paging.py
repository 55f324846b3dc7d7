"""Walking a list by pages and by cursors (docs/guide/pagination.md), each answer checked: for
the cursor tests (test_cursor_pagination.py, test_cursor_sweep.py)."""

import re
from urllib.parse import parse_qs, urlencode, urlsplit

from django.db import connection
from django.test.utils import CaptureQueriesContext

from collab.api.cursors import CURSOR_PATTERN, MAX_CURSOR_LENGTH
from tests.conftest import assert_ok

CURSOR = re.compile(CURSOR_PATTERN)
PAGE_META = {"total", "page", "per_page", "current_page", "total_pages", "total_count"}
CURSOR_META = {"total", "per_page", "total_count", "next_cursor"}


def links(response) -> dict[str, dict[str, str]]:
    """The Link header as ``{rel: {query parameter: value}}``."""
    parsed = {}
    for url, rel in re.findall(r'<([^>]+)>;\s*rel="(\w+)"', response["Link"]):
        parsed[rel] = {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}
    return parsed


def with_query(path: str, **params) -> str:
    base, _, query = path.partition("?")
    merged = {**{k: v[0] for k, v in parse_qs(query, keep_blank_values=True).items()}, **params}
    return f"{base}?{urlencode(merged)}"


def whole(client, path: str) -> list:
    """Every row of a list, in one page by number."""
    body = assert_ok(client.get(with_query(path, per_page=100)))
    assert body["meta"]["total"] == len(body["data"]) <= 100, body["meta"]
    assert body["meta"]["next_cursor"] is None
    return body["data"]


def walk(client, path: str, per_page: int) -> list:
    """Every row of a list, page 1 by number then cursor after cursor, each answer checked:
    the meta's exact keys, its total, and the Link header's ``next`` naming the next cursor."""
    response = client.get(with_query(path, per_page=per_page))
    body = assert_ok(response)
    assert set(body["meta"]) == PAGE_META | {"next_cursor"}
    total = body["meta"]["total"]
    rows = list(body["data"])
    while True:
        cursor = body["meta"]["next_cursor"]
        rels = links(response)
        if cursor is None:
            assert "next" not in rels or "cursor" not in rels["next"]
            return rows
        assert CURSOR.fullmatch(cursor) and len(cursor) <= MAX_CURSOR_LENGTH, cursor
        assert len(body["data"]) == per_page
        response = client.get(with_query(path, per_page=per_page, cursor=cursor))
        body = assert_ok(response)
        assert set(body["meta"]) == CURSOR_META, body["meta"]
        assert body["meta"]["total"] == body["meta"]["total_count"] == total
        assert body["meta"]["per_page"] == per_page
        rels = links(response)
        assert rels["first"]["page"] == "1" and "cursor" not in rels["first"]
        if body["meta"]["next_cursor"] is None:
            assert "next" not in rels
        else:
            assert rels["next"]["cursor"] == body["meta"]["next_cursor"]
        assert len(rows) + len(body["data"]) <= total, "a walk gave more rows than the list"
        rows += body["data"]


def ids(rows) -> list:
    return [row.get("id", row.get("name")) for row in rows]


def captured(client, path: str) -> tuple[dict, list[str]]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    return assert_ok(response), [query["sql"] for query in queries.captured_queries]
