"""The swept world: one of every record a route's path can name, for the sweeps over every
route (test_methods.py, test_hostile_input.py, test_cursor_sweep.py), per test or once for a
module; and what the cursor tests share."""

import copy

import pytest
from django.test import override_settings

from accounts.services import invitation_create
from comments.services import comment_create
from events.services import event_record
from integrations.oauth import app_authorization_grant, oauth_app_create
from integrations.services import service_account_create, service_account_key_issue
from notifications.models import Delivery
from tests.conftest import exports_settings
from tests.factories import (
    PullRequestFactory,
    RepositoryFactory,
    WebhookFactory,
    completed_export,
    make_api_key,
    make_issue,
)
from tests.gitorigin import Origin
from tests.openapi import inlined


@pytest.fixture(scope="module")
def five_commits(tmp_path_factory) -> Origin:
    """An origin whose main branch has five commits, built once for the module; each test
    takes a copy of it (one may push to it)."""
    origin = Origin(tmp_path_factory.mktemp("five-commits"))
    for n in range(5):
        origin.commit("main", {"n.txt": f"{n}\n"}, f"Commit {n}")
    return origin


@pytest.fixture
def document(api) -> dict:
    """The schema, as the owner reads it, its references inlined."""
    response = api.owner.get("/v1/schema?format=json")
    assert response.status_code == 200
    return inlined(response.json())


@pytest.fixture
def swept(world, exports_storage):
    """The world, with one of every record a route's path can name."""
    return world, swept_build(world)


@pytest.fixture(scope="module")
def swept_once(world_once, module_db, tmp_path_factory):
    """``swept``, built once for a module (tests/conftest.py's ``module_db``), for modules whose
    tests only read it (an archive a test deleted would be gone for the next one). The exports
    storage is the module's own while its tests run."""
    with override_settings(**exports_settings(tmp_path_factory.mktemp("exports"))):
        with module_db.unblock():
            known = swept_build(world_once)
        yield world_once, known


@pytest.fixture
def swept_of_module(swept_once, db):
    """``swept_once`` as a test's own: the rows are the module's, the world's instances a
    copy. A module that only reads the swept records overrides ``swept`` with it."""
    world, known = swept_once
    return copy.deepcopy(world), known


def swept_build(world) -> dict[str, int]:
    """One of every record a route's path can name, in the world: their ids."""
    issue = make_issue(world.project, actor=world.owner, title="Swept issue", labels=["bug"])
    label = issue.labels.get()
    webhook = WebhookFactory(project=world.project, created_by=world.owner)
    event = event_record(
        type="webhook.ping",
        workspace_id=world.acme.pk,
        project_id=world.project.pk,
        data={"webhook": {"id": webhook.pk}},
    )
    delivery = Delivery.objects.create(webhook=webhook, event=event)
    repository = RepositoryFactory(project=world.project)
    pull = PullRequestFactory(repository=repository, author=world.developer)
    comment = comment_create(parent=issue, actor=world.owner, body="A swept comment")
    invitation, _ = invitation_create(
        workspace=world.acme,
        inviter=world.owner,
        email="pending@example.test",
        role="viewer",
        projects=[],
    )
    key_id = world.owner.api_keys.order_by("pk").values_list("pk", flat=True).first()
    if key_id is None:
        make_api_key(world.owner, ["users:read"], name="listed")
        key_id = world.owner.api_keys.get().pk
    export = completed_export(world.acme, world.owner)
    robot = service_account_create(
        workspace=world.acme, actor=world.owner, name="Swept bot", projects=[world.project.pk]
    )
    robot_key, _plaintext = service_account_key_issue(
        account=robot, name="swept", scopes=["issues:read"]
    )
    app, _secret = oauth_app_create(
        workspace=world.acme,
        actor=world.owner,
        name="Swept app",
        client_type="confidential",
        redirect_uris=["https://app.example.test/callback"],
        scopes=["issues:read"],
    )
    authorization = app_authorization_grant(
        user=world.owner, app=app, scopes=["issues:read"], projects=[world.project.pk]
    )
    ids = {
        "oauth-app": app.pk,
        "authorization": authorization.pk,
        "export": export.pk,
        "project": world.project.pk,
        "admin": world.admin.pk,
        "issue": issue.pk,
        "label": label.pk,
        "webhook": webhook.pk,
        "delivery": delivery.pk,
        "repository": repository.pk,
        "pull": pull.pk,
        "comment": comment["id"],
        "workspace": world.acme.pk,
        "invitation": invitation.pk,
        "user": world.developer.pk,
        "api-key": key_id,
        "service-account": robot.pk,
        "service-account-key": robot_key.pk,
    }
    return ids
