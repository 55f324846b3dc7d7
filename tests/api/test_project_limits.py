"""API keys limited to projects (``projects`` on a key, a person's or a service account's):
everything outside those projects is 404, as another workspace's data is, on every route and
every method; what no limited key may do at all (create projects or workspaces, manage
members, invitations and service accounts, the workspace's own webhooks and exports) is 403;
and what lists, searches, counts and streams show holds nothing of another project."""

import pytest
from django.core.management import call_command

from accounts.models import ApiKey
from events.services import event_record
from integrations.services import service_account_create
from notifications import stream
from tests.api.test_methods import (
    ENDLESS,
    METHODS,
    ROUTES,
    _body,
    _changed,
    _fingerprint,
    _path,
    _request,
)
from tests.conftest import assert_error, assert_ok, client_for, jwt_client
from tests.factories import (
    MembershipFactory,
    ProjectFactory,
    WorkspaceFactory,
    make_issue,
)
from tests.urlconf import needs_jwt

# Routes whose path names a record of a project (the swept world's project): outside the
# key's projects, every method is a 404 (or a 405 for a method the route does not have).
PROJECT_RECORDS = {
    name
    for name, _regex in ROUTES
    if name.split("-")[0] in {"comment", "label", "pull", "repository", "webhook", "repo"}
    or name.startswith(("issue-comment", "issue-detail", "issue-history"))
    or (name.startswith("project-") and name not in {"project-list"})
}
# Pushes are signed by the repository's own secret, not a Bearer credential.
PROJECT_RECORDS.discard("repo-push-list")
# What a key limited to projects may not do at all (its workspace's own records): 403.
REFUSED = {
    ("workspace-invitations", "GET"),
    ("workspace-invitations", "POST"),
    ("workspace-invitation-revoke", "DELETE"),
    ("workspace-member-detail", "PATCH"),
    ("workspace-member-detail", "DELETE"),
    ("workspace-webhook-list", "GET"),
    ("workspace-webhook-list", "POST"),
    ("workspace-exports", "GET"),
    ("workspace-exports", "POST"),
    ("workspace-export-detail", "GET"),
    ("workspace-export-download", "GET"),
    ("workspace-list", "POST"),
    ("project-list", "POST"),
    ("workspace-service-account-list", "GET"),
    ("workspace-service-account-list", "POST"),
    ("service-account-detail", "GET"),
    ("service-account-detail", "PATCH"),
    ("service-account-detail", "DELETE"),
}


# The key's owner's own account, which is no project's: written as with any key.
OWN_ACCOUNT = {"user-me"}


@pytest.fixture
def swept(swept_of_module):
    """The swept records, made once for the module: its tests write nothing that lasts."""
    return swept_of_module


@pytest.fixture(params=["person", "service account"])
def limits(request, swept):
    """The swept world (its records in ``world.project``), a second project of the same
    workspace, and keys limited to one or the other, every scope each: the owner's, or an
    admin service account's."""
    world, ids = swept
    elsewhere = ProjectFactory(workspace=world.acme, name="Gantry", created_by=world.owner)
    holder = world.owner
    if request.param == "service account":
        holder = service_account_create(
            workspace=world.acme, actor=world.owner, name="Limited bot", role="admin"
        ).user
    outside = client_for(holder, projects=[elsewhere.pk])
    within = client_for(holder, projects=[world.project.pk])
    return world, ids, elsewhere, outside, within


def test_the_sweep_knows_its_routes():
    names = {name for name, _regex in ROUTES}
    assert {"issue-detail", "webhook-delivery", "project-metrics", "pull-merge"} <= PROJECT_RECORDS
    assert {name for name, _method in REFUSED} <= names
    assert len(PROJECT_RECORDS) >= 30


def _shown(body, project_id: int, name: str) -> list:
    """What a JSON body shows of a project: rows naming it, or its name."""
    found = []

    def walk(value):
        if isinstance(value, dict):
            if value.get("project_id") == project_id:
                found.append(value)
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str) and name in value:
            found.append(value)

    walk(body)
    return found


