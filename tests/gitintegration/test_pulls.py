"""Pull requests over HTTP on real repositories: validation, numbers, states, reviews, real
merges checked with git in the origin afterwards, conflicts, merges done outside the service,
closing keywords."""

import threading
import uuid

import pytest

from events.models import Event
from gitintegration.models import PullRequest, Review
from gitintegration.services import closing_references, repository_sync
from issues.models import Issue
from projects.models import Project
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import make_issue
from tests.gitorigin import git

PULL_FIELDS = {
    "id",
    "repository_id",
    "number",
    "title",
    "description",
    "head",
    "base",
    "state",
    "author_id",
    "head_sha",
    "base_sha",
    "merge_commit_sha",
    "merge_method",
    "merged_by_id",
    "created_at",
    "updated_at",
    "merged_at",
    "closed_at",
    "comment_count",
}


def open_pull(client, repository, head="feature", base="main", **extra):
    body = {"title": f"Merge {head}", "head": head, "base": base, **extra}
    return client.post(f"/v1/repositories/{repository.pk}/pulls", body, format="json")


def merge(client, pull_id, method="merge", capture=None):
    path = f"/v1/pulls/{pull_id}/merge"
    if capture is None:
        return client.post(path, {"method": method}, format="json")
    with capture(execute=True):
        return client.post(path, {"method": method}, format="json")


# Opening ---------------------------------------------------------------------------------


def test_open_a_pull_request(api, world, synced, origin):
    response = open_pull(api.developer, synced, description="Adds the feature.")
    data = assert_ok(response, 201)["data"]
    assert response["Location"] == f"/v1/pulls/{data['id']}"
    assert set(data) == PULL_FIELDS
    assert data["number"] == 1
    assert data["state"] == "open"
    assert data["author_id"] == world.developer.pk
    assert data["head_sha"] == origin.sha("feature")
    assert data["base_sha"] == origin.sha("main")
    assert data["merge_commit_sha"] is None and data["merge_method"] is None
    assert data["merged_at"] is None and data["closed_at"] is None
    event = Event.objects.get(type="pull_request.opened")
    assert event.data == {"pull_request": data}
    assert event.actor_id == world.developer.pk
    assert event.project_id == world.project.pk
    assert assert_ok(api.viewer.get(f"/v1/pulls/{data['id']}"))["data"] == data


def test_numbers_count_per_repository(
    api, world, synced, origin, django_capture_on_commit_callbacks
):
    numbers = [
        assert_ok(open_pull(api.owner, synced, head=head), 201)["data"]["number"]
        for head in ("feature", "conflict")
    ]
    assert numbers == [1, 2]
    response = api.owner.post(
        f"/v1/projects/{world.project.pk}/repositories",
        {"name": "second", "clone_url": origin.url},
        format="json",
    )
    with django_capture_on_commit_callbacks(execute=True):
        second = assert_ok(response, 201)["data"]["id"]
    repository_sync(repository_id=second)
    from gitintegration.models import Repository

    other = Repository.objects.get(pk=second)
    assert assert_ok(open_pull(api.owner, other), 201)["data"]["number"] == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"title": "x", "head": "nope", "base": "main"}, "head"),
        ({"title": "x", "head": "feature", "base": "nope"}, "base"),
        ({"title": "x", "head": "main", "base": "main"}, "head"),
        ({"title": "x", "head": "main", "base": "docs"}, "head"),  # docs contains main
        ({"head": "feature", "base": "main"}, "title"),
        ({"title": "x", "base": "main"}, "head"),
        ({"title": "x", "head": "feature"}, "base"),
        ({"title": "x", "head": 7, "base": "main"}, "head"),
        ({"title": "", "head": "feature", "base": "main"}, "title"),
    ],
)
def test_invalid_pull_requests_are_422_with_the_field(api, synced, body, field):
    response = api.developer.post(f"/v1/repositories/{synced.pk}/pulls", body, format="json")
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert field in error["details"], error
    assert not PullRequest.objects.exists()


