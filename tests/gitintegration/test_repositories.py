"""Repositories over HTTP, on real git repositories: registration and sync, branches with the
SHAs git reports, incremental commit indexing, the URL guards, push notifications."""

import hashlib
import hmac
import json

import pytest

from events.models import Event
from gitintegration import git as gitlib
from gitintegration.models import Branch, Commit, Repository
from gitintegration.services import repository_sync
from gitintegration.tasks import repositories_sync_all
from projects.models import Project
from tests.conftest import assert_error, assert_ok, client_for
from tests.gitintegration.conftest import register

REPOSITORY_FIELDS = {
    "id",
    "project_id",
    "name",
    "clone_url",
    "default_branch",
    "sync_status",
    "sync_error",
    "last_synced_at",
    "created_at",
    "updated_at",
}


def test_registration_syncs_and_answers_the_record(
    api, world, origin, django_capture_on_commit_callbacks, git_storage
):
    response = register(
        api.owner, world.project, origin.url, capture=django_capture_on_commit_callbacks
    )
    data = assert_ok(response, 201)["data"]
    assert response["Location"] == f"/v1/repositories/{data['id']}"
    assert set(data) == REPOSITORY_FIELDS | {"webhook_secret", "push_url"}
    assert data["push_url"].endswith(f"/v1/repositories/{data['id']}/push")
    # The answer was built before the sync ran (after commit): pending then, synced now.
    assert data["sync_status"] == "pending"
    assert data["default_branch"] is None
    record = assert_ok(api.owner.get(f"/v1/repositories/{data['id']}"))["data"]
    assert set(record) == REPOSITORY_FIELDS  # the secret is never shown again
    assert record["sync_status"] == "synced"
    assert record["default_branch"] == "main"
    assert record["last_synced_at"].endswith("Z")
    assert record["sync_error"] is None
    # A real bare mirror of the origin, kept under GIT_STORAGE_DIR.
    mirror = git_storage / f"{data['id']}.git"
    assert gitlib.branches(mirror) == origin.branches()
    events = list(Event.objects.filter(project_id=world.project.pk).values_list("type", flat=True))
    assert events == ["repository.created", "repository.synced"]
    synced = Event.objects.get(type="repository.synced")
    assert synced.data["repository"]["sync_status"] == "synced"
    assert synced.data["new_commits"] == 6
    assert synced.actor_id is None


def test_branches_carry_the_shas_git_reports(api, synced, origin):
    body = assert_ok(api.viewer.get(f"/v1/repositories/{synced.pk}/branches"))
    assert {b["name"]: b["commit_sha"] for b in body["data"]} == origin.branches()
    assert body["data"][0] == {"name": "main", "commit_sha": origin.sha("main"), "is_default": True}
    assert [b["is_default"] for b in body["data"]] == [True, False, False, False]
    assert body["meta"]["total"] == 4
    paged = assert_ok(api.viewer.get(f"/v1/repositories/{synced.pk}/branches?per_page=2&page=2"))
    assert [b["name"] for b in paged["data"]] == ["docs", "feature"]


def test_commits_are_indexed_with_what_git_says(api, synced, origin):
    body = assert_ok(api.viewer.get(f"/v1/repositories/{synced.pk}/commits?per_page=100"))
    everything = set(origin.log("--all"))
    assert {c["sha"] for c in body["data"]} == everything
    assert body["meta"]["total"] == len(everything) == 6
    tip = origin.sha("feature")
    commit = next(c for c in body["data"] if c["sha"] == tip)
    assert commit == {
        "sha": tip,
        "repository_id": synced.pk,
        "author_name": "Ada Author",
        "author_email": "ada@example.test",
        "message": "Add the feature, fixes #1",
        "authored_at": origin.show(tip, "%aI").replace("+00:00", "Z"),
        "committed_at": origin.show(tip, "%cI").replace("+00:00", "Z"),
    }