@pytest.mark.parametrize(("name", "regex"), ROUTES, ids=[name for name, _ in ROUTES])
def test_a_key_limited_to_projects_reaches_nothing_outside_them(limits, name, regex):
    world, ids, _elsewhere, outside, within = limits
    path = _path(name, regex, ids)
    body = _body(ids)
    before = _fingerprint()
    for method in METHODS:
        if method in ENDLESS.get(name, ()):
            continue
        response = _request(outside, method, path, body)
        where = f"{method} {path}"
        status = response.status_code
        assert status < 500, where
        if name in PROJECT_RECORDS and method != "OPTIONS":
            assert status in {404, 405}, (where, status, response.content[:200])
            if status == 404 and method != "HEAD":
                assert_error(response, 404, "NOT_FOUND")
                assert response.json()["error"]["details"] == {}, where
        elif (name, method) in REFUSED:
            error = assert_error(response, 403, "FORBIDDEN")
            assert error["details"] == {"project_limited": True}, where
        elif (name, "GET") in REFUSED and method == "HEAD":
            assert status == 403, where
        elif needs_jwt(name, method) and method != "OPTIONS":  # 403 before any limit
            assert status in {403, 405}, where
        json_body = response.get("Content-Type", "").startswith("application/json")
        if method == "GET" and status == 200 and json_body and not response.streaming:
            shown = _shown(response.json(), world.project.pk, world.project.name)
            assert shown == [], (where, shown[:3])
        if name not in OWN_ACCOUNT:
            assert _changed(before, _fingerprint()) == [], where
    if name in PROJECT_RECORDS and name != "project-member-remove":
        # The same records, with a key limited to their project: there, as for any key.
        response = _request(within, "GET", path, body)
        assert response.status_code not in {403, 404}, (path, response.content[:200])


def test_a_limited_key_sees_only_the_workspaces_of_its_projects(world):
    elsewhere = WorkspaceFactory(name="Initech", slug="initech")
    MembershipFactory(workspace=elsewhere, user=world.owner, role="owner")
    far = ProjectFactory(workspace=elsewhere, name="Far", created_by=world.owner)
    client = client_for(world.owner, projects=[far.pk])
    listed = assert_ok(client.get("/v1/workspaces"))["data"]
    assert [workspace["id"] for workspace in listed] == [elsewhere.pk]
    for path in (
        f"/v1/workspaces/{world.acme.pk}",
        f"/v1/workspaces/{world.acme.pk}/members",
        f"/v1/workspaces/{world.acme.pk}/dashboard",
        f"/v1/workspaces/{world.acme.pk}/invitations",  # hidden before it is refused
    ):
        assert_error(client.get(path), 404, "NOT_FOUND")
    assert_ok(client.get(f"/v1/workspaces/{elsewhere.pk}/members"))
    projects = assert_ok(client.get("/v1/projects"))["data"]
    assert [project["id"] for project in projects] == [far.pk]


def test_lists_searches_totals_and_the_event_log_hold_only_the_keys_projects(world):
    gantry = ProjectFactory(workspace=world.acme, name="Gantry", created_by=world.owner)
    for project, count in ((world.project, 3), (gantry, 2)):
        for n in range(count):
            make_issue(project, world.owner, title=f"Sprocket {n}")
    event_record(type="workspace.updated", workspace_id=world.acme.pk, project_id=None, data={})
    limited = client_for(world.owner, projects=[gantry.pk])
    issues = assert_ok(limited.get("/v1/issues", {"q": "sprocket"}))
    assert issues["meta"]["total"] == 2
    assert {issue["project_id"] for issue in issues["data"]} == {gantry.pk}
    hits = assert_ok(limited.get("/v1/search", {"q": "sprocket"}))
    assert hits["meta"]["total"] == 2  # the word's counters, summed over its projects alone
    assert {hit["project_id"] for hit in hits["data"]} == {gantry.pk}
    hits = assert_ok(limited.get("/v1/search", {"q": "sprocket", "workspace_id": world.acme.pk}))
    assert hits["meta"]["total"] == 2
    events = assert_ok(limited.get("/v1/events", {"per_page": 100}))["data"]
    assert events and {event["project_id"] for event in events} == {gantry.pk}
    # The same owner's unlimited key sees all of it.
    everything = client_for(world.owner)
    assert assert_ok(everything.get("/v1/search", {"q": "sprocket"}))["meta"]["total"] == 5
    events = assert_ok(everything.get("/v1/events", {"per_page": 100}))["data"]
    assert None in {event["project_id"] for event in events}


def test_bulk_items_outside_the_keys_projects_are_refused_one_by_one(world):
    gantry = ProjectFactory(workspace=world.acme, name="Gantry", created_by=world.owner)
    mine, theirs = make_issue(gantry, world.owner), make_issue(world.project, world.owner)
    limited = client_for(world.owner, projects=[gantry.pk])
    items = [{"id": theirs.pk, "status": "closed"}, {"id": mine.pk, "status": "closed"}]
    results = assert_ok(limited.patch("/v1/issues/bulk", {"items": items}, format="json"))["data"]
    assert [result["status"] for result in results] == [404, 200]
    theirs.refresh_from_db()
    mine.refresh_from_db()
    assert (theirs.status, mine.status) == ("open", "closed")


