"""An issue deleted while its comments and its history are written
(docs/guide/envelope-and-errors.md, "Races are answered like any other input"): the deletion
answers 200, the write is done or answers 404, never a 500, never an orphan."""

import pytest

from comments.models import Comment
from issues.models import Issue, IssueHistory
from tests.conftest import assert_error, assert_ok
from tests.factories import make_issue
from tests.races import MOMENTS, postgresql_only, race

pytestmark = [postgresql_only, pytest.mark.django_db(transaction=True)]


def assert_done_or_gone(response, status: int) -> None:
    if response.status_code == 404:
        assert_error(response, 404, "NOT_FOUND")
    else:
        assert_ok(response, status)


@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("post", "comments", {"body": "Seen it too."}, 201),
        ("patch", "", {"title": "Login fails on Sundays"}, 200),  # a history row
    ],
    ids=["comment", "history"],
)
def test_an_issue_deleted_while_a_child_is_written(
    api, world, monkeypatch, moment, method, path, body, status
):
    issue = make_issue(world.project, world.owner, title="Login fails")
    url = f"/v1/issues/{issue.pk}" + (f"/{path}" if path else "")

    deleted, written = race(
        monkeypatch,
        delete=lambda: api.owner.delete(f"/v1/issues/{issue.pk}"),
        write=lambda: getattr(api.developer, method)(url, body, format="json"),
        moment=moment,
    )

    assert_ok(deleted.result())
    assert_done_or_gone(written.result(), status)
    assert not Issue.objects.filter(pk=issue.pk).exists()
    assert not Comment.objects.filter(issue_id=issue.pk).exists()
    assert not IssueHistory.objects.filter(issue_id=issue.pk).exists()
