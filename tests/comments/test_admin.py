"""Comments in the admin: shown inline on their issue and pull request, read-only on their own
page, and deleted through the service (the count, the history row and the event follow)."""

import pytest

from comments.models import Comment
from comments.services import comment_create, comment_update
from events.models import Event
from gitintegration.models import PullRequest
from issues.models import Issue, IssueHistory
from tests.factories import PullRequestFactory, RepositoryFactory, make_issue
from tests.test_admin import url


@pytest.fixture
def thread(world):
    issue = make_issue(world.project, world.owner, title="Admin thread")
    pull = PullRequestFactory(repository=RepositoryFactory(project=world.project))
    on_issue = comment_create(parent=issue, actor=world.developer, body="Seen on **prod**")
    comment_update(
        comment=Comment.objects.get(pk=on_issue["id"]),
        actor=world.developer,
        body="Seen on **staging**",
    )
    on_pull = comment_create(parent=pull, actor=world.owner, body="LGTM <script>x</script>")
    return issue, pull, on_issue, on_pull


def test_comments_show_inline_on_their_parents(browser, thread):
    issue, pull, _on_issue, _on_pull = thread
    page = browser.get(url(Issue, "change", issue.pk)).content.decode()
    assert "Seen on **staging**" in page
    page = browser.get(url(PullRequest, "change", pull.pk)).content.decode()
    assert "LGTM &lt;script&gt;x&lt;/script&gt;" in page and "<script>x" not in page


def test_a_comment_page_shows_its_earlier_bodies_and_cannot_be_edited(browser, thread):
    _issue, _pull, on_issue, _on_pull = thread
    page = browser.get(url(Comment, "change", on_issue["id"]))
    assert page.status_code == 200
    assert "Seen on **prod**" in page.content.decode()
    assert browser.get(url(Comment, "add")).status_code == 403
    before = Comment.objects.get(pk=on_issue["id"]).body
    browser.post(url(Comment, "change", on_issue["id"]), {"body": "rewritten"})
    assert Comment.objects.get(pk=on_issue["id"]).body == before


def test_deleting_in_the_admin_goes_through_the_service(browser, root, thread):
    issue, pull, on_issue, on_pull = thread
    response = browser.post(url(Comment, "delete", on_issue["id"]), {"post": "yes"})
    assert response.status_code == 302
    response = browser.post(
        url(Comment, "changelist"),
        {"action": "delete_selected", "_selected_action": [str(on_pull["id"])], "post": "yes"},
    )
    assert response.status_code == 302
    assert Comment.objects.count() == 0
    assert Issue.objects.get(pk=issue.pk).comment_count == 0
    assert PullRequest.objects.get(pk=pull.pk).comment_count == 0
    deleted = Event.objects.filter(type="comment.deleted").order_by("id")
    assert [e.data["comment"]["id"] for e in deleted] == [on_issue["id"], on_pull["id"]]
    assert all(e.actor_id == root.pk for e in deleted)
    row = IssueHistory.objects.filter(issue=issue, field="comment").order_by("id").last()
    assert row.old_value["id"] == on_issue["id"] and row.new_value is None
