"""``seed_demo``'s comment threads (comments/seeding.py): on a share of the demo projects'
issues, by their teams, rendered, counted exactly, in the issues' history in time order,
mentions already notified, and re-runs that add threads only where none is."""

from io import StringIO

import pytest
from django.core import mail
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import Count
from django.utils import timezone

from accounts.models import User
from comments import markdown
from comments.models import Comment, CommentRevision, Mention
from comments.seeding import THREAD_LENGTHS
from events.models import Event
from issues.models import Issue, IssueHistory
from projects.models import Project, ProjectMember
from tests.conftest import BLANK_PASSWORDS, assert_ok, client_for

PASSWORD = "plum-orbit-lantern-42"


def seed(*args: str) -> str:
    stdout = StringIO()
    call_command("seed_demo", "--password", PASSWORD, *args, stdout=stdout, stderr=StringIO())
    return stdout.getvalue()


def assert_counts_exact(projects) -> None:
    real = dict(
        Comment.objects.filter(project__in=projects)
        .order_by()
        .values_list("issue_id")
        .annotate(n=Count("id"))
    )
    kept = dict(Issue.objects.filter(project__in=projects).values_list("pk", "comment_count"))
    assert kept == {pk: real.get(pk, 0) for pk in kept}


@pytest.fixture
def demo(db):
    """Two demo projects sharing 240 issues, with their threads."""
    out = seed("--projects", "2", "--issues", "240")
    projects = list(Project.objects.order_by("id"))
    assert len(projects) == 2
    added = Comment.objects.count()
    assert f"{added} comments on their issues ({added} new)." in out
    return projects


def test_threads_sit_on_a_share_of_the_issues_with_exact_counts(demo):
    assert_counts_exact(demo)
    issues = Issue.objects.filter(project__in=demo)
    threaded = issues.filter(comment_count__gt=0)
    assert 0.25 < threaded.count() / issues.count() < 0.55
    longest = max(length for length, _weight in THREAD_LENGTHS)
    assert set(threaded.values_list("comment_count", flat=True)) <= set(range(1, longest + 1))
    # The API says the same: the issue's count and its thread's total.
    owner = User.objects.get(email="owner@demo.collab.localhost")
    issue = threaded.order_by("-comment_count", "id").first()
    api = client_for(owner)
    assert assert_ok(api.get(f"/v1/issues/{issue.pk}"))["data"]["comment_count"] == (
        issue.comment_count
    )
    thread = assert_ok(api.get(f"/v1/issues/{issue.pk}/comments"))
    assert thread["meta"]["total"] == issue.comment_count
    assert [entry["issue_id"] for entry in thread["data"]] == [issue.pk] * issue.comment_count


def test_comments_are_written_by_the_team_after_the_issue(demo):
    now = timezone.now()
    for project in demo:
        team = set(ProjectMember.objects.filter(project=project).values_list("user_id", flat=True))
        for comment in Comment.objects.filter(project=project).select_related("issue"):
            issue = comment.issue
            assert comment.issue.project_id == project.pk and comment.pull_request_id is None
            assert comment.author_id in team
            assert issue.created_at < comment.created_at <= comment.updated_at <= now
            assert comment.created_at <= issue.updated_at
        # Never one person twice in a row in a thread.
        rows = Comment.objects.filter(project=project).order_by("issue_id", "created_at", "id")
        pairs = list(rows.values_list("issue_id", "author_id"))
        assert not any(a == b for a, b in zip(pairs, pairs[1:], strict=False))


def test_bodies_are_markdown_rendered_with_code_and_mentions(demo):
    comments = list(Comment.objects.filter(project__in=demo))
    for comment in comments:
        assert comment.body_html == markdown.render(comment.body)
    assert sum("<code>" in comment.body_html for comment in comments) > 10
    mentioning = [comment for comment in comments if markdown.mentions(comment.body)]
    assert len(mentioning) > 5
    handles = dict(User.objects.values_list("pk", "handle"))
    mentions = list(Mention.objects.filter(comment__project__in=demo).select_related("comment"))
    assert {mention.comment_id for mention in mentions} == {c.pk for c in mentioning}
    for mention in mentions:
        comment = mention.comment
        assert handles[mention.user_id] in markdown.mentions(comment.body)
        assert mention.user_id != comment.author_id
        assert mention.issue_id == comment.issue_id
        # Seeded data is never announced: every mention is marked as sent already.
        assert mention.notified_at == mention.created_at == comment.created_at
    assert mail.outbox == []
    assert not Event.objects.filter(type__startswith="comment.").exists()