def test_one_open_pull_request_per_pair(api, synced):
    first = assert_ok(open_pull(api.developer, synced), 201)["data"]
    error = assert_error(open_pull(api.developer, synced), 422, "VALIDATION_ERROR")
    assert error["details"] == {
        "head": ["Pull request #1 from 'feature' into 'main' is open already."]
    }
    # Another base is another pair; a closed one frees its pair.
    assert_ok(open_pull(api.developer, synced, base="conflict"), 201)
    assert_ok(api.developer.patch(f"/v1/pulls/{first['id']}", {"state": "closed"}, format="json"))
    assert assert_ok(open_pull(api.developer, synced), 201)["data"]["number"] == 3


def test_list_with_state_filter(api, synced):
    ids = {}
    for head in ("feature", "conflict", "docs"):
        ids[head] = assert_ok(
            open_pull(api.owner, synced, head=head, base="main" if head != "docs" else "feature"),
            201,
        )["data"]["id"]
    api.owner.patch(f"/v1/pulls/{ids['conflict']}", {"state": "closed"}, format="json")
    path = f"/v1/repositories/{synced.pk}/pulls"
    everything = assert_ok(api.viewer.get(path))
    assert [p["id"] for p in everything["data"]] == [ids["docs"], ids["conflict"], ids["feature"]]
    assert everything["meta"]["total"] == 3
    opened = assert_ok(api.viewer.get(f"{path}?state=open"))["data"]
    assert {p["id"] for p in opened} == {ids["docs"], ids["feature"]}
    closed = assert_ok(api.viewer.get(f"{path}?state=closed,merged"))["data"]
    assert [p["id"] for p in closed] == [ids["conflict"]]
    error = assert_error(api.viewer.get(f"{path}?state=shut"), 400, "BAD_REQUEST")
    assert "state" in error["details"]


# Updating ---------------------------------------------------------------------------------


def test_patch_title_description(api, synced):
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    data = assert_ok(
        api.developer.patch(
            f"/v1/pulls/{pull['id']}",
            {"title": "Better", "description": "Now with words", "number": 99, "state": "open"},
            format="json",
        )
    )["data"]
    assert (data["title"], data["description"], data["number"]) == ("Better", "Now with words", 1)
    event = Event.objects.get(type="pull_request.updated")
    assert event.changes == {
        "title": {"previous": "Merge feature", "current": "Better"},
        "description": {"previous": "", "current": "Now with words"},
    }
    # The same values again: no change, no event.
    api.developer.patch(f"/v1/pulls/{pull['id']}", {"title": "Better"}, format="json")
    assert Event.objects.filter(type="pull_request.updated").count() == 1


def test_close_and_reopen(api, synced):
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    closed = assert_ok(
        api.developer.patch(f"/v1/pulls/{pull['id']}", {"state": "closed"}, format="json")
    )["data"]
    assert closed["state"] == "closed" and closed["closed_at"].endswith("Z")
    event = Event.objects.get(type="pull_request.closed")
    assert event.changes == {"state": {"previous": "open", "current": "closed"}}
    assert event.data["pull_request"] == closed
    reopened = assert_ok(
        api.developer.patch(f"/v1/pulls/{pull['id']}", {"state": "open"}, format="json")
    )["data"]
    assert reopened["state"] == "open" and reopened["closed_at"] is None
    assert Event.objects.filter(type="pull_request.updated").last().changes == {
        "state": {"previous": "closed", "current": "open"}
    }


def test_reopening_when_the_pair_is_taken_is_409(api, synced):
    first = assert_ok(open_pull(api.developer, synced), 201)["data"]
    api.developer.patch(f"/v1/pulls/{first['id']}", {"state": "closed"}, format="json")
    assert_ok(open_pull(api.developer, synced), 201)
    response = api.developer.patch(f"/v1/pulls/{first['id']}", {"state": "open"}, format="json")
    assert_error(response, 409, "CONFLICT")


@pytest.mark.parametrize(
    "body", [{"state": "merged"}, {"state": "shut"}, {"title": ""}, {"title": 5}, {"state": None}]
)
def test_bad_patches_are_422(api, synced, body):
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    response = api.developer.patch(f"/v1/pulls/{pull['id']}", body, format="json")
    assert_error(response, 422, "VALIDATION_ERROR")


