"""Comments on issues and pull requests over the API: threads, edits with history, deletion,
permissions per role, scope and workspace, archived projects, Markdown rendered harmless, and
the record, history row and event each change leaves."""

from html.parser import HTMLParser

import pytest
from django.core import mail
from django.db import connection
from django.db.models import Count
from django.test.utils import CaptureQueriesContext

from comments.models import Comment, CommentRevision, Mention
from events.models import Event
from gitintegration.models import PullRequest
from issues.models import Issue, IssueHistory
from projects.models import Project
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import PullRequestFactory, RepositoryFactory, make_issue

ALLOWED_TAGS = {"p", "a", "code", "pre", "strong", "em", "del", "s", "br"}


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))


def parsed_tags(html: str) -> list:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


RECORD_KEYS = {
    "id",
    "project_id",
    "issue_id",
    "pull_request_id",
    "author_id",
    "body",
    "body_html",
    "edited",
    "created_at",
    "updated_at",
}


@pytest.fixture
def issue(world):
    return make_issue(world.project, world.owner, title="Login fails")


@pytest.fixture
def pull(world):
    return PullRequestFactory(
        repository=RepositoryFactory(project=world.project), author=world.developer
    )


@pytest.fixture
def foreign_issue(world):
    return make_issue(world.other_project, world.outsider, title="Their secret")


def thread_url(parent) -> str:
    kind = "issues" if isinstance(parent, Issue) else "pulls"
    return f"/v1/{kind}/{parent.pk}/comments"


def post(client, parent, body, **extra):
    return client.post(thread_url(parent), {"body": body, **extra}, format="json")


def comment_of(client, parent, body="Looks right to me.") -> dict:
    return assert_ok(post(client, parent, body), 201)["data"]


@pytest.mark.parametrize("kind", ["issue", "pull"])
def test_a_comment_is_posted_with_its_record_count_history_and_event(
    api, world, request, kind, django_capture_on_commit_callbacks
):
    parent = request.getfixturevalue(kind)
    before = parent.updated_at
    with django_capture_on_commit_callbacks(execute=True):
        response = post(api.developer, parent, "Reproduced on **staging**.")
    data = assert_ok(response, 201)["data"]

    assert set(data) == RECORD_KEYS
    assert response["Location"] == f"/v1/comments/{data['id']}"
    assert data["author_id"] == world.developer.pk
    assert data["project_id"] == world.project.pk
    assert data["body"] == "Reproduced on **staging**."
    assert data["body_html"] == "<p>Reproduced on <strong>staging</strong>.</p>\n"
    assert data["edited"] is False
    assert data["created_at"] == data["updated_at"]
    if kind == "issue":
        assert (data["issue_id"], data["pull_request_id"]) == (parent.pk, None)
    else:
        assert (data["issue_id"], data["pull_request_id"]) == (None, parent.pk)

    comment = Comment.objects.get(pk=data["id"])
    assert comment.author == world.developer and comment.project == world.project
    parent.refresh_from_db()
    assert parent.comment_count == 1
    assert parent.updated_at > before

    event = Event.objects.get(type="comment.created")
    assert event.actor_id == world.developer.pk
    assert event.project_id == world.project.pk
    assert event.data["comment"] == data
    parent_key = "issue" if kind == "issue" else "pull_request"
    assert event.data[parent_key]["id"] == parent.pk
    assert event.data[parent_key]["comment_count"] == 1

    # The parent's record counts it.
    url = f"/v1/issues/{parent.pk}" if kind == "issue" else f"/v1/pulls/{parent.pk}"
    assert assert_ok(api.viewer.get(url))["data"]["comment_count"] == 1

    if kind == "issue":
        row = IssueHistory.objects.get(issue=parent, field="comment")
        assert row.new_value == data and row.old_value is None
        history = assert_ok(api.viewer.get(f"/v1/issues/{parent.pk}/history"))["data"]
        assert [entry["field"] for entry in history] == ["created", "comment"]


