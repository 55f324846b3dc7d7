"""What an open stream may see follows its caller's access at once: a project created, joined
or made visible after the stream opened shows its events from then on, and one taken away
stops showing them (no waiting for a periodic refresh).

Over the ASGI server that production runs, with writes through the HTTP API of that server;
and the WSGI fallback through the test client.
"""

import httpx
import pytest

from accounts.models import Membership, Role
from accounts.services import membership_add, membership_update
from collab.api.scopes import ALL_SCOPES
from notifications.selectors import visible_scopes
from projects.models import Project
from projects.selectors import project_visibility_q, visible_project_ids
from tests.factories import ProjectFactory, UserFactory, make_api_key, make_issue
from tests.notifications.sse_reader import STREAM, Reader

live_test = pytest.mark.django_db(transaction=True)


def api_call(port: int, key: str, method: str, path: str, body: dict | None = None) -> dict:
    response = httpx.request(
        method,
        f"http://127.0.0.1:{port}{path}",
        json=body,
        headers={"Authorization": f"Bearer {key}"},
        timeout=15,
    )
    assert response.status_code < 300, response.text
    return response.json()["data"] if response.content else {}


def issue_ids(frames) -> list[int]:
    return [f.json()["data"]["issue"]["id"] for f in frames if f.event == "issue.created"]


@pytest.mark.slow
@live_test
def test_a_project_created_after_the_stream_opened_is_seen_at_once(world, live):
    key = make_api_key(world.developer, ALL_SCOPES)
    reader = Reader(live, key)
    project = api_call(
        live,
        key,
        "POST",
        "/v1/projects",
        {"name": "Born later", "visibility": "private", "workspace_id": world.acme.pk},
    )
    issue = api_call(live, key, "POST", f"/v1/projects/{project['id']}/issues", {"title": "Hi"})
    frames = reader.take(2)
    assert [f.event for f in frames] == ["project.created", "issue.created"]
    assert issue_ids(frames) == [issue["id"]]
    reader.close()


@pytest.mark.slow
@live_test
def test_joining_and_leaving_a_private_projects_team(world, live):
    secret = ProjectFactory(workspace=world.acme, name="Skunkworks", visibility="private")
    owner_key = make_api_key(world.owner, ALL_SCOPES)
    reader = Reader(live, make_api_key(world.developer, ALL_SCOPES), query="types=issue.*")
    hidden = make_issue(secret, world.owner, title="Before joining")
    members = f"/v1/projects/{secret.pk}/members"
    api_call(live, owner_key, "POST", members, {"user_id": world.developer.pk})
    seen = make_issue(secret, world.owner, title="After joining")
    assert issue_ids(reader.take(1)) == [seen.pk]
    assert hidden.pk != seen.pk

    api_call(live, owner_key, "DELETE", f"{members}/{world.developer.pk}")
    make_issue(secret, world.owner, title="After leaving")
    control = make_issue(world.project, world.owner, title="Still ours")
    # The next frame is the issue of the project still on the team, not the one left.
    assert issue_ids(reader.take(1)) == [control.pk]
    reader.close()


@pytest.mark.slow
@live_test
def test_a_projects_visibility_opening_and_closing(world, live):
    secret = ProjectFactory(workspace=world.acme, name="Skunkworks", visibility="private")
    reader = Reader(live, make_api_key(world.developer, ALL_SCOPES), query="types=issue.created")
    owner_key = make_api_key(world.owner, ALL_SCOPES)
    api_call(live, owner_key, "PATCH", f"/v1/projects/{secret.pk}", {"visibility": "internal"})
    opened = make_issue(secret, world.owner, title="Internal now")
    assert issue_ids(reader.take(1)) == [opened.pk]
    api_call(live, owner_key, "PATCH", f"/v1/projects/{secret.pk}", {"visibility": "private"})
    make_issue(secret, world.owner, title="Private again")
    control = make_issue(world.project, world.owner, title="Control")
    assert issue_ids(reader.take(1)) == [control.pk]
    reader.close()