def test_commits_of_one_branch_in_gits_order(api, synced, origin):
    body = assert_ok(api.viewer.get(f"/v1/repositories/{synced.pk}/commits?branch=feature"))
    assert [c["sha"] for c in body["data"]] == origin.log("feature")
    assert body["meta"]["total"] == 3
    page = assert_ok(
        api.viewer.get(f"/v1/repositories/{synced.pk}/commits?branch=main&per_page=2&page=2")
    )
    assert [c["sha"] for c in page["data"]] == origin.log("main")[2:]
    past = assert_ok(api.viewer.get(f"/v1/repositories/{synced.pk}/commits?branch=main&page=9"))
    assert past["data"] == [] and past["meta"]["total"] == 3
    error = assert_error(
        api.viewer.get(f"/v1/repositories/{synced.pk}/commits?branch=nope"), 422, "VALIDATION_ERROR"
    )
    assert "branch" in error["details"]


def test_sync_indexes_only_what_is_new(api, synced, origin, django_capture_on_commit_callbacks):
    first_ids = dict(Commit.objects.filter(repository=synced).values_list("sha", "id"))
    new_main = origin.commit("main", {"more.txt": "more\n"}, "More on main")
    new_branch = origin.commit("hotfix", {"fix.txt": "fix\n"}, "Hotfix", start="feature")
    with django_capture_on_commit_callbacks(execute=True):
        assert api.developer.post(f"/v1/repositories/{synced.pk}/sync").status_code == 202
    rows = dict(Commit.objects.filter(repository=synced).values_list("sha", "id"))
    assert set(rows) == set(origin.log("--all"))
    # The rows of the first sync were left alone; exactly two were added.
    assert {sha: rows[sha] for sha in first_ids} == first_ids
    assert set(rows) - set(first_ids) == {new_main, new_branch}
    event = Event.objects.filter(type="repository.synced").last()
    assert event.data["new_commits"] == 2
    assert event.data["branches"] == 5
    branches = dict(Branch.objects.filter(repository=synced).values_list("name", "commit_sha"))
    assert branches == origin.branches()


def test_incremental_sync_asks_git_only_for_new_commits(synced, origin, monkeypatch):
    seen = {}
    real = gitlib.commits_between

    def spy(path, *, tips, known):
        result = real(path, tips=tips, known=known)
        seen["known"], seen["found"] = set(known), [c.sha for c in result]
        return result

    monkeypatch.setattr(gitlib, "commits_between", spy)
    before = origin.branches()
    new = origin.commit("docs", {"docs.txt": "more docs\n"}, "More docs")
    repository_sync(repository_id=synced.pk)
    assert seen["known"] == set(before.values())
    assert seen["found"] == [new]


def test_a_sync_that_finds_nothing_records_nothing(synced):
    count = Event.objects.count()
    repository_sync(repository_id=synced.pk)
    assert Event.objects.count() == count
    synced.refresh_from_db()
    assert synced.sync_status == "synced"


def test_deleted_branches_disappear(api, synced, origin):
    from tests.gitorigin import git

    git("branch", "-D", "docs", cwd=origin.path)
    repository_sync(repository_id=synced.pk)
    names = [
        b["name"] for b in api.owner.get(f"/v1/repositories/{synced.pk}/branches").json()["data"]
    ]
    assert names == ["main", "conflict", "feature"]


def test_default_branch_follows_the_origin(synced, origin):
    from tests.gitorigin import git

    git("symbolic-ref", "HEAD", "refs/heads/docs", cwd=origin.path)
    repository_sync(repository_id=synced.pk)
    synced.refresh_from_db()
    assert synced.default_branch == "docs"
    assert Branch.objects.get(repository=synced, is_default=True).name == "docs"


def test_a_failed_sync_keeps_the_error(api, world, tmp_path, django_capture_on_commit_callbacks):
    missing = (tmp_path / "nowhere.git").as_uri()
    response = register(
        api.owner, world.project, missing, capture=django_capture_on_commit_callbacks
    )
    data = assert_ok(response, 201)["data"]
    record = assert_ok(api.owner.get(f"/v1/repositories/{data['id']}"))["data"]
    assert record["sync_status"] == "failed"
    assert "does not appear to be a git repository" in record["sync_error"]
    assert record["last_synced_at"] is None
    assert not Event.objects.filter(type="repository.synced").exists()