def test_a_thread_lists_oldest_first_with_exact_totals_and_since(api, world, issue):
    first = comment_of(api.developer, issue, "one")
    second = comment_of(api.owner, issue, "two")
    third = comment_of(api.developer, issue, "three")

    body = assert_ok(api.viewer.get(thread_url(issue)))
    assert [c["id"] for c in body["data"]] == [first["id"], second["id"], third["id"]]
    assert body["meta"]["total"] == 3 and body["meta"]["total_pages"] == 1

    page = assert_ok(api.viewer.get(thread_url(issue), {"per_page": 2, "page": 2}))
    assert [c["id"] for c in page["data"]] == [third["id"]]
    assert page["meta"]["total"] == 3 and page["meta"]["total_pages"] == 2

    Comment.objects.filter(pk=first["id"]).update(updated_at="2020-01-01T00:00:00Z")
    Comment.objects.filter(pk=second["id"]).update(updated_at="2021-01-01T00:00:00Z")
    since = assert_ok(api.viewer.get(thread_url(issue), {"since": "2020-06-01T00:00:00Z"}))
    assert [c["id"] for c in since["data"]] == [second["id"], third["id"]]
    assert since["meta"]["total"] == 2

    assert_error(api.viewer.get(thread_url(issue), {"since": "yesterday"}), 400, "BAD_REQUEST")
    assert_error(api.viewer.get(thread_url(issue), {"since": ""}), 400, "BAD_REQUEST")


def test_a_thread_page_costs_the_same_queries_at_any_length(api, world, issue):
    comment_of(api.developer, issue)
    with CaptureQueriesContext(connection) as short:
        assert_ok(api.viewer.get(thread_url(issue), {"per_page": 100}))
    for n in range(60):
        comment_of(api.developer, issue, f"note {n}")
    with CaptureQueriesContext(connection) as long:
        body = assert_ok(api.viewer.get(thread_url(issue), {"per_page": 100}))
    assert len(body["data"]) == 61
    assert len(long.captured_queries) == len(short.captured_queries)
    # No COUNT over the thread: the parent's kept count is its total.
    assert not any("COUNT(" in q["sql"].upper() for q in long.captured_queries)


@pytest.mark.parametrize(
    ("body", "field_error"),
    [
        ("x" * 65_537, "body"),
        ("", "body"),
        ("   \n\t", "body"),
        (None, "body"),
        (12, "body"),
        ("nul \x00 inside", "body"),
    ],
)
def test_bad_bodies_are_refused_with_nothing_written(api, issue, body, field_error):
    error = assert_error(post(api.developer, issue, body), 422, "VALIDATION_ERROR")
    assert field_error in error["details"]
    assert Comment.objects.count() == 0
    assert Issue.objects.get(pk=issue.pk).comment_count == 0


def test_a_body_of_exactly_the_limit_is_taken(api, issue):
    data = comment_of(api.developer, issue, "y" * 65_536)
    assert len(data["body"]) == 65_536


def test_a_missing_body_is_refused(api, issue):
    error = assert_error(
        api.developer.post(thread_url(issue), {}, format="json"), 422, "VALIDATION_ERROR"
    )
    assert "body" in error["details"]


@pytest.mark.parametrize(
    "attack",
    [
        "<script>alert(1)</script>",
        '<img src=x onerror="alert(1)">',
        "[click](javascript:alert(1))",
        "[click](JaVaScRiPt:alert(1))",
        "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "![x](javascript:alert(1))",
        '<a href="javascript:alert(1)">x</a>',
        "<iframe src=https://evil.example></iframe>",
        '<div style="background:url(javascript:alert(1))">x</div>',
        '[x](https://example.com"onmouseover="alert(1))',
        "<svg/onload=alert(1)>",
    ],
)
def test_markdown_that_tries_to_inject_script_renders_harmless(api, issue, attack):
    html = comment_of(api.developer, issue, f"Look: {attack}")["body_html"]
    tags = parsed_tags(html)
    assert {tag for tag, _attrs in tags} <= ALLOWED_TAGS, html
    for _tag, attrs in tags:
        for name, value in attrs:
            assert not name.startswith("on"), html
            assert name in {"href", "title", "rel", "class", "start", "style"}, html
            if name == "href":
                assert value.split(":", 1)[0].lower() in {"http", "https", "mailto"}, html
            if name == "style":
                assert value.startswith("text-align:"), html


def test_links_are_kept_safe_and_marked(api, issue):
    html = comment_of(api.developer, issue, "See [the docs](https://example.com/docs).")[
        "body_html"
    ]
    assert html == (
        '<p>See <a href="https://example.com/docs" rel="nofollow noopener noreferrer">'
        "the docs</a>.</p>\n"
    )


# Permissions -------------------------------------------------------------------------------


def test_a_viewer_reads_but_cannot_comment(api, issue):
    comment_of(api.developer, issue)
    assert len(assert_ok(api.viewer.get(thread_url(issue)))["data"]) == 1
    error = assert_error(post(api.viewer, issue, "me too"), 403, "FORBIDDEN")
    assert error["details"]["required_ability"] == "write"
    assert Comment.objects.count() == 1


