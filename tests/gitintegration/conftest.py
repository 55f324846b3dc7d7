"""The service's mirrors of the tests' git repositories (the origins: tests/gitorigin.py)."""

import pytest
from django.conf import settings

from tests.conftest import assert_ok


@pytest.fixture(autouse=True)
def git_storage(tmp_path, settings):
    settings.GIT_STORAGE_DIR = tmp_path / "mirrors"
    return settings.GIT_STORAGE_DIR


def register(client, project, url, name="rocket", capture=None):
    """POST a repository; with ``capture`` (django_capture_on_commit_callbacks) the queued
    sync runs at commit as the worker would run it."""
    body = {"name": name, "clone_url": url}
    if capture is None:
        return client.post(f"/v1/projects/{project.pk}/repositories", body, format="json")
    with capture(execute=True):
        response = client.post(f"/v1/projects/{project.pk}/repositories", body, format="json")
    return response


@pytest.fixture
def synced(api, world, origin, django_capture_on_commit_callbacks):
    """The origin registered in the world's project, and synced."""
    response = register(
        api.owner, world.project, origin.url, capture=django_capture_on_commit_callbacks
    )
    data = assert_ok(response, 201)["data"]
    assert settings.GIT_STORAGE_DIR
    from gitintegration.models import Repository

    return Repository.objects.get(pk=data["id"])