def test_a_repaired_origin_syncs_again(api, world, tmp_path, django_capture_on_commit_callbacks):
    from tests.gitorigin import Origin

    target = tmp_path / "later"
    target.mkdir()
    url = (target / "origin.git").as_uri()
    data = assert_ok(
        register(api.owner, world.project, url, capture=django_capture_on_commit_callbacks), 201
    )["data"]
    assert Repository.objects.get(pk=data["id"]).sync_status == "failed"
    made = Origin(target)
    made.commit("main", {"a": "a\n"}, "First")
    repository_sync(repository_id=data["id"])
    repository = Repository.objects.get(pk=data["id"])
    assert (repository.sync_status, repository.sync_error) == ("synced", "")


def test_beat_syncs_every_active_project(api, world, synced, origin):
    archived = Project.objects.create(
        workspace=world.acme, name="Old", status=Project.Status.ARCHIVED
    )
    Repository.objects.create(project=archived, name="old", clone_url=origin.url)
    new = origin.commit("main", {"beat.txt": "x\n"}, "From beat")
    assert repositories_sync_all() == 1
    assert Commit.objects.filter(repository=synced, sha=new).exists()


# Validation and guards ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": "x"}, "clone_url"),
        ({"name": "", "clone_url": "/tmp/x"}, "name"),
        ({"name": "has space", "clone_url": "/tmp/x"}, "name"),
        ({"name": "x", "clone_url": ""}, "clone_url"),
        ({"name": "x", "clone_url": 7}, "clone_url"),
        ({"name": "x", "clone_url": "ext::sh -c touch% /tmp/pwned"}, "clone_url"),
        ({"name": "x", "clone_url": "http://example.com/r.git"}, "clone_url"),
        ({"name": "x", "clone_url": "ftp://example.com/r.git"}, "clone_url"),
        ({"name": "x", "clone_url": "--upload-pack=touch /tmp/pwned"}, "clone_url"),
        ({"name": "x", "clone_url": "relative/path"}, "clone_url"),
        ({"name": "x", "clone_url": "./r.git"}, "clone_url"),
        ({"name": "x", "clone_url": "~/r.git"}, "clone_url"),
        ({"name": "x", "clone_url": "https:///no-host"}, "clone_url"),
    ],
)
def test_bad_registrations_are_422(api, world, body, field):
    response = api.owner.post(f"/v1/projects/{world.project.pk}/repositories", body, format="json")
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert field in error["details"]
    assert not Repository.objects.exists()


def test_names_are_unique_per_project(api, world, origin):
    assert_ok(register(api.owner, world.project, origin.url), 201)
    error = assert_error(register(api.owner, world.project, origin.url), 422, "VALIDATION_ERROR")
    assert error["details"] == {"name": ["This project has a repository of this name already."]}


@pytest.mark.parametrize("url", ["file:///srv/git/r.git", "/srv/git/r.git", "~/r.git"])
def test_local_paths_need_the_setting(api, world, settings, url):
    settings.GIT_ALLOW_LOCAL_REPOSITORIES = False
    error = assert_error(register(api.owner, world.project, url), 422, "VALIDATION_ERROR")
    assert "GIT_ALLOW_LOCAL_REPOSITORIES" in error["details"]["clone_url"][0]


def test_local_repositories_stop_syncing_when_the_setting_goes_off(synced, settings):
    """Registered while allowed; the guard runs again on every sync."""
    settings.GIT_ALLOW_LOCAL_REPOSITORIES = False
    repository_sync(repository_id=synced.pk)
    synced.refresh_from_db()
    assert synced.sync_status == "failed"
    assert "GIT_ALLOW_LOCAL_REPOSITORIES" in synced.sync_error


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/r.git",
        "ssh://git@10.1.2.3/r.git",
        "git://192.168.0.4/r.git",
        "git@169.254.169.254:r.git",
        "https://[::1]/r.git",
    ],
)
def test_private_addresses_are_refused(api, world, settings, url):
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = False
    error = assert_error(register(api.owner, world.project, url), 422, "VALIDATION_ERROR")
    assert "private" in error["details"]["clone_url"][0]