def test_another_workspace_sees_404_on_every_comment_route(api, world, issue, pull):
    comment = comment_of(api.developer, issue)
    pull_comment = comment_of(api.developer, pull)
    outsider = api.outsider
    for response in (
        outsider.get(thread_url(issue)),
        post(outsider, issue, "hello"),
        outsider.get(thread_url(pull)),
        post(outsider, pull, "hello"),
        outsider.get(f"/v1/comments/{comment['id']}"),
        outsider.get(f"/v1/comments/{pull_comment['id']}"),
        outsider.patch(f"/v1/comments/{comment['id']}", {"body": "mine"}, format="json"),
        outsider.delete(f"/v1/comments/{comment['id']}"),
        outsider.get(f"/v1/comments/{comment['id']}/history"),
    ):
        assert_error(response, 404, "NOT_FOUND")
    assert Comment.objects.count() == 2
    assert Comment.objects.get(pk=comment["id"]).body == "Looks right to me."


def test_their_comments_are_404_to_us(api, world, foreign_issue):
    theirs = comment_of(api.outsider, foreign_issue)
    for client in (api.owner, api.admin, api.developer):
        assert_error(client.get(f"/v1/comments/{theirs['id']}"), 404, "NOT_FOUND")
        assert_error(client.get(thread_url(foreign_issue)), 404, "NOT_FOUND")
        assert_error(client.delete(f"/v1/comments/{theirs['id']}"), 404, "NOT_FOUND")


def test_only_the_author_edits(api, world, issue):
    comment = comment_of(api.developer, issue)
    for client in (api.owner, api.admin):
        error = assert_error(
            client.patch(f"/v1/comments/{comment['id']}", {"body": "edited"}, format="json"),
            403,
            "FORBIDDEN",
        )
        assert error["details"]["author_id"] == world.developer.pk
    assert_error(
        api.viewer.patch(f"/v1/comments/{comment['id']}", {"body": "x"}, format="json"),
        403,
        "FORBIDDEN",
    )
    assert Comment.objects.get(pk=comment["id"]).body == "Looks right to me."


def test_the_author_deletes_their_own_and_owners_and_admins_any(api, world, issue):
    mine = comment_of(api.developer, issue)
    other = comment_of(api.owner, issue)
    third = comment_of(api.owner, issue)
    # A developer cannot delete someone else's.
    error = assert_error(api.developer.delete(f"/v1/comments/{other['id']}"), 403, "FORBIDDEN")
    assert error["details"]["required_ability"] == "manage"
    assert_ok(api.developer.delete(f"/v1/comments/{mine['id']}"))
    assert_ok(api.admin.delete(f"/v1/comments/{other['id']}"))
    assert set(Comment.objects.values_list("pk", flat=True)) == {third["id"]}
    assert Issue.objects.get(pk=issue.pk).comment_count == 1
    assert_error(api.developer.get(f"/v1/comments/{mine['id']}"), 404, "NOT_FOUND")


def test_scopes_gate_each_route(world, issue, pull):
    author = client_for(world.developer)
    comment = comment_of(author, issue)
    pull_comment = comment_of(author, pull)
    reader = client_for(world.developer, scopes=["issues:read"])
    assert_ok(reader.get(thread_url(issue)))
    assert_ok(reader.get(f"/v1/comments/{comment['id']}"))
    assert_ok(reader.get(f"/v1/comments/{comment['id']}/history"))
    error = assert_error(post(reader, issue, "no"), 403, "FORBIDDEN")
    assert error["details"]["required_scope"] == "issues:write"
    # A pull request's thread is read as the pull request is: with projects:read.
    error = assert_error(reader.get(thread_url(pull)), 403, "FORBIDDEN")
    assert error["details"]["required_scope"] == "projects:read"
    error = assert_error(reader.get(f"/v1/comments/{pull_comment['id']}"), 403, "FORBIDDEN")
    assert error["details"]["required_scope"] == "projects:read"
    project_reader = client_for(world.developer, scopes=["projects:read"])
    assert_ok(project_reader.get(thread_url(pull)))
    assert_error(project_reader.get(thread_url(issue)), 403, "FORBIDDEN")

    writer = client_for(world.developer, scopes=["issues:write"])
    assert_ok(writer.delete(f"/v1/comments/{comment['id']}"))
    # An admin deleting someone else's needs issues:admin as well as the role.
    admin_writer = client_for(world.admin, scopes=["issues:write", "projects:read"])
    error = assert_error(
        admin_writer.delete(f"/v1/comments/{pull_comment['id']}"), 403, "FORBIDDEN"
    )
    assert error["details"]["required_scope"] == "issues:admin"
    assert_ok(
        client_for(world.admin, scopes=["issues:admin"]).delete(
            f"/v1/comments/{pull_comment['id']}"
        )
    )
    assert Comment.objects.count() == 0