def test_merged_pull_requests_cannot_be_reopened_or_closed(api, synced):
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    assert_ok(merge(api.developer, pull["id"]))
    for state in ("closed", "open"):
        response = api.developer.patch(f"/v1/pulls/{pull['id']}", {"state": state}, format="json")
        error = assert_error(response, 409, "CONFLICT")
        assert error["details"] == {"state": "merged"}


# Reviews ----------------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["approved", "changes_requested", "commented"])
def test_reviews(api, world, synced, state):
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    response = api.owner.post(
        f"/v1/pulls/{pull['id']}/reviews", {"state": state, "body": "Looks right."}, format="json"
    )
    review = assert_ok(response, 201)["data"]
    assert review["state"] == state and review["body"] == "Looks right."
    assert review["author_id"] == world.owner.pk and review["pull_request_id"] == pull["id"]
    event = Event.objects.get(type="pull_request.reviewed")
    assert event.data["review"] == review
    assert event.data["pull_request"]["id"] == pull["id"]
    listed = assert_ok(api.viewer.get(f"/v1/pulls/{pull['id']}/reviews"))
    assert listed["data"] == [review]


@pytest.mark.parametrize("body", [{}, {"state": "lgtm"}, {"state": "approved", "body": 3}])
def test_bad_reviews_are_422(api, synced, body):
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    response = api.owner.post(f"/v1/pulls/{pull['id']}/reviews", body, format="json")
    assert_error(response, 422, "VALIDATION_ERROR")
    assert not Review.objects.exists()


def test_viewers_read_but_do_not_write(api, world, synced):
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    assert_error(open_pull(api.viewer, synced, head="docs", base="feature"), 403, "FORBIDDEN")
    for path, body in [
        (f"/v1/pulls/{pull['id']}/reviews", {"state": "approved"}),
        (f"/v1/pulls/{pull['id']}/merge", {"method": "merge"}),
    ]:
        assert_error(api.viewer.post(path, body, format="json"), 403, "FORBIDDEN")
    response = api.viewer.patch(f"/v1/pulls/{pull['id']}", {"title": "x"}, format="json")
    assert_error(response, 403, "FORBIDDEN")
    read_only = client_for(world.developer, scopes=["projects:read"])
    error = assert_error(read_only.post(f"/v1/pulls/{pull['id']}/merge"), 403, "FORBIDDEN")
    assert error["details"]["required_scope"] == "projects:write"


def test_outsider_gets_404_on_pull_requests(api, synced):
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    for method, path in [
        ("get", f"/v1/pulls/{pull['id']}"),
        ("patch", f"/v1/pulls/{pull['id']}"),
        ("post", f"/v1/pulls/{pull['id']}/merge"),
        ("get", f"/v1/pulls/{pull['id']}/reviews"),
        ("post", f"/v1/pulls/{pull['id']}/reviews"),
    ]:
        response = getattr(api.outsider, method)(path, {"state": "approved"}, format="json")
        assert_error(response, 404, "NOT_FOUND")


def test_archived_project_refuses_pull_request_writes(api, world, synced):
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    Project.objects.filter(pk=world.project.pk).update(status=Project.Status.ARCHIVED)
    assert_error(open_pull(api.owner, synced, head="conflict"), 409, "CONFLICT")
    assert_error(merge(api.owner, pull["id"]), 409, "CONFLICT")
    assert_error(
        api.owner.patch(f"/v1/pulls/{pull['id']}", {"title": "x"}, format="json"), 409, "CONFLICT"
    )
    assert_ok(api.viewer.get(f"/v1/pulls/{pull['id']}"))


# Merging ----------------------------------------------------------------------------------


