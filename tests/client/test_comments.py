"""Comments and handles through the Python client (``client.comments``, ``users.update_me``,
``issues.list(mentioned=)``) against a live server, as an integrator's code would use them."""

import asyncio
import itertools

import collab_client
import httpx
import pytest
from collab_client import AsyncCollab, Collab
from collab_client.models import Comment, CommentRevision, Me

from collab.api.scopes import ALL_SCOPES
from tests.factories import PullRequestFactory, RepositoryFactory, make_api_key, make_issue
from tests.liveserver import asgi_server, process_env, require_services

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.live]

MISSING = 987654321


@pytest.fixture(scope="module")
def server(django_db_setup, tmp_path_factory):
    # One server for the module: it reads whatever rows each test makes, and starting a
    # gunicorn per test would be most of this module's run time.
    require_services()
    with asgi_server(process_env(), tmp_path_factory.mktemp("comments")) as port:
        yield f"http://127.0.0.1:{port}"


def client_of(server, user) -> Collab:
    return Collab(server, api_key=make_api_key(user, ALL_SCOPES))


@pytest.fixture
def owner(world, server):
    with client_of(server, world.owner) as client:
        yield client


@pytest.fixture
def developer(world, server):
    with client_of(server, world.developer) as client:
        yield client


@pytest.fixture
def issue(world):
    return make_issue(world.project, world.owner, title="Login fails")


def test_a_thread_on_an_issue_and_on_a_pull_request(world, owner, developer, issue):
    posted = owner.comments.create(issue_id=issue.pk, body="Seen on **staging** too.")
    assert isinstance(posted, Comment)
    assert (posted.issue_id, posted.pull_request_id, posted.project_id) == (
        issue.pk,
        None,
        world.project.pk,
    )
    assert posted.author_id == world.owner.pk and posted.edited is False
    assert "<strong>staging</strong>" in posted.body_html
    assert owner.comments.get(posted.id) == posted
    assert owner.issues.get(issue.pk).comment_count == 1

    pull = PullRequestFactory(
        repository=RepositoryFactory(project=world.project), author=world.developer
    )
    on_pull = developer.comments.create(pull_id=pull.pk, body="Rebased on main.")
    assert (on_pull.pull_request_id, on_pull.issue_id) == (pull.pk, None)
    assert [c.id for c in owner.comments.list(pull_id=pull.pk)] == [on_pull.id]
    assert owner.pulls.get(pull.pk).comment_count == 1
    assert [c.id for c in owner.comments.list(issue_id=issue.pk)] == [posted.id]

    with pytest.raises(TypeError):
        owner.comments.list()
    with pytest.raises(TypeError):
        owner.comments.create(issue_id=issue.pk, pull_id=pull.pk, body="Both?")


def test_lists_page_lazily_and_since_keeps_the_recent(owner, issue):
    made = [owner.comments.create(issue_id=issue.pk, body=f"Note {n}") for n in range(5)]
    sent: list[httpx.Request] = []
    http = httpx.Client(base_url=owner.base_url, event_hooks={"request": [sent.append]})
    with Collab(owner.base_url, api_key=owner.api_key, http_client=http) as counted:
        pager = iter(counted.comments.list(issue_id=issue.pk, per_page=2))
        assert sent == [], "a list asks for nothing until it is read"
        first_two = list(itertools.islice(pager, 2))
        assert len(sent) == 1
        walked = first_two + list(pager)
    assert [c.id for c in first_two] == [c.id for c in made[:2]]
    assert [c.body for c in walked] == [f"Note {n}" for n in range(5)], "oldest first"
    # Page 1, then the server's cursors (rows written meanwhile neither repeat nor go missing).
    assert [r.url.params.get("page") for r in sent] == ["1", None, None]
    assert [bool(r.url.params.get("cursor")) for r in sent] == [False, True, True]
    page = owner.comments.list(issue_id=issue.pk).page(3, per_page=2)
    assert (page.meta.total, page.meta.total_pages, len(page.data)) == (5, 3, 1)

    # The server's own times, so the test does not depend on this machine's clock.
    since = owner.comments.list(issue_id=issue.pk, since=made[3].created_at).all()
    assert [c.id for c in since] == [made[3].id, made[4].id]
    edited = owner.comments.update(made[0].id, body="Note 0, corrected")
    since = owner.comments.list(issue_id=issue.pk, since=made[3].created_at).all()
    assert {c.id for c in since} == {made[0].id, made[3].id, made[4].id}
    later = owner.comments.list(issue_id=issue.pk, since=edited.updated_at).all()
    assert [c.id for c in later] == [made[0].id]


