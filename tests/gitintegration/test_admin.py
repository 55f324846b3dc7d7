"""Repositories and pull requests in the admin: the pages render, writes go through the git
services (the same events as the API), "Sync now" syncs, the last error shows."""

from events.models import Event
from gitintegration.models import PullRequest, Repository
from gitintegration.services import pull_request_create
from tests.test_admin import form_data, url


def test_register_in_the_admin(browser, root, world, origin, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = browser.post(
            url(Repository, "add"),
            {"project": world.project.pk, "name": "rocket", "clone_url": origin.url},
        )
    assert response.status_code == 302, response.content
    repository = Repository.objects.get()
    assert repository.created_by == root
    assert repository.sync_status == "synced"
    assert list(Event.objects.values_list("type", flat=True)) == [
        "repository.created",
        "repository.synced",
    ]
    page = browser.get(url(Repository, "change", repository.pk))
    assert page.status_code == 200
    assert origin.sha("feature").encode() in page.content


def test_the_url_guard_runs_in_the_form(browser, world, settings):
    settings.GIT_ALLOW_LOCAL_REPOSITORIES = False
    response = browser.post(
        url(Repository, "add"),
        {"project": world.project.pk, "name": "rocket", "clone_url": "/srv/r.git"},
    )
    assert response.status_code == 200
    assert "GIT_ALLOW_LOCAL_REPOSITORIES" in response.content.decode()
    assert not Repository.objects.exists()


def test_sync_now_and_the_last_error(
    browser, world, synced, origin, tmp_path, django_capture_on_commit_callbacks
):
    new = origin.commit("main", {"x.txt": "x\n"}, "New")
    broken = Repository.objects.create(
        project=world.project, name="broken", clone_url=(tmp_path / "gone.git").as_uri()
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = browser.post(
            url(Repository, "changelist"),
            {"action": "sync_now", "_selected_action": [synced.pk, broken.pk]},
        )
    assert response.status_code == 302
    assert synced.commits.filter(sha=new).exists()
    broken.refresh_from_db()
    assert broken.sync_status == "failed"
    page = browser.get(url(Repository, "change", broken.pk)).content.decode()
    assert "does not appear to be a git repository" in page


def test_delete_in_the_admin(browser, synced):
    response = browser.post(url(Repository, "delete", synced.pk), {"post": "yes"})
    assert response.status_code == 302
    assert not Repository.objects.exists()
    assert Event.objects.filter(type="repository.deleted").count() == 1


def test_close_a_pull_request_in_the_admin(browser, world, synced):
    pull = pull_request_create(
        repository=synced,
        actor=world.developer,
        title="F",
        head="feature",
        base="main",
    )
    page = browser.get(url(PullRequest, "change", pull.pk))
    assert page.status_code == 200
    data = form_data(page)
    data.update({"state": "closed", "title": "Feature"})
    response = browser.post(url(PullRequest, "change", pull.pk), data)
    assert response.status_code == 302, response.content
    pull.refresh_from_db()
    assert (pull.state, pull.title) == ("closed", "Feature")
    assert pull.closed_at is not None
    event = Event.objects.get(type="pull_request.closed")
    assert event.changes["title"] == {"previous": "F", "current": "Feature"}
    data["state"] = "merged"
    response = browser.post(url(PullRequest, "change", pull.pk), data)
    assert response.status_code == 200
    assert "stay merged" in response.content.decode()