def test_merge_commit_is_pushed_to_the_origin(
    api, world, synced, origin, django_capture_on_commit_callbacks
):
    head, base = origin.sha("feature"), origin.sha("main")
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    data = assert_ok(merge(api.developer, pull["id"], "merge", django_capture_on_commit_callbacks))[
        "data"
    ]
    tip = origin.sha("main")
    assert data["state"] == "merged"
    assert data["merge_commit_sha"] == tip
    assert data["merge_method"] == "merge"
    assert data["merged_by_id"] == world.developer.pk
    assert data["merged_at"].endswith("Z")
    assert (data["head_sha"], data["base_sha"]) == (head, base)
    # In the origin: a merge commit whose parents are the old base and the head.
    assert origin.parents(tip) == [base, head]
    assert origin.file("main", "feature.txt") == "a feature"
    assert origin.file("main", "app.txt") == "line one (ours)\nline two"
    assert origin.show(tip, "%s") == "Merge pull request #1 from feature"
    assert origin.show(tip, "%an <%ae>") == f"{world.developer.name} <{world.developer.email}>"
    assert origin.show(tip, "%cn <%ce>") == "Collab <git@collab.localhost>"
    assert head in origin.log("main")
    # The follow-up sync indexed the merge commit and moved the branch.
    from gitintegration.models import Branch, Commit

    assert Commit.objects.filter(repository=synced, sha=tip).exists()
    assert Branch.objects.get(repository=synced, name="main").commit_sha == tip
    event = Event.objects.get(type="pull_request.merged")
    assert event.data["pull_request"]["merge_commit_sha"] == tip
    assert event.changes == {"state": {"previous": "open", "current": "merged"}}
    assert event.actor_id == world.developer.pk


def test_squash_makes_one_commit_on_the_base(api, synced, origin):
    origin.commit("feature", {"feature.txt": "a better feature\n"}, "Improve it")
    repository_sync(repository_id=synced.pk)
    base = origin.sha("main")
    pull = assert_ok(open_pull(api.developer, synced, description="Two commits in one."), 201)[
        "data"
    ]
    data = assert_ok(merge(api.developer, pull["id"], "squash"))["data"]
    tip = origin.sha("main")
    assert data["merge_commit_sha"] == tip
    assert origin.parents(tip) == [base]
    assert origin.file("main", "feature.txt") == "a better feature"
    assert origin.show(tip, "%B").strip() == "Merge feature (#1)\n\nTwo commits in one."
    assert origin.sha("feature") not in origin.log("main")


def test_fast_forward_moves_the_base_to_the_head(api, synced, origin):
    head = origin.sha("docs")
    pull = assert_ok(open_pull(api.developer, synced, head="docs"), 201)["data"]
    data = assert_ok(merge(api.developer, pull["id"], "fast_forward"))["data"]
    assert origin.sha("main") == head == data["merge_commit_sha"]


def test_fast_forward_impossible_is_409(api, synced, origin):
    base = origin.sha("main")
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    error = assert_error(merge(api.developer, pull["id"], "fast_forward"), 409, "CONFLICT")
    assert "fast-forward" in error["message"]
    assert origin.sha("main") == base
    assert PullRequest.objects.get(pk=pull["id"]).state == "open"


@pytest.mark.parametrize("method", ["merge", "squash"])
def test_a_conflict_is_409_and_changes_nothing(api, synced, origin, method):
    before = origin.branches()
    pull = assert_ok(open_pull(api.developer, synced, head="conflict"), 201)["data"]
    events = Event.objects.count()
    error = assert_error(merge(api.developer, pull["id"], method), 409, "CONFLICT")
    assert "app.txt" in error["message"]
    assert error["details"] == {"head": "conflict", "base": "main"}
    assert origin.branches() == before
    record = assert_ok(api.developer.get(f"/v1/pulls/{pull['id']}"))["data"]
    assert record["state"] == "open" and record["merge_commit_sha"] is None
    assert Event.objects.count() == events


def test_merging_twice_is_409(api, synced, origin):
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    assert_ok(merge(api.developer, pull["id"]))
    tip = origin.sha("main")
    error = assert_error(merge(api.developer, pull["id"]), 409, "CONFLICT")
    assert error["details"] == {"state": "merged"}
    assert origin.sha("main") == tip


def test_merging_a_closed_pull_request_is_409(api, synced, origin):
    before = origin.branches()
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    api.developer.patch(f"/v1/pulls/{pull['id']}", {"state": "closed"}, format="json")
    assert_error(merge(api.developer, pull["id"]), 409, "CONFLICT")
    assert origin.branches() == before