def test_an_archived_project_takes_no_comments_but_shows_them(api, world, issue):
    comment = comment_of(api.developer, issue)
    Project.objects.filter(pk=world.project.pk).update(status=Project.Status.ARCHIVED)
    assert_error(post(api.developer, issue, "late"), 409, "CONFLICT")
    assert_error(
        api.developer.patch(f"/v1/comments/{comment['id']}", {"body": "x"}, format="json"),
        409,
        "CONFLICT",
    )
    assert_error(api.developer.delete(f"/v1/comments/{comment['id']}"), 409, "CONFLICT")
    assert len(assert_ok(api.viewer.get(thread_url(issue)))["data"]) == 1
    assert Comment.objects.get(pk=comment["id"]).body == "Looks right to me."


def test_unknown_and_out_of_range_ids_are_404(api):
    for url in (
        "/v1/issues/999999/comments",
        "/v1/pulls/999999/comments",
        "/v1/comments/999999",
        "/v1/comments/99999999999999999999",
        "/v1/comments/999999/history",
    ):
        assert_error(api.owner.get(url), 404, "NOT_FOUND")


def test_put_is_not_allowed(api, issue):
    comment = comment_of(api.developer, issue)
    assert_error(
        api.developer.put(f"/v1/comments/{comment['id']}", {"body": "x"}, format="json"),
        405,
        "METHOD_NOT_ALLOWED",
    )


# Edits and deletion --------------------------------------------------------------------------


def test_an_edit_keeps_the_previous_body(api, world, issue):
    comment = comment_of(api.developer, issue, "first words")
    url = f"/v1/comments/{comment['id']}"
    edited = assert_ok(api.developer.patch(url, {"body": "second words"}, format="json"))["data"]
    assert edited["body"] == "second words" and edited["edited"] is True
    assert edited["updated_at"] > edited["created_at"]
    assert_ok(api.developer.patch(url, {"body": "third words"}, format="json"))

    history = assert_ok(api.viewer.get(f"{url}/history"))
    assert [entry["body"] for entry in history["data"]] == ["first words", "second words"]
    assert history["data"][0]["author_id"] == world.developer.pk
    assert history["data"][0]["created_at"] == comment["created_at"]
    assert history["meta"]["total"] == 2

    event = Event.objects.filter(type="comment.updated").order_by("id").first()
    assert event.changes == {"body": {"previous": "first words", "current": "second words"}}
    assert event.data["comment"]["body"] == "second words"
    assert event.data["issue"]["id"] == issue.pk
    rows = IssueHistory.objects.filter(issue=issue, field="comment").order_by("id")
    assert [row.new_value and row.new_value.get("body") for row in rows] == [
        "first words",
        "second words",
        "third words",
    ]


def test_the_same_body_again_changes_nothing(api, issue):
    comment = comment_of(api.developer, issue, "steady")
    data = assert_ok(
        api.developer.patch(f"/v1/comments/{comment['id']}", {"body": "steady"}, format="json")
    )["data"]
    assert data == comment
    assert CommentRevision.objects.count() == 0
    assert not Event.objects.filter(type="comment.updated").exists()


def test_a_bad_edit_changes_nothing(api, issue):
    comment = comment_of(api.developer, issue, "steady")
    assert_error(
        api.developer.patch(f"/v1/comments/{comment['id']}", {"body": ""}, format="json"),
        422,
        "VALIDATION_ERROR",
    )
    assert Comment.objects.get(pk=comment["id"]).body == "steady"
    assert CommentRevision.objects.count() == 0


def test_a_deletion_is_recorded(api, world, pull):
    comment = comment_of(api.developer, pull)
    assert_ok(api.developer.delete(f"/v1/comments/{comment['id']}"))
    assert PullRequest.objects.get(pk=pull.pk).comment_count == 0
    event = Event.objects.get(type="comment.deleted")
    assert event.data["comment"] == comment
    assert event.data["pull_request"]["comment_count"] == 0
    assert event.actor_id == world.developer.pk


def test_counts_stay_true_through_many_writes(api, world, issue):
    ids = [comment_of(api.developer, issue, f"n{n}")["id"] for n in range(5)]
    for comment_id in ids[:2]:
        assert_ok(api.developer.delete(f"/v1/comments/{comment_id}"))
    counted = Issue.objects.annotate(real=Count("comments")).get(pk=issue.pk)
    assert counted.comment_count == counted.real == 3