@pytest.mark.slow
@live_test
def test_a_public_project_reaches_every_workspace(world, live):
    reader = Reader(live, make_api_key(world.outsider, ALL_SCOPES), query="types=issue.created")
    owner_key = make_api_key(world.owner, ALL_SCOPES)
    api_call(live, owner_key, "PATCH", f"/v1/projects/{world.project.pk}", {"visibility": "public"})
    shown = make_issue(world.project, world.owner, title="For everyone")
    assert issue_ids(reader.take(1)) == [shown.pk]
    reader.close()


@pytest.mark.slow
@live_test
def test_joining_a_workspace_and_a_change_of_role(world, live):
    newcomer = UserFactory(email="late@acme.test")
    internal = ProjectFactory(workspace=world.acme, name="Town hall", visibility="internal")
    secret = ProjectFactory(workspace=world.acme, name="Vault", visibility="private")
    reader = Reader(live, make_api_key(newcomer, ALL_SCOPES), query="types=issue.created")
    membership_add(workspace=world.acme, user=newcomer, role=Role.DEVELOPER, actor=world.owner)
    town = make_issue(internal, world.owner, title="Welcome")
    make_issue(secret, world.owner, title="Not for developers")
    control = make_issue(internal, world.owner, title="Still for everyone")
    assert issue_ids(reader.take(2)) == [town.pk, control.pk]

    membership = Membership.objects.get(workspace=world.acme, user=newcomer)
    membership_update(membership=membership, role=Role.ADMIN, actor=world.owner)
    vault = make_issue(secret, world.owner, title="For admins")
    assert issue_ids(reader.take(1)) == [vault.pk]
    reader.close()


def test_the_wsgi_stream_follows_access_too(api, world, settings):
    settings.EVENT_STREAM_POLL_SECONDS = 0.05
    settings.EVENT_STREAM_HEARTBEAT_SECONDS = 30
    secret = ProjectFactory(workspace=world.acme, name="Skunkworks", visibility="private")
    response = api.developer.get(f"{STREAM}?types=issue.created")
    frames = iter(response.streaming_content)
    assert next(frames) == b": connected\n\n"
    added = api.owner.post(
        f"/v1/projects/{secret.pk}/members", {"user_id": world.developer.pk}, format="json"
    )
    assert added.status_code == 201, added.content
    issue = make_issue(secret, world.owner, title="Seen through WSGI")
    frame = next(frames)
    assert b"event: issue.created" in frame and b'"id":%d' % issue.pk in frame
    response.close()


def test_visible_project_ids_is_the_visibility_rule_for_many_at_once(world):
    for visibility in ("public", "internal", "private"):
        ProjectFactory(workspace=world.acme, name=f"Acme {visibility}", visibility=visibility)
        ProjectFactory(workspace=world.globex, name=f"Globex {visibility}", visibility=visibility)
    people = [world.owner, world.admin, world.developer, world.viewer, world.outsider]
    loner = UserFactory(email="nobody@example.test")
    people.append(loner)
    many = visible_project_ids(user_ids=[person.pk for person in people])
    for person in people:
        expected = set(
            Project.objects.filter(project_visibility_q(person)).values_list("pk", flat=True)
        )
        assert many[person.pk] == expected, person.email
    scopes = visible_scopes(user_ids=[world.outsider.pk, loner.pk])
    assert scopes[world.outsider.pk][1] == {world.globex.pk}
    assert scopes[loner.pk][1] == set()


@pytest.mark.slow
@live_test
def test_a_comment_reaches_an_open_stream(world, live):
    issue = make_issue(world.project, world.owner, title="Streamed")
    key = make_api_key(world.developer, ALL_SCOPES)
    reader = Reader(live, key)
    comment = api_call(live, key, "POST", f"/v1/issues/{issue.pk}/comments", {"body": "Hi @owner"})
    [frame] = reader.take(1)
    assert frame.event == "comment.created"
    assert frame.json()["data"]["comment"]["id"] == comment["id"]
    reader.close()