def test_a_base_moved_during_the_merge_is_409(api, synced, origin, monkeypatch):
    """The origin's base moves between the service's fetch and its push: the push's lease
    fails, and neither the origin nor the pull request changes."""
    from gitintegration import git as gitlib

    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    real = gitlib.merge_commit_create
    moved = {}

    def meanwhile(*args, **kwargs):
        created = real(*args, **kwargs)
        moved["sha"] = origin.commit("main", {"late.txt": "late\n"}, "Someone else pushed")
        return created

    monkeypatch.setattr(gitlib, "merge_commit_create", meanwhile)
    error = assert_error(merge(api.developer, pull["id"]), 409, "CONFLICT")
    assert "refused the push" in error["message"]
    assert origin.sha("main") == moved["sha"]
    assert PullRequest.objects.get(pk=pull["id"]).state == "open"
    assert not Event.objects.filter(type="pull_request.merged").exists()


def test_a_deleted_head_branch_is_409(api, synced, origin):
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    git("branch", "-D", "feature", cwd=origin.path)
    error = assert_error(merge(api.developer, pull["id"]), 409, "CONFLICT")
    assert error["details"] == {"branch": "feature"}


@pytest.mark.parametrize("body", [{"method": "rebase"}, {"method": 1}, {"method": None}])
def test_unknown_merge_methods_are_422(api, synced, body):
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    response = api.developer.post(f"/v1/pulls/{pull['id']}/merge", body, format="json")
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert "method" in error["details"]


@pytest.mark.parametrize("action", ["open", "merge"])
def test_the_repository_is_locked_before_an_idempotent_requests_transaction(
    api, synced, monkeypatch, action
):
    """A sync (a worker) takes the repository's lock, then writes. Opening and merging take
    the same lock; with an Idempotency-Key the request runs in a transaction of its own, which
    on SQLite holds the database's write lock from its start. Taken inside it, the repository's
    lock would wait for the sync while the sync waits for the write lock, both until the busy
    timeout: the lock is taken first, and held until the transaction has ended."""
    from collab.api import viewsets
    from gitintegration import git as mirrors_git

    if action == "merge":
        pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
        path, body, status = f"/v1/pulls/{pull['id']}/merge", {"method": "merge"}, 200
    else:
        path, body, status = (
            f"/v1/repositories/{synced.pk}/pulls",
            {
                "title": "Feature",
                "head": "feature",
                "base": "main",
            },
            201,
        )
    taken = threading.Event()

    def take_the_lock():  # as a sync would, from another thread
        with mirrors_git.mirror_lock(synced.pk):
            taken.set()

    other = threading.Thread(target=take_the_lock, daemon=True)
    claimed = viewsets.idempotency_begin
    free_at_the_claim: list[bool] = []

    def claim(request):
        other.start()
        free_at_the_claim.append(taken.wait(0.3))
        return claimed(request)

    monkeypatch.setattr(viewsets, "idempotency_begin", claim)
    response = api.developer.post(path, body, format="json", HTTP_IDEMPOTENCY_KEY=str(uuid.uuid4()))
    assert_ok(response, status)
    assert free_at_the_claim == [False]
    other.join(timeout=10)
    assert taken.is_set()  # released with the request


# Merges done outside ----------------------------------------------------------------------


def test_a_merge_done_outside_is_detected_at_sync(api, synced, origin):
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    git("checkout", "--quiet", "main", cwd=origin.work)
    git("pull", "--quiet", "origin", "main", cwd=origin.work)
    git("merge", "--quiet", "--no-ff", "-m", "Merged by hand", "origin/feature", cwd=origin.work)
    git("push", "--quiet", "origin", "main", cwd=origin.work)
    repository_sync(repository_id=synced.pk)
    data = assert_ok(api.developer.get(f"/v1/pulls/{pull['id']}"))["data"]
    assert data["state"] == "merged"
    assert data["merge_commit_sha"] == origin.sha("main")
    assert data["merged_by_id"] is None
    event = Event.objects.get(type="pull_request.merged")
    assert event.actor_id is None