def test_a_few_comments_were_edited_and_keep_their_first_body(demo):
    edited = list(Comment.objects.filter(project__in=demo, edited=True))
    total = Comment.objects.filter(project__in=demo).count()
    assert 0 < len(edited) < total / 5
    for comment in edited:
        (revision,) = CommentRevision.objects.filter(comment=comment)
        assert comment.body.startswith(revision.body) and comment.body != revision.body
        assert revision.author_id == comment.author_id
        assert revision.created_at == comment.created_at
        assert revision.replaced_at == comment.updated_at > comment.created_at
    assert not CommentRevision.objects.filter(comment__edited=False).exists()


def test_the_history_holds_the_comments_in_time_order(demo):
    threaded = Issue.objects.filter(project__in=demo, comment_count__gt=0)
    for issue in threaded:
        rows = list(IssueHistory.objects.filter(issue=issue).order_by("id"))
        assert rows[0].field == "created"
        times = [row.created_at for row in rows]
        assert times == sorted(times), issue.number
        comments = list(Comment.objects.filter(issue=issue).order_by("created_at", "id"))
        created = [row for row in rows if row.field == "comment" and row.old_value is None]
        edits = [row for row in rows if row.field == "comment" and row.old_value is not None]
        assert [row.new_value["id"] for row in created] == [comment.pk for comment in comments]
        assert len(edits) == sum(comment.edited for comment in comments)
        for row, comment in zip(created, comments, strict=True):
            assert row.actor_id == comment.author_id and row.created_at == comment.created_at
            assert row.new_value["edited"] is False
            assert row.new_value["created_at"] == row.new_value["updated_at"]
            first = comment.revisions.first()
            assert row.new_value["body"] == (first.body if first else comment.body)
            assert row.new_value["body_html"] == markdown.render(row.new_value["body"])
        # Status changes stay in the order they were made in.
        statuses = [row.new_value for row in rows if row.field == "status"]
        assert statuses in ([], ["in_progress"], ["closed"], ["in_progress", "closed"])


def test_running_again_adds_threads_only_where_none_is(demo):
    owner = User.objects.get(email="owner@demo.collab.localhost")
    comments, history = Comment.objects.count(), IssueHistory.objects.count()
    out = seed("--projects", "2", "--issues", "240")
    assert f"{comments} comments on their issues (0 new)." in out
    assert (Comment.objects.count(), IssueHistory.objects.count()) == (comments, history)

    # A comment written over the API keeps its issue out of the seeding.
    quiet = Issue.objects.filter(project=demo[0], comment_count=0).order_by("number").first()
    assert_ok(
        client_for(owner).post(
            f"/v1/issues/{quiet.pk}/comments", {"body": "By hand."}, format="json"
        ),
        201,
    )
    before = dict(Issue.objects.filter(comment_count__gt=0).values_list("pk", "comment_count"))
    seed("--projects", "2", "--issues", "480")
    after = dict(Issue.objects.filter(comment_count__gt=0).values_list("pk", "comment_count"))
    assert {pk: after[pk] for pk in before} == before
    assert len(after) > len(before)  # the new issues got threads of their own
    assert_counts_exact(demo)


def test_a_named_project_gets_no_threads(db):
    out = seed("--project-name", "Load", "--issues", "120")
    assert "comments" not in out
    assert not Comment.objects.exists()
    assert not Issue.objects.filter(comment_count__gt=0).exists()


@pytest.mark.parametrize("password", [*BLANK_PASSWORDS, "short"])
def test_a_password_the_validators_refuse_seeds_nothing(db, password):
    with pytest.raises(CommandError, match="--password rejected"):
        call_command("seed_demo", "--password", password, stdout=StringIO(), stderr=StringIO())
    assert not User.objects.exists()