@pytest.mark.parametrize(
    "url", ["https://192.0.2.1/r.git", "git@203.0.113.5:team/r.git", "ssh://git@[2001:db8::1]/r"]
)
def test_network_urls_are_accepted(api, world, url):
    # Documentation addresses: accepted (private networks allowed in tests), never fetched.
    data = assert_ok(register(api.owner, world.project, url), 201)["data"]
    assert data["clone_url"] == url


def test_passwords_in_urls_are_not_shown(api, world):
    url = "https://bot:s3cret-token@192.0.2.1/r.git"
    data = assert_ok(register(api.owner, world.project, url), 201)["data"]
    assert data["clone_url"] == "https://bot:***@192.0.2.1/r.git"
    assert Repository.objects.get().clone_url == url


# Permissions -------------------------------------------------------------------------------


def test_only_owners_and_admins_register(api, world, origin):
    for client in (api.developer, api.viewer):
        error = assert_error(register(client, world.project, origin.url), 403, "FORBIDDEN")
        assert error["details"]["required_ability"] == "manage"
    world.project.members.create(user=world.admin)
    assert_ok(register(api.admin, world.project, origin.url), 201)


def test_registering_needs_the_admin_scope(world, origin):
    client = client_for(world.owner, scopes=["projects:write"])
    error = assert_error(register(client, world.project, origin.url), 403, "FORBIDDEN")
    assert error["details"]["required_scope"] == "projects:admin"


def test_reading_needs_projects_read(world, synced):
    client = client_for(world.owner, scopes=["issues:read"])
    for path in ("", "/branches", "/commits"):
        error = assert_error(client.get(f"/v1/repositories/{synced.pk}{path}"), 403, "FORBIDDEN")
        assert error["details"]["required_scope"] == "projects:read"


def test_syncing_needs_write(api, world, synced):
    assert_error(api.viewer.post(f"/v1/repositories/{synced.pk}/sync"), 403, "FORBIDDEN")
    client = client_for(world.owner, scopes=["projects:read"])
    assert_error(client.post(f"/v1/repositories/{synced.pk}/sync"), 403, "FORBIDDEN")


def test_outsider_gets_404_everywhere(api, world, synced):
    paths = [
        ("get", f"/v1/projects/{world.project.pk}/repositories"),
        ("post", f"/v1/projects/{world.project.pk}/repositories"),
        ("get", f"/v1/repositories/{synced.pk}"),
        ("delete", f"/v1/repositories/{synced.pk}"),
        ("post", f"/v1/repositories/{synced.pk}/sync"),
        ("get", f"/v1/repositories/{synced.pk}/branches"),
        ("get", f"/v1/repositories/{synced.pk}/commits"),
        ("get", f"/v1/repositories/{synced.pk}/pulls"),
        ("post", f"/v1/repositories/{synced.pk}/pulls"),
    ]
    for method, path in paths:
        body = {"name": "x", "clone_url": "/tmp/x"} if method == "post" else None
        response = getattr(api.outsider, method)(path, body, format="json")
        assert_error(response, 404, "NOT_FOUND")


def test_anonymous_gets_401(api, synced):
    response = api.anonymous.get(f"/v1/repositories/{synced.pk}")
    assert_error(response, 401, "UNAUTHORIZED")


def test_archived_project_refuses_writes(api, world, synced, origin):
    world.project.status = Project.Status.ARCHIVED
    world.project.save()
    assert_error(register(api.owner, world.project, origin.url, name="two"), 409, "CONFLICT")
    assert_error(api.owner.post(f"/v1/repositories/{synced.pk}/sync"), 409, "CONFLICT")
    assert_error(api.owner.delete(f"/v1/repositories/{synced.pk}"), 409, "CONFLICT")
    assert_ok(api.owner.get(f"/v1/repositories/{synced.pk}/branches"))