# Mentions ------------------------------------------------------------------------------------


def test_mentions_email_each_member_who_can_see_once(
    api, world, issue, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        comment = comment_of(
            api.developer,
            issue,
            "@owner @viewer please look; @outsider too, and @dev (me), and `@admin` in code",
        )
    recipients = sorted(message.to[0] for message in mail.outbox)
    assert recipients == ["owner@acme.test", "viewer@acme.test"]
    message = mail.outbox[0]
    assert "mentioned you" in message.subject and "#1" in message.subject
    assert "@owner @viewer please look" in message.body
    assert set(Mention.objects.values_list("user__email", flat=True)) == set(recipients)

    # An edit that mentions them again emails no one twice; a new name is emailed once.
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert_ok(
            api.developer.patch(
                f"/v1/comments/{comment['id']}",
                {"body": "@owner @viewer @admin ping"},
                format="json",
            )
        )
    assert [message.to[0] for message in mail.outbox] == ["admin@acme.test"]


def test_a_mention_of_someone_who_cannot_see_the_project_leaks_nothing(
    api, world, issue, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        with_outsider = comment_of(api.developer, issue, "cc @outsider")
        with_nobody = comment_of(api.developer, issue, "cc @nobody-at-all")
    assert mail.outbox == []
    assert Mention.objects.count() == 0
    # The two answers differ only in what the caller wrote.
    assert with_outsider["body_html"] == "<p>cc @outsider</p>\n"
    assert with_nobody["body_html"] == "<p>cc @nobody-at-all</p>\n"


def test_mentioned_filters_the_issue_lists(api, world, issue):
    other = make_issue(world.project, world.owner, title="Unrelated")
    comment_of(api.owner, issue, "@dev can you take this?")
    comment_of(api.owner, issue, "@dev again")
    comment_of(api.owner, other, "@viewer fyi")

    mine = assert_ok(api.developer.get(f"/v1/projects/{world.project.pk}/issues?mentioned=me"))
    assert [row["id"] for row in mine["data"]] == [issue.pk]
    assert mine["meta"]["total"] == 1
    by_id = assert_ok(api.owner.get(f"/v1/issues?mentioned={world.viewer.pk}"))
    assert [row["id"] for row in by_id["data"]] == [other.pk]
    assert assert_ok(api.owner.get("/v1/issues?mentioned=me"))["data"] == []
    for bad in ("abc", "", "0", "-1", "@dev"):
        assert_error(api.owner.get("/v1/issues", {"mentioned": bad}), 400, "BAD_REQUEST")
    assert assert_ok(api.owner.get("/v1/issues?mentioned=9999999999999999999"))["data"] == []


def test_a_changed_handle_is_the_one_mentioned(
    api, world, issue, django_capture_on_commit_callbacks
):
    assert_ok(api.viewer.patch("/v1/users/me", {"handle": "vic"}, format="json"))
    with django_capture_on_commit_callbacks(execute=True):
        comment_of(api.developer, issue, "@viewer and @Vic")
    assert [message.to[0] for message in mail.outbox] == ["viewer@acme.test"]


def test_mention_emails_a_killed_worker_left_unsent_are_sent_once_by_the_sweep(
    api, world, issue, settings
):
    """The comment's task never ran (lost with its worker): its mentions are emailed by the
    sweep once MENTIONS_SWEEP_GRACE_SECONDS have passed, and by no later sweep."""
    from datetime import timedelta

    from django.utils import timezone

    from comments.services import mentions_sweep

    settings.MENTIONS_SWEEP_GRACE_SECONDS = 60
    comment_of(api.developer, issue, "@owner have a look")  # its task is never run here
    fresh = comment_of(api.developer, issue, "@viewer and you")
    assert mail.outbox == [] and Mention.objects.filter(notified_at=None).count() == 2
    assert mentions_sweep() == 0, "within the grace its own task may be on its way"

    Mention.objects.exclude(comment_id=fresh["id"]).update(
        created_at=timezone.now() - timedelta(seconds=61)
    )
    assert mentions_sweep() == 1
    assert [message.to[0] for message in mail.outbox] == ["owner@acme.test"]
    assert mentions_sweep() == 0
    assert len(mail.outbox) == 1
    assert Mention.objects.get(user=world.owner).notified_at is not None
    assert Mention.objects.get(user=world.viewer).notified_at is None
