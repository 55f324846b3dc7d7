from collab_client._stream import parse_lines
from collab_client.models import Dashboard, Issue, Me, User


def test_a_field_a_newer_server_adds_is_kept_not_fatal():
    # A name no schema has: a field this client knows would not land in ``extra``.
    issue = Issue.from_dict({"id": 1, "title": "x", "reaction_count": 3, "labels": ["a"]})
    assert (issue.id, issue.title, issue.labels) == (1, "x", ["a"])
    assert issue.extra == {"reaction_count": 3}
    assert issue.status is None  # a field the server did not send
    assert issue.to_dict()["reaction_count"] == 3


def test_comment_count_and_handle_are_known_fields():
    issue = Issue.from_dict({"id": 1, "comment_count": 2})
    assert issue.comment_count == 2 and issue.extra == {}
    assert User.from_dict({"id": 1, "handle": "dana"}).handle == "dana"
    assert Me.from_dict({"id": 1, "handle": "dana"}).handle == "dana"


def test_nested_records_and_keyword_fields():
    dashboard = Dashboard.from_dict(
        {
            "period": "7d",
            "from": "2026-01-01T00:00:00Z",
            "series": [{"date": "2026-01-01", "issues_opened": 2}],
            "breakdowns": {"status": [{"key": "open", "total": 2}]},
        }
    )
    assert dashboard.from_ == "2026-01-01T00:00:00Z"
    assert dashboard.series[0].issues_opened == 2
    assert dashboard.breakdowns.status[0].key == "open"
    assert dashboard.to_dict()["from"] == "2026-01-01T00:00:00Z"


def test_sse_frames_comments_and_multiline_data():
    lines = [
        ": connected",
        "",
        "id: 7",
        "event: issue.created",
        'data: {"id": 7,',
        'data:  "type": "issue.created"}',
        "",
        ": heartbeat",
        "",
        "id: 8",
        "event: resync_required",
        "data: {}",
        "",
    ]
    frames = list(parse_lines(lines))
    assert [(f.id, f.event) for f in frames] == [("7", "issue.created"), ("8", "resync_required")]
    assert frames[0].data == '{"id": 7,\n "type": "issue.created"}'