def test_list_and_delete(api, world, synced, git_storage, django_capture_on_commit_callbacks):
    body = assert_ok(api.viewer.get(f"/v1/projects/{world.project.pk}/repositories"))
    assert [r["id"] for r in body["data"]] == [synced.pk]
    assert set(body["data"][0]) == REPOSITORY_FIELDS
    assert_error(api.developer.delete(f"/v1/repositories/{synced.pk}"), 403, "FORBIDDEN")
    with django_capture_on_commit_callbacks(execute=True):
        assert assert_ok(api.owner.delete(f"/v1/repositories/{synced.pk}")) == {
            "success": True,
            "data": None,
        }
    assert not Repository.objects.exists()
    assert not Commit.objects.exists()
    assert not (git_storage / f"{synced.pk}.git").exists()
    assert Event.objects.filter(type="repository.deleted").count() == 1
    assert_error(api.owner.get(f"/v1/repositories/{synced.pk}"), 404, "NOT_FOUND")


# Push notifications ------------------------------------------------------------------------


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def push(client, repository, body: bytes, signature: str | None):
    headers = {"HTTP_X_HUB_SIGNATURE_256": signature} if signature is not None else {}
    return client.generic(
        "POST",
        f"/v1/repositories/{repository.pk}/push",
        body,
        content_type="application/json",
        **headers,
    )


def test_a_signed_push_notification_syncs(api, synced, origin, django_capture_on_commit_callbacks):
    new = origin.commit("main", {"pushed.txt": "x\n"}, "Pushed")
    body = json.dumps({"ref": "refs/heads/main", "after": new}).encode()
    with django_capture_on_commit_callbacks(execute=True):
        response = push(api.anonymous, synced, body, sign(synced.webhook_secret, body))
    assert assert_ok(response, 202)["data"] == {"queued": True}
    assert Commit.objects.filter(repository=synced, sha=new).exists()
    assert Branch.objects.get(repository=synced, name="main").commit_sha == new


def test_an_empty_object_from_a_hook_is_enough(api, synced):
    body = b"{}"
    assert push(api.anonymous, synced, body, sign(synced.webhook_secret, body)).status_code == 202


@pytest.mark.parametrize("signature", [None, "", "sha256=00", "sha1=abc", "sha256=" + "0" * 64])
def test_unsigned_or_badly_signed_pushes_are_401(api, synced, signature):
    assert_error(push(api.anonymous, synced, b"{}", signature), 401, "UNAUTHORIZED")


def test_a_signature_of_another_body_is_401(api, synced):
    signature = sign(synced.webhook_secret, b'{"a": 1}')
    assert_error(push(api.anonymous, synced, b'{"a": 2}', signature), 401, "UNAUTHORIZED")


def test_a_signature_with_another_secret_is_401(api, synced):
    assert_error(push(api.anonymous, synced, b"{}", sign("guess", b"{}")), 401, "UNAUTHORIZED")


def test_an_unknown_repository_answers_like_a_bad_signature(api):
    class Gone:
        pk = 987654
        webhook_secret = "x"

    assert_error(push(api.anonymous, Gone, b"{}", sign("x", b"{}")), 401, "UNAUTHORIZED")


def test_signed_malformed_json_is_400(api, synced):
    body = b'{"ref": '
    response = push(api.anonymous, synced, body, sign(synced.webhook_secret, body))
    assert_error(response, 400, "BAD_REQUEST")


def test_a_push_to_an_archived_project_is_409(api, world, synced):
    world.project.status = Project.Status.ARCHIVED
    world.project.save()
    response = push(api.anonymous, synced, b"{}", sign(synced.webhook_secret, b"{}"))
    assert_error(response, 409, "CONFLICT")


def test_a_lost_mirror_is_fetched_again_from_the_origin(api, synced, git_storage, origin):
    """A node's mirror is a cache: one that is missing (a new node, a wiped disk) is rebuilt
    from the origin by the request that needs it."""
    import shutil

    shutil.rmtree(git_storage / f"{synced.pk}.git")
    path = f"/v1/repositories/{synced.pk}/commits?branch=main"
    assert [c["sha"] for c in assert_ok(api.viewer.get(path))["data"]] == origin.log("main")
    shutil.rmtree(git_storage / f"{synced.pk}.git")
    body = {"title": "x", "head": "feature", "base": "main"}
    response = api.owner.post(f"/v1/repositories/{synced.pk}/pulls", body, format="json")
    assert assert_ok(response, 201)["data"]["head_sha"] == origin.sha("feature")


