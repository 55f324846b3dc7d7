"""manage.py import_github against a GitHub REST API on 127.0.0.1 answering recorded pages
(tests/transfer/conftest.py): what lands in the project, a second run, rate limits, errors."""

import io
import re
from datetime import UTC, datetime

import pytest
from django.core.management import CommandError, call_command

from accounts.models import User
from comments.models import Comment, Mention
from events.models import Event
from issues.models import Issue, IssueHistory, IssueSequence, IssueStatusCount, Label
from issues.services import issue_delete, issue_update, label_create
from tests.conftest import assert_ok
from tests.factories import UserFactory, make_issue
from transfer.models import GithubLink

from .conftest import OWNER_REPO, TOKEN

pytestmark = pytest.mark.django_db

ISSUES_PATH = f"/repos/{OWNER_REPO}/issues"
LATER_ISSUES_PATH = "/repositories/70917345/issues"


def when(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def run(github, project, *extra, token=TOKEN):
    out, err = io.StringIO(), io.StringIO()
    args = [OWNER_REPO, "--project", str(project.pk), "--base-url", github.url, *extra]
    if token is not None:
        args += ["--token", token]
    call_command("import_github", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def people(world):
    """GitHub's olive-gh has the owner's email public; dana shows none, and is matched by
    login (the developer's handle); octo-stranger has no account here."""
    User.objects.filter(pk=world.developer.pk).update(handle="dana")
    world.developer.refresh_from_db()
    return world


def issue(project, number) -> Issue:
    return Issue.objects.get(project=project, number=number)


def snapshot(project):
    return {
        "issues": Issue.objects.filter(project=project).count(),
        "comments": Comment.objects.filter(project=project).count(),
        "labels": Label.objects.filter(project=project).count(),
        "history": IssueHistory.objects.filter(issue__project=project).count(),
        "events": Event.objects.filter(project_id=project.pk).count(),
        "links": GithubLink.objects.filter(project=project).count(),
        "mentions": Mention.objects.filter(comment__project=project).count(),
    }


def test_issues_pull_requests_comments_and_labels_come_in(github, people, api):
    project = people.project
    out, err = run(github, project)

    issues = Issue.objects.filter(project=project).order_by("number")
    # GitHub's numbers, #4 (deleted there) left out; the pull requests are issues too.
    assert [i.number for i in issues] == [1, 2, 3, 5, 6]
    assert IssueSequence.objects.get(project=project).last_number == 6

    first = issue(project, 1)
    assert first.title == "Countdown skips from 3 to 1 on slow machines"
    assert first.status == "open" and first.closed_at is None
    assert first.type == "bug"
    assert first.created_at == when("2025-01-10T09:15:02Z")
    assert first.updated_at == when("2025-01-12T16:40:10Z")
    assert first.description.startswith(
        "*From GitHub: issue [acme-labs/rocket#1](https://github.com/acme-labs/rocket/issues/1), "
        "opened by **olive-gh**.*\n\nOn the test rig"
    )
    assert sorted(first.labels.values_list("name", flat=True)) == ["bug", "launch-blocker"]
    assert first.comment_count == 2

    merged = issue(project, 2)
    assert merged.status == "closed"
    assert merged.closed_at == when("2025-01-13T08:21:52Z")
    assert merged.type == "feature"  # its "enhancement" label
    assert merged.description.startswith(
        "*From GitHub: pull request [acme-labs/rocket#2](https://github.com/acme-labs/rocket/pull/2)"
        " by **dana**, merged on 2025-01-13. Its code stays on GitHub.*\n\nFixes #1."
    )
    open_pull = issue(project, 6)
    assert open_pull.status == "open"
    assert "pull request [acme-labs/rocket#6]" in open_pull.description
    assert ", open. Its code stays on GitHub." in open_pull.description

    closed = issue(project, 3)
    assert closed.status == "closed" and closed.closed_at == when("2025-01-20T13:00:01Z")
    assert closed.reporter is None  # octo-stranger has no account
    assert "opened by **octo-stranger**" in closed.description

    # The counters the lists read are kept as the services keep them.
    counts = dict(IssueStatusCount.objects.filter(project=project).values_list("status", "count"))
    assert counts["open"] == 3 and counts["closed"] == 2

    # Labels: every one of the repository's, with GitHub's colors and descriptions.
    labels = {label.name: label for label in Label.objects.filter(project=project)}
    assert set(labels) == {
        "bug",
        "enhancement",
        "documentation",
        "good first issue",
        "launch-blocker",
    }
    assert labels["bug"].color == "#d73a4a"
    assert labels["bug"].description == "Something isn't working"

    # History and events as the services write them, dated as on GitHub, marked as imported.
    created = IssueHistory.objects.get(issue=first, field="created")
    assert created.created_at == first.created_at and created.source == "github"
    assert created.actor == people.owner
    assert Event.objects.filter(project_id=project.pk, type="issue.created").count() == 5
    assert Event.objects.filter(project_id=project.pk, type="comment.created").count() == 5
    assert Event.objects.filter(project_id=project.pk, type="label.created").count() == 5

    # Comments, in order, with their times and authors; the unmatched author named.
    thread = list(Comment.objects.filter(issue=first).order_by("created_at"))
    assert [c.author for c in thread] == [people.developer, people.owner]
    assert thread[0].created_at == when("2025-01-10T10:02:11Z")
    assert thread[0].body == "Reproduced on the rig: the tick handler runs late under load."
    stranger = Comment.objects.get(issue=closed)
    assert stranger.author is None
    assert stranger.body.startswith("*octo-stranger on GitHub:*\n\nCould it be bigger")
    assert Comment.objects.filter(issue=open_pull).count() == 1
    # A comment older than the issue's last change leaves that time as GitHub has it.
    assert issue(project, 6).updated_at == when("2025-02-03T09:12:45Z")

    # Mentions are recorded, and nobody is emailed about an old conversation.
    mentions = Mention.objects.filter(user=people.developer)
    assert mentions.count() == 2
    assert all(m.notified_at is not None for m in mentions)

    # The search document came with the rows: the API finds an imported issue.
    found = assert_ok(api.owner.get(f"/v1/projects/{project.pk}/issues?q=countdown"))
    assert {row["number"] for row in found["data"]} == {1, 2}

    # Every page was read, as the Link headers led; each request as GitHub asks.
    assert [r.query.get("page") for r in github.hits(LATER_ISSUES_PATH)] == ["2"]
    assert len(github.hits("/repositories/70917345/issues/comments")) == 1
    first_request = github.hits(ISSUES_PATH)[0]
    assert first_request.query == {
        "per_page": "100",
        "state": "all",
        "sort": "created",
        "direction": "asc",
    }
    for request in github.requests:
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        assert request.headers["accept"] == "application/vnd.github+json"
        assert request.headers["x-github-api-version"] == "2022-11-28"

    assert "issues: 5 created, 0 updated, 0 unchanged" in out
    assert "comments: 5 created" in out and "labels: 5 created" in out
    assert "pull requests among the issues: 2" in out
    assert "octo-stranger" in out
    assert TOKEN not in out + err


def test_assignees_are_matched_by_email_and_by_login(github, people):
    project = people.project
    run(github, project)
    # dana: no public email, matched by login against the developer's handle.
    assert issue(project, 1).assignee == people.developer
    # olive-gh: matched by the public email of the profile (the owner's handle is not hers).
    assert people.owner.handle != "olive-gh"
    assert issue(project, 2).assignee == people.owner
    assert issue(project, 2).reporter == people.developer
    # The first of GitHub's assignees who has an account here: octo-stranger has none.
    assert issue(project, 3).assignee == people.owner
    assert issue(project, 5).assignee is None
    # One profile read per person, however often they appear.
    assert len(github.hits("/users/olive-gh")) == 1


def test_an_assignee_who_may_not_see_the_project_is_left_out(github, world):
    # dana's account is in the workspace but not on the private project's team.
    outsider = UserFactory(email="dana@elsewhere.test", handle="dana")
    project = world.project
    run(github, project)
    assert issue(project, 1).assignee is None
    assert issue(project, 2).reporter == outsider


def test_a_second_run_duplicates_nothing(github, people):
    project = people.project
    run(github, project)
    before = snapshot(project)
    out, _ = run(github, project)
    assert snapshot(project) == before
    assert "issues: 0 created, 0 updated, 5 unchanged" in out
    assert "comments: 0 created, 0 updated, 5 unchanged" in out
    assert "labels: 0 created, 0 updated, 5 unchanged" in out


def test_a_second_run_applies_what_changed_on_github(github, people, recorded):
    project = people.project
    run(github, project)
    before = snapshot(project)

    # On GitHub since: #1 closed and renamed, its "launch-blocker" label taken off; a comment
    # edited; a new comment on #5; the label "bug" recoloured.
    page = recorded("issues-1.json")
    page[0].update(
        title="Countdown skips seconds under load",
        state="closed",
        state_reason="completed",
        closed_at="2025-03-01T12:00:00Z",
        updated_at="2025-03-01T12:00:00Z",
        labels=[label for label in page[0]["labels"] if label["name"] == "bug"],
    )
    github.pages["issues"][0] = page
    comments = recorded("comments-1.json")
    comments[1].update(
        body="Thanks @dana, a monotonic clock fixes it.", updated_at="2025-03-01T12:05:00Z"
    )
    github.pages["issues/comments"][0] = comments
    later = recorded("comments-2.json")
    later.append(
        {
            **later[0],
            "id": 2587700199,
            "node_id": "IC_kwDOBDoxoc67700199",
            "issue_url": "https://api.github.com/repos/acme-labs/rocket/issues/5",
            "user": comments[0]["user"],
            "body": "Started on it.",
            "created_at": "2025-03-02T08:00:00Z",
            "updated_at": "2025-03-02T08:00:00Z",
        }
    )
    github.pages["issues/comments"][1] = later
    labels = recorded("labels.json")
    labels[0]["color"] = "ff0000"
    github.pages["labels"][0] = labels

    out, _ = run(github, project)

    first = issue(project, 1)
    assert first.title == "Countdown skips seconds under load"
    assert first.status == "closed"
    assert first.closed_at == when("2025-03-01T12:00:00Z")
    assert list(first.labels.values_list("name", flat=True)) == ["bug"]
    changes = IssueHistory.objects.filter(issue=first, source="github").exclude(field="created")
    assert {h.field for h in changes} == {"title", "status", "labels"}
    assert all(h.created_at == when("2025-03-01T12:00:00Z") for h in changes)
    assert Event.objects.filter(project_id=project.pk, type="issue.closed").count() == 1

    edited = Comment.objects.get(issue=first, author=people.owner)
    assert edited.body == "Thanks @dana, a monotonic clock fixes it."
    assert edited.edited and edited.revisions.count() == 1
    fifth = issue(project, 5)
    assert fifth.comment_count == 1
    assert fifth.updated_at == when("2025-03-02T08:00:00Z")
    assert Label.objects.get(project=project, name="bug").color == "#ff0000"

    after = snapshot(project)
    assert after["issues"] == before["issues"] and after["labels"] == before["labels"]
    assert after["comments"] == before["comments"] + 1
    assert after["links"] == before["links"] + 1
    assert "issues: 0 created, 1 updated, 4 unchanged" in out
    assert "comments: 1 created, 1 updated, 4 unchanged" in out
    assert "labels: 0 created, 1 updated, 4 unchanged" in out


def test_labels_are_created_once_and_existing_ones_adopted(github, people):
    project = people.project
    bug = label_create(project=project, actor=None, name="bug", color="#000000")
    run(github, project)
    run(github, project)
    names = list(Label.objects.filter(project=project).values_list("name", flat=True))
    assert sorted(names) == sorted(set(names)) and len(names) == 5
    # The project's own "bug" is GitHub's "bug" now, linked once.
    assert issue(project, 1).labels.filter(pk=bug.pk).exists()
    assert GithubLink.objects.filter(project=project, kind="label", label=bug).count() == 1


def test_numbers_taken_already_move_on(github, people):
    project = people.project
    make_issue(project, title="Older work")
    make_issue(project, title="More older work")
    run(github, project)
    by_title = dict(Issue.objects.filter(project=project).values_list("title", "number"))
    # GitHub's #1..#3 would reuse numbers; they take the next ones. #5 and #6 stay free.
    assert by_title["Countdown skips from 3 to 1 on slow machines"] == 3
    assert by_title["Launch button is hard to find"] == 5
    assert by_title["Document the abort sequence"] == 6
    assert by_title["Add a second confirmation before launch"] == 7


def test_a_spent_rate_limit_is_waited_out_then_the_import_goes_on(github, people):
    project = people.project
    github.limit_once(LATER_ISSUES_PATH, reset_in=1)
    out, _ = run(github, project)
    hits = github.hits(LATER_ISSUES_PATH)
    assert len(hits) == 2
    # The request again came once the limit had reset, not before.
    assert hits[1].at >= github.resets[0]
    assert Issue.objects.filter(project=project).count() == 5
    assert re.search(r"waited [12] s for GitHub's rate limit", out)


def test_a_retry_after_is_honoured(github, people):
    project = people.project
    github.limit_once(f"/repos/{OWNER_REPO}/labels", status=429, reset_in=1)
    run(github, project)
    hits = github.hits(f"/repos/{OWNER_REPO}/labels")
    assert len(hits) == 2 and hits[1].at - hits[0].at >= 0.99
    assert Label.objects.filter(project=project).count() == 5


def test_a_rate_limit_past_the_allowed_wait_fails_clearly(github, people):
    project = people.project
    github.limit_once(f"/repos/{OWNER_REPO}", reset_in=3600)
    spent = r"rate limit of 5000 requests an hour is spent until \d{4}-\d\d-\d\d [\d:]{8} UTC"
    with pytest.raises(CommandError, match=spent):
        run(github, project, "--max-wait", "5")
    assert len(github.hits(f"/repos/{OWNER_REPO}")) == 1
    assert snapshot(project)["issues"] == 0


def test_a_missing_repository_is_a_clear_error_and_writes_nothing(github, people):
    project = people.project
    github.repository = None
    before = snapshot(project)
    with pytest.raises(CommandError) as caught:
        run(github, project)
    assert str(caught.value) == (
        f"{OWNER_REPO}: GitHub has nothing at /repos/{OWNER_REPO} (Not Found)."
    )
    assert snapshot(project) == before
    assert [r.path for r in github.requests] == [f"/repos/{OWNER_REPO}"]


def test_a_refused_token_is_a_clear_error(github, people, monkeypatch):
    project = people.project
    github.limit_once(f"/repos/{OWNER_REPO}", status=401)
    with pytest.raises(CommandError, match="GitHub refused the token"):
        run(github, project)


def test_the_token_comes_from_the_environment_and_is_never_printed(github, people, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_fromTheEnvironment000000000000000000")
    out, err = run(github, people.project, token=None)
    assert {r.headers["authorization"] for r in github.requests} == {
        "Bearer ghp_fromTheEnvironment000000000000000000"
    }
    assert "ghp_" not in out + err


@pytest.mark.parametrize(
    "base_url", ["file:///etc/passwd", "ftp://127.0.0.1/", "127.0.0.1:8000", "http://"]
)
def test_only_http_base_urls_are_taken(github, people, base_url):
    with pytest.raises(CommandError, match="must be an http:// or https:// URL"):
        call_command(
            "import_github",
            OWNER_REPO,
            "--project",
            str(people.project.pk),
            "--base-url",
            base_url,
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
    assert github.requests == []


def test_a_link_to_another_server_is_not_followed(github, people):
    github.link_base = "http://127.0.0.2:9"
    with pytest.raises(CommandError, match=r"outside http://127\.0\.0\.1:\d+; not followed"):
        run(github, people.project)
    # Nothing was asked of the other address: every request came here.
    assert {r.path for r in github.requests} >= {f"/repos/{OWNER_REPO}/labels"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["not-a-repo", "--project", "1"], "Name the repository as owner/name"),
        ([OWNER_REPO, "--project", "abc"], "--project takes a project id"),
        ([OWNER_REPO, "--project", "999999"], "No project with id 999999"),
    ],
)
def test_bad_arguments_are_clear_errors(db, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("import_github", *args, stdout=io.StringIO(), stderr=io.StringIO())


def test_edits_here_stay_until_github_changes_and_a_deleted_issue_comes_back(github, people):
    project = people.project
    run(github, project)
    issue_update(issue=issue(project, 1), actor=people.owner, title="Renamed here")
    issue_delete(issue=issue(project, 5), actor=people.owner)

    out, _ = run(github, project)

    # Unchanged on GitHub since: the edit made here stays.
    assert issue(project, 1).title == "Renamed here"
    # Deleted here: brought in again, under a number the deleted one never held.
    again = Issue.objects.get(project=project, title="Document the abort sequence")
    assert again.number == 7
    assert GithubLink.objects.filter(project=project, kind="issue", issue=again).count() == 1
    assert "issues: 1 created, 0 updated, 4 unchanged" in out