def test_a_fast_forward_done_outside_is_detected(api, synced, origin):
    pull = assert_ok(open_pull(api.developer, synced, head="docs"), 201)["data"]
    git("push", "--quiet", "origin", "origin/docs:refs/heads/main", cwd=origin.work)
    repository_sync(repository_id=synced.pk)
    data = assert_ok(api.developer.get(f"/v1/pulls/{pull['id']}"))["data"]
    assert data["state"] == "merged"
    assert data["merge_commit_sha"] == origin.sha("docs")


def test_open_pull_requests_follow_their_branches(api, synced, origin):
    pull = assert_ok(open_pull(api.developer, synced), 201)["data"]
    new_head = origin.commit("feature", {"more.txt": "more\n"}, "More")
    repository_sync(repository_id=synced.pk)
    data = assert_ok(api.developer.get(f"/v1/pulls/{pull['id']}"))["data"]
    assert data["state"] == "open" and data["head_sha"] == new_head
    event = Event.objects.filter(type="pull_request.updated").last()
    assert event.changes == {"head_sha": {"previous": pull["head_sha"], "current": new_head}}


# Closing keywords -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("fixes #12", [12]),
        ("Fixes #12 and closes #3", [12, 3]),
        ("Close #1, fix #2, resolve #3", [1, 2, 3]),
        ("closed #4; fixed #5; resolved #6", [4, 5, 6]),
        ("FIXES: #7", [7]),
        ("Resolves #8.", [8]),
        ("see #9", []),
        ("prefixes #10", []),
        ("fixes#11", [11]),
        ("fixes #12 fixes #12", [12]),
        ("fixes # 13", []),
    ],
)
def test_closing_references(text, numbers):
    assert closing_references([text]) == numbers


def test_merging_closes_the_named_issues(api, world, synced, origin):
    one = make_issue(world.project, world.owner, title="Named in a commit")  # number 1
    two = make_issue(world.project, world.owner, title="Named in the title")  # number 2
    three = make_issue(world.project, world.owner, title="Named in the description")
    untouched = make_issue(world.project, world.owner, title="Only mentioned")
    pull = assert_ok(
        open_pull(
            api.developer,
            synced,
            title="Ship it, closes #2",
            description=f"Resolves #{three.number}. See #{untouched.number}. Fixes #99.",
        ),
        201,
    )["data"]
    assert_ok(merge(api.developer, pull["id"]))
    for issue in (one, two, three):
        issue.refresh_from_db()
        assert issue.status == "closed"
        history = issue.history.get(field="status")
        assert history.source == "pull_request #1"
        assert history.actor_id == world.developer.pk
    untouched.refresh_from_db()
    assert untouched.status == "open"
    closed = Event.objects.filter(type="issue.closed").order_by("id")
    assert [e.data["issue"]["number"] for e in closed] == [1, 2, 3]
    assert all(e.data["source"] == "pull_request #1" for e in closed)
    body = assert_ok(api.viewer.get(f"/v1/issues/{one.pk}/history"))["data"]
    assert body[-1]["source"] == "pull_request #1"


def test_issues_of_other_projects_stay_open(api, world, synced):
    elsewhere = make_issue(world.other_project, world.outsider, title="Not ours")
    assert elsewhere.number == 1
    pull = assert_ok(open_pull(api.developer, synced, title="x"), 201)["data"]
    assert_ok(merge(api.developer, pull["id"]))  # feature's commit says "fixes #1"
    elsewhere.refresh_from_db()
    assert elsewhere.status == "open"


def test_a_merge_detected_outside_closes_issues_too(api, world, synced, origin):
    issue = make_issue(world.project, world.owner, title="Fixed by the feature")
    pull = assert_ok(open_pull(api.developer, synced, title="Feature"), 201)["data"]
    git("checkout", "--quiet", "main", cwd=origin.work)
    git("pull", "--quiet", "origin", "main", cwd=origin.work)
    git("merge", "--quiet", "--no-ff", "-m", "By hand", "origin/feature", cwd=origin.work)
    git("push", "--quiet", "origin", "main", cwd=origin.work)
    repository_sync(repository_id=synced.pk)
    issue.refresh_from_db()
    assert issue.status == "closed"
    assert issue.history.get(field="status").source == f"pull_request #{pull['number']}"
    assert Issue.objects.get(pk=issue.pk).closed_at is not None