def test_a_limited_key_writes_in_its_projects(world):
    limited = client_for(world.owner, projects=[world.project.pk])
    made = assert_ok(
        limited.post(f"/v1/projects/{world.project.pk}/issues", {"title": "Mine"}, format="json"),
        201,
    )["data"]
    assert made["project_id"] == world.project.pk
    error = assert_error(
        limited.post(
            f"/v1/projects/{world.project.pk}/members", {"user_id": world.admin.pk}, format="json"
        ),
        403,
        "FORBIDDEN",
    )
    assert error["details"] == {"project_limited": True}


def test_no_replay_shows_a_limited_key_what_a_wider_credential_was_answered(world):
    """The same Idempotency-Key, path and body from a JWT and then from a key of the same
    person limited to another project: not the JWT's answer replayed, a 422."""
    gantry = ProjectFactory(workspace=world.acme, name="Gantry", created_by=world.owner)
    path = f"/v1/projects/{world.project.pk}/issues"
    headers = {"HTTP_IDEMPOTENCY_KEY": "one-request"}
    assert_ok(jwt_client(world.owner).post(path, {"title": "T"}, format="json", **headers), 201)
    limited = client_for(world.owner, projects=[gantry.pk])
    response = limited.post(path, {"title": "T"}, format="json", **headers)
    assert_error(response, 422, "VALIDATION_ERROR")
    assert "Idempotent-Replayed" not in response


def test_a_limited_stream_gets_its_projects_events_and_no_workspaces(world):
    gantry = ProjectFactory(workspace=world.acme, name="Gantry", created_by=world.owner)
    subscriber = stream.Subscriber(
        user_id=world.owner.pk, types=None, project_limit=frozenset({gantry.pk})
    )
    subscriber.rescope({world.project.pk, gantry.pk}, {world.acme.pk})
    assert subscriber.project_ids == {gantry.pk}
    assert subscriber.workspace_ids == {world.acme.pk}  # a change there still reaches it

    def event(project_id):
        return stream.StreamEvent(1, "issue.created", world.acme.pk, project_id, b"{}")

    assert subscriber.wants(event(gantry.pk))
    assert not subscriber.wants(event(world.project.pk))
    assert not subscriber.wants(event(None))  # the workspace's own
    unlimited = stream.Subscriber(user_id=world.owner.pk, types=None)
    unlimited.rescope({world.project.pk, gantry.pk}, {world.acme.pk})
    assert unlimited.wants(event(world.project.pk)) and unlimited.wants(event(None))


# Making limited keys ---------------------------------------------------------------------


def test_a_key_is_made_limited_to_projects_its_owner_sees(world):
    owner = jwt_client(world.owner)
    body = {"name": "CI", "scopes": ["issues:write"], "projects": [world.project.pk]}
    data = assert_ok(owner.post("/v1/api-keys", body, format="json"), 201)["data"]
    assert data["projects"] == [world.project.pk]
    assert ApiKey.objects.get(pk=data["id"]).projects == [world.project.pk]
    listed = assert_ok(owner.get(f"/v1/api-keys/{data['id']}"))["data"]
    assert listed["projects"] == [world.project.pk]
    # Another workspace's project, one that does not exist: the same answer.
    for projects in ([world.other_project.pk], [987654], [world.project.pk, 987654]):
        error = assert_error(
            owner.post("/v1/api-keys", {**body, "projects": projects}, format="json"),
            422,
            "VALIDATION_ERROR",
        )
        assert list(error["details"]) == ["projects"]
    error = assert_error(
        owner.post("/v1/api-keys", {**body, "projects": []}, format="json"),
        422,
        "VALIDATION_ERROR",
    )
    assert list(error["details"]) == ["projects"]
    unlimited = assert_ok(
        owner.post("/v1/api-keys", {**body, "projects": None}, format="json"), 201
    )["data"]
    assert unlimited["projects"] is None


def test_the_command_makes_a_limited_key(world, capsys):
    from django.core.management.base import CommandError

    def make(project_id: int) -> None:
        call_command(
            "create_api_key",
            *("--email", world.owner.email, "--name", "Sync", "--scopes", "issues:read"),
            *("--projects", str(project_id)),
        )

    make(world.project.pk)
    out = capsys.readouterr().out
    assert f"projects: {world.project.pk}" in out
    key = out.strip().splitlines()[-1]
    client = client_for(None)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert_ok(client.get(f"/v1/projects/{world.project.pk}/issues"))
    assert_error(client.get(f"/v1/projects/{world.other_project.pk}/issues"), 404, "NOT_FOUND")
    with pytest.raises(CommandError, match="--projects"):
        make(world.other_project.pk)