def test_a_lost_mirror_of_an_unreachable_origin_is_409(api, synced, git_storage, origin):
    import shutil

    shutil.rmtree(git_storage / f"{synced.pk}.git")
    origin.path.rename(origin.path.with_name("moved.git"))
    path = f"/v1/repositories/{synced.pk}/commits?branch=main"
    error = assert_error(api.viewer.get(path), 409, "CONFLICT")
    assert error["details"] == {"sync_required": True}
    body = {"title": "x", "head": "feature", "base": "main"}
    response = api.owner.post(f"/v1/repositories/{synced.pk}/pulls", body, format="json")
    assert_error(response, 409, "CONFLICT")
    assert not synced.pull_requests.exists()
    origin.path.with_name("moved.git").rename(origin.path)
    assert [c["sha"] for c in assert_ok(api.viewer.get(path))["data"]] == origin.log("main")


def test_a_token_in_the_url_never_reaches_the_error(api, world, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS = True
    url = "https://bot:s3cret-token@127.0.0.1:9/r.git"  # nothing listens on port 9
    repository = Repository.objects.create(project=world.project, name="r", clone_url=url)
    repository_sync(repository_id=repository.pk)
    repository.refresh_from_db()
    assert repository.sync_status == "failed"
    assert repository.sync_error
    assert "s3cret-token" not in repository.sync_error
    record = assert_ok(api.owner.get(f"/v1/repositories/{repository.pk}"))["data"]
    assert "s3cret-token" not in str(record)


def test_beat_removes_the_mirrors_of_deleted_projects(api, world, synced, git_storage):
    other = Project.objects.create(workspace=world.acme, name="Gone")
    doomed = Repository.objects.create(project=other, name="d", clone_url=synced.clone_url)
    repository_sync(repository_id=doomed.pk)
    assert (git_storage / f"{doomed.pk}.git").exists()
    other.delete()
    repositories_sync_all()
    assert not (git_storage / f"{doomed.pk}.git").exists()
    assert (git_storage / f"{synced.pk}.git").exists()


# Syncs left undone by a killed worker ---------------------------------------------------------


def test_a_sync_nobody_works_on_is_queued_again_once_and_one_in_progress_is_not(
    api, world, origin, settings
):
    """A repository left ``syncing`` past GIT_SYNC_STUCK_SECONDS (its worker was killed) is
    synced by the sweep; one whose sync started just now is left alone; a second sweep
    right after takes nothing (the first took its lease)."""
    from datetime import timedelta

    from django.utils import timezone

    from gitintegration.services import repositories_sync_stuck

    settings.GIT_SYNC_STUCK_SECONDS = 60
    lost = Repository.objects.get(
        pk=assert_ok(register(api.owner, world.project, origin.url), 201)["data"]["id"]
    )
    running = Repository.objects.get(
        pk=assert_ok(register(api.owner, world.project, origin.url, name="other"), 201)["data"][
            "id"
        ]
    )
    long_ago = timezone.now() - timedelta(seconds=61)
    Repository.objects.filter(pk=lost.pk).update(sync_status="syncing", updated_at=long_ago)
    Repository.objects.filter(pk=running.pk).update(
        sync_status="syncing", updated_at=timezone.now()
    )

    assert repositories_sync_stuck() == [lost.pk]  # queued, and run here (eagerly)
    lost.refresh_from_db()
    assert lost.sync_status == Repository.SyncStatus.SYNCED
    assert Branch.objects.filter(repository=lost).count() == len(origin.branches())
    assert Repository.objects.get(pk=running.pk).sync_status == "syncing"
    assert not Branch.objects.filter(repository=running).exists()

    Repository.objects.filter(pk=lost.pk).update(sync_status="pending", updated_at=long_ago)
    with pytest.MonkeyPatch.context() as patch:
        queued: list[int] = []
        from gitintegration import tasks

        patch.setattr(tasks.repository_sync_task, "delay", lambda **kw: queued.append(kw))
        assert repositories_sync_stuck() == [lost.pk]
        assert repositories_sync_stuck() == [], "the first sweep holds it for another period"
    assert queued == [{"repository_id": lost.pk}]
    assert Repository.objects.get(pk=lost.pk).updated_at > long_ago