def test_edits_keep_a_history_and_deletion_is_final(world, owner, developer, issue):
    comment = owner.comments.create(issue_id=issue.pk, body="First draft")
    owner.comments.update(comment.id, body="Second draft")
    final = owner.comments.update(comment.id, body="Final")
    assert (final.body, final.edited) == ("Final", True)
    history = owner.comments.history(comment.id).all()
    assert all(isinstance(r, CommentRevision) for r in history)
    assert [(r.comment_id, r.body) for r in history] == [
        (comment.id, "First draft"),
        (comment.id, "Second draft"),
    ]
    assert [r.body for r in owner.comments.history(comment.id, per_page=1)] == [
        "First draft",
        "Second draft",
    ]

    with pytest.raises(collab_client.PermissionDenied):
        developer.comments.update(comment.id, body="Not mine")
    with pytest.raises(collab_client.PreconditionFailed):
        owner.comments.update(comment.id, body="Stale", if_match='"not-the-current-tag"')

    assert owner.comments.delete(comment.id) is None
    with pytest.raises(collab_client.NotFound):
        owner.comments.get(comment.id)
    assert owner.issues.get(issue.pk).comment_count == 0


def test_errors_are_the_librarys_exceptions(owner, issue):
    with pytest.raises(collab_client.NotFound) as missing:
        owner.comments.get(MISSING)
    assert (missing.value.status, missing.value.code) == (404, "NOT_FOUND")
    with pytest.raises(collab_client.NotFound):
        owner.comments.list(issue_id=MISSING).all()
    with pytest.raises(collab_client.NotFound):
        owner.comments.create(issue_id=MISSING, body="Into the void")
    with pytest.raises(collab_client.NotFound):
        owner.comments.history(MISSING).all()

    for body in ("", "   "):
        with pytest.raises(collab_client.ValidationError) as empty:
            owner.comments.create(issue_id=issue.pk, body=body)
        assert empty.value.status == 422 and set(empty.value.details) == {"body"}
    comment = owner.comments.create(issue_id=issue.pk, body="Fine")
    with pytest.raises(collab_client.ValidationError):
        owner.comments.update(comment.id, body="")
    assert owner.comments.get(comment.id).body == "Fine"


def test_a_changed_handle_is_mentioned_and_a_taken_one_refused(world, owner, developer, issue):
    me = owner.users.update_me(handle="Olive", name="Olive O.")
    assert isinstance(me, Me) and (me.handle, me.name) == ("olive", "Olive O.")
    assert owner.users.me().handle == "olive"
    assert owner.users.get(world.owner.pk).handle == "olive"
    assert owner.users.update_me(name="Olive").handle == "olive", "PATCH: only what is given"

    for taken in ("olive", "OLIVE"):
        with pytest.raises(collab_client.ValidationError) as conflict:
            developer.users.update_me(handle=taken)
        assert set(conflict.value.details) == {"handle"}
    with pytest.raises(collab_client.ValidationError):
        developer.users.update_me(handle="-not a handle-")
    assert developer.users.me().handle != "olive"

    other = make_issue(world.project, world.owner, title="Nobody mentioned here")
    developer.comments.create(issue_id=other.pk, body="No names in this one.")
    developer.comments.create(issue_id=issue.pk, body="@olive could you look?")
    assert [i.id for i in owner.issues.list(world.project.pk, mentioned="me")] == [issue.pk]
    assert [i.id for i in owner.issues.list(mentioned="me")] == [issue.pk]
    assert [i.id for i in developer.issues.list(mentioned=world.owner.pk)] == [issue.pk]
    assert developer.issues.list(mentioned="me").all() == []


def test_the_async_client(world, server, issue):
    key = make_api_key(world.owner, ALL_SCOPES)

    async def scenario():
        async with AsyncCollab(server, api_key=key) as client:
            made = [
                await client.comments.create(issue_id=issue.pk, body=f"Async {n}") for n in range(3)
            ]
            walked = [c.id async for c in client.comments.list(issue_id=issue.pk, per_page=2)]
            await client.comments.update(made[0].id, body="Async 0, edited")
            history = await client.comments.history(made[0].id).all()
            await client.comments.delete(made[1].id)
            try:
                await client.comments.get(made[1].id)
            except collab_client.NotFound as missing:
                status = missing.status
            me = await client.users.update_me(handle="async-olive")
            return made, walked, history, status, me

    made, walked, history, status, me = asyncio.run(scenario())
    assert walked == [c.id for c in made]
    assert [r.body for r in history] == ["Async 0"]
    assert status == 404
    assert me.handle == "async-olive"
