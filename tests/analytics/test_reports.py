"""Issue reports: streamed CSV and JSON with the issue list's filters, errors as envelopes."""

import csv
import io
import json

import pytest
from django.test import override_settings

from tests.conftest import assert_error
from tests.factories import make_issue


def _body(response) -> bytes:
    assert response.streaming
    return b"".join(response.streaming_content)


def _csv(response) -> list[dict]:
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv"
    assert response["Content-Disposition"].startswith('attachment; filename="project-')
    return list(csv.DictReader(io.StringIO(_body(response).decode())))


@pytest.fixture
def issues(world):
    first = make_issue(
        world.project, world.owner, title="Login fails", type="bug", labels=["backend", "ui"]
    )
    second = make_issue(
        world.project,
        world.owner,
        title='=HYPERLINK("http://evil")',
        description="line one\nline two, with a comma",
        priority="critical",
        assignee_id=world.developer.pk,
    )
    third = make_issue(world.project, world.owner, title="Done", status="closed")
    make_issue(world.other_project, world.outsider, title="Not yours")
    return first, second, third


def test_csv_holds_every_issue_with_its_fields(api, world, issues):
    first, second, third = issues
    rows = _csv(api.viewer.get(f"/v1/projects/{world.project.pk}/reports/issues?format=csv"))
    assert [row["number"] for row in rows] == ["3", "2", "1"]  # newest first, as the list
    by_number = {row["number"]: row for row in rows}
    assert list(rows[0]) == [
        "id", "project_id", "number", "title", "description", "type", "priority", "status",
        "assignee_id", "reporter_id", "created_at", "updated_at", "closed_at", "comment_count",
        "labels",
    ]  # fmt: skip
    assert by_number["1"]["labels"] == "backend;ui"
    assert by_number["1"]["type"] == "bug"
    assert by_number["1"]["assignee_id"] == ""
    assert by_number["1"]["closed_at"] == ""
    assert by_number["1"]["reporter_id"] == str(world.owner.pk)
    # A title a spreadsheet would run as a formula is written as text.
    assert by_number["2"]["title"] == '\'=HYPERLINK("http://evil")'
    assert by_number["2"]["description"] == "line one\nline two, with a comma"
    assert by_number["2"]["assignee_id"] == str(world.developer.pk)
    assert by_number["3"]["status"] == "closed"
    assert by_number["3"]["closed_at"].endswith("Z")
    assert by_number["3"]["id"] == str(third.pk)


def test_csv_is_the_default(api, world, issues):
    assert len(_csv(api.owner.get(f"/v1/projects/{world.project.pk}/reports/issues"))) == 3


def test_json_is_the_envelope_with_a_count(api, world, issues):
    response = api.owner.get(f"/v1/projects/{world.project.pk}/reports/issues?format=json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = json.loads(_body(response))
    assert body["success"] is True
    assert body["meta"] == {"count": 3}
    assert [issue["number"] for issue in body["data"]] == [3, 2, 1]
    assert body["data"][2]["labels"] == ["backend", "ui"]
    assert body["data"][2]["created_at"].endswith("Z")
    single = api.owner.get(f"/v1/issues/{issues[0].pk}").json()["data"]
    assert body["data"][2] == single


def test_the_issue_list_filters_apply(api, world, issues):
    url = f"/v1/projects/{world.project.pk}/reports/issues"
    rows = _csv(api.owner.get(url, {"status": "open", "sort": "number"}))
    assert [row["number"] for row in rows] == ["1", "2"]
    rows = _csv(api.owner.get(url, {"assignee": world.developer.email}))
    assert [row["number"] for row in rows] == ["2"]
    rows = _csv(api.owner.get(url, {"labels": "backend,ui", "type": "bug"}))
    assert [row["number"] for row in rows] == ["1"]
    body = json.loads(_body(api.owner.get(url, {"q": "nothing matches", "format": "json"})))
    assert body == {"success": True, "data": [], "meta": {"count": 0}}
    assert [row["title"] for row in _csv(api.owner.get(url, {"q": "nothing"}))] == []


@override_settings(ANALYTICS_REPORT_CHUNK_SIZE=2)
def test_many_chunks_stream_in_order(api, world, django_assert_max_num_queries):
    for number in range(7):
        make_issue(world.project, world.owner, title=f"Issue {number}", labels=[f"l{number}"])
    response = api.owner.get(
        f"/v1/projects/{world.project.pk}/reports/issues?format=json&sort=number"
    )
    body = json.loads(_body(response))
    assert [issue["title"] for issue in body["data"]] == [f"Issue {n}" for n in range(7)]
    assert [issue["labels"] for issue in body["data"]] == [[f"l{n}"] for n in range(7)]
    assert body["meta"]["count"] == 7
    csv_response = api.owner.get(f"/v1/projects/{world.project.pk}/reports/issues?sort=number")
    chunks = list(csv_response.streaming_content)
    assert len(chunks) == 1 + 4  # the header, then one piece per chunk of two rows


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("format=xml", "format"),
        ("format=", "format"),
        ("status=done", "status"),
        ("assignee=not-an-email", "assignee"),
        ("created_after=yesterday", "created_after"),
        ("sort=title", "sort"),
    ],
)
def test_bad_parameters_answer_the_json_error_envelope(api, world, query, parameter):
    response = api.owner.get(f"/v1/projects/{world.project.pk}/reports/issues?{query}")
    assert not response.streaming
    assert response["Content-Type"] == "application/json"
    error = assert_error(response, 400, "BAD_REQUEST")
    assert parameter in error["details"]


def test_outsider_and_archived(api, world):
    assert_error(
        api.outsider.get(f"/v1/projects/{world.project.pk}/reports/issues?format=csv"),
        404,
        "NOT_FOUND",
    )
    assert_error(
        api.anonymous.get(f"/v1/projects/{world.project.pk}/reports/issues"), 401, "UNAUTHORIZED"
    )
