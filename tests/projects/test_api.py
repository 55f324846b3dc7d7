"""Projects and their teams through the API (docs/guide/workspaces-and-projects.md): status, the
whole envelope, the database afterwards and the event each change records."""

from types import SimpleNamespace

import pytest

from accounts.models import Role, User
from events.models import Event
from projects.models import Project, ProjectMember
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import (
    MembershipFactory,
    ProjectFactory,
    ProjectMemberFactory,
    UserFactory,
    WorkspaceFactory,
)

Visibility = Project.Visibility


def url(project, suffix: str = "") -> str:
    return f"/v1/projects/{getattr(project, 'pk', project)}{suffix}"


def events(type_: str) -> list[Event]:
    return list(Event.objects.filter(type=type_).order_by("id"))


def ids(body) -> list[int]:
    return [item["id"] for item in body["data"]]


# Visibility and the list ----------------------------------------------------------------


@pytest.fixture
def spread(world):
    """Projects of every visibility in both workspaces."""
    vault = ProjectFactory(workspace=world.acme, name="Vault", created_by=world.owner)
    ProjectMemberFactory(project=vault, user=world.owner)
    lobby = ProjectFactory(workspace=world.acme, name="Lobby", visibility=Visibility.INTERNAL)
    plaza = ProjectFactory(workspace=world.acme, name="Plaza", visibility=Visibility.PUBLIC)
    g_internal = ProjectFactory(
        workspace=world.globex, name="Globex Internal", visibility=Visibility.INTERNAL
    )
    g_public = ProjectFactory(
        workspace=world.globex, name="Globex Public", visibility=Visibility.PUBLIC
    )
    return SimpleNamespace(
        rocket=world.project,
        secret=world.other_project,
        vault=vault,
        lobby=lobby,
        plaza=plaza,
        g_internal=g_internal,
        g_public=g_public,
    )


@pytest.mark.parametrize(
    ("persona", "visible"),
    [
        # Owners and admins see every project of their workspace, private ones included.
        ("owner", ["rocket", "vault", "lobby", "plaza", "g_public"]),
        ("admin", ["rocket", "vault", "lobby", "plaza", "g_public"]),
        # Developers and viewers: their team's private projects, internal and public ones.
        ("developer", ["rocket", "lobby", "plaza", "g_public"]),
        ("viewer", ["rocket", "lobby", "plaza", "g_public"]),
        # The outsider: its own workspace, and Acme's public project only.
        ("outsider", ["secret", "plaza", "g_internal", "g_public"]),
    ],
)
def test_list_shows_only_visible_projects(api, spread, persona, visible):
    body = assert_ok(getattr(api, persona).get("/v1/projects"))
    expected = sorted(getattr(spread, name).pk for name in visible)
    assert ids(body) == expected
    assert body["meta"]["total"] == len(expected)


def test_user_without_any_workspace_sees_public_projects_only(spread):
    loner = UserFactory()
    body = assert_ok(client_for(loner).get("/v1/projects"))
    assert ids(body) == [spread.plaza.pk, spread.g_public.pk]


def test_joining_a_team_reveals_a_private_project(api, world, spread):
    assert_error(api.developer.get(url(spread.vault)), 404, "NOT_FOUND")
    ProjectMemberFactory(project=spread.vault, user=world.developer)
    assert spread.vault.pk in ids(assert_ok(api.developer.get("/v1/projects")))
    assert_ok(api.developer.get(url(spread.vault)))


def test_list_items_have_the_contract_fields(api, world):
    body = assert_ok(api.owner.get("/v1/projects"))
    project = Project.objects.get(pk=world.project.pk)
    assert body["data"] == [
        {
            "id": project.pk,
            "workspace_id": world.acme.pk,
            "name": "Rocket",
            "description": "A project",
            "status": "active",
            "visibility": "private",
            "created_at": project.created_at.isoformat().replace("+00:00", "Z"),
            "updated_at": project.updated_at.isoformat().replace("+00:00", "Z"),
            "team_count": 3,
        }
    ]


def test_outsider_reads_a_public_project_but_cannot_write_it(api, world, spread):
    assert_ok(api.outsider.get(url(spread.plaza)))
    assert_ok(api.outsider.get(url(spread.plaza, "/members")))
    for response in (
        api.outsider.patch(url(spread.plaza), {"name": "Mine"}, format="json"),
        api.outsider.put(url(spread.plaza), {"name": "Mine"}, format="json"),
        api.outsider.delete(url(spread.plaza)),
        api.outsider.post(
            url(spread.plaza, "/members"), {"user_id": world.outsider.pk}, format="json"
        ),
    ):
        assert_error(response, 403, "FORBIDDEN")
    plaza = Project.objects.get(pk=spread.plaza.pk)
    assert plaza.name == "Plaza"
    assert not plaza.members.exists()
    assert not Event.objects.exists()


@pytest.mark.parametrize("persona", ["developer", "viewer", "outsider"])
def test_private_project_off_your_team_is_404(api, spread, persona):
    client = getattr(api, persona)
    assert_error(client.get(url(spread.vault)), 404, "NOT_FOUND")
    assert_error(client.get(url(spread.vault, "/members")), 404, "NOT_FOUND")
    assert_error(client.patch(url(spread.vault), {"name": "x"}, format="json"), 404, "NOT_FOUND")
    assert_error(client.delete(url(spread.vault)), 404, "NOT_FOUND")
    assert Project.objects.get(pk=spread.vault.pk).name == "Vault"


# Filters --------------------------------------------------------------------------------


@pytest.fixture
def filtered(world):
    archived = ProjectFactory(
        workspace=world.acme,
        name="Old Rockets",
        status=Project.Status.ARCHIVED,
        visibility=Visibility.INTERNAL,
    )
    docs = ProjectFactory(
        workspace=world.acme,
        name="Docs",
        description="Manuals for the ROCKET",
        visibility=Visibility.PUBLIC,
    )
    plain = ProjectFactory(workspace=world.acme, name="Plain", description="nothing")
    return SimpleNamespace(rocket=world.project, archived=archived, docs=docs, plain=plain)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=active", ["rocket", "docs", "plain"]),
        ("status=archived", ["archived"]),
        ("visibility=private", ["rocket", "plain"]),
        ("visibility=internal", ["archived"]),
        ("visibility=public", ["docs"]),
        ("q=rocket", ["rocket", "archived", "docs"]),  # name or description, any case
        ("q=ROCK&status=active", ["rocket", "docs"]),
        ("q=manuals", ["docs"]),
        ("q=zzz", []),
        ("status=active&visibility=private&q=pla", ["plain"]),
    ],
)
def test_list_filters(api, filtered, query, expected):
    body = assert_ok(api.owner.get(f"/v1/projects?{query}"))
    assert ids(body) == sorted(getattr(filtered, name).pk for name in expected)
    assert body["meta"]["total"] == len(expected)


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("status=deleted", "status"),
        ("visibility=secret", "visibility"),
        ("workspace_id=abc", "workspace_id"),
    ],
)
def test_invalid_filter_value_is_400(api, world, query, parameter):
    error = assert_error(api.owner.get(f"/v1/projects?{query}"), 400, "BAD_REQUEST")
    assert list(error["details"]) == [parameter]
    assert all(isinstance(message, str) for message in error["details"][parameter])


def test_filters_never_widen_visibility(api, spread):
    body = assert_ok(api.outsider.get(f"/v1/projects?workspace_id={spread.rocket.workspace_id}"))
    assert ids(body) == [spread.plaza.pk]


# Create ---------------------------------------------------------------------------------


def test_create(api, world):
    response = api.developer.post(
        "/v1/projects",
        {"name": "Apollo", "description": "To the moon", "visibility": "internal"},
        format="json",
    )
    body = assert_ok(response, 201)
    assert set(body) == {"success", "data"}
    data = body["data"]
    project = Project.objects.get(name="Apollo")
    assert response["Location"] == f"/v1/projects/{project.pk}"
    assert data == {
        "id": project.pk,
        "workspace_id": world.acme.pk,
        "name": "Apollo",
        "description": "To the moon",
        "status": "active",
        "visibility": "internal",
        "created_at": project.created_at.isoformat().replace("+00:00", "Z"),
        "updated_at": project.updated_at.isoformat().replace("+00:00", "Z"),
        "team_count": 1,
    }
    assert project.created_by == world.developer
    assert list(project.members.values_list("user_id", flat=True)) == [world.developer.pk]

    [event] = events("project.created")
    assert event.workspace_id == world.acme.pk
    assert event.project_id == project.pk
    assert event.actor_id == world.developer.pk
    assert event.data == {"project": data}
    assert event.changes is None


def test_create_defaults(api, world):
    data = assert_ok(api.owner.post("/v1/projects", {"name": "Bare"}, format="json"), 201)["data"]
    assert data["description"] == ""
    assert data["visibility"] == "private"
    assert data["status"] == "active"
    # The new private project is visible to its creator, who sits on its team.
    assert_ok(api.owner.get(url(data["id"])))


def test_create_in_a_chosen_workspace(world):
    initech = WorkspaceFactory(name="Initech")
    MembershipFactory(workspace=initech, user=world.developer, role=Role.DEVELOPER)
    client = client_for(world.developer)
    response = client.post(
        "/v1/projects", {"name": "TPS", "workspace_id": initech.pk}, format="json"
    )
    data = assert_ok(response, 201)["data"]
    assert data["workspace_id"] == initech.pk
    assert Project.objects.get(pk=data["id"]).workspace == initech
    assert events("project.created")[0].workspace_id == initech.pk
    # Without workspace_id, the first workspace the caller joined.
    data = assert_ok(client.post("/v1/projects", {"name": "Default"}, format="json"), 201)["data"]
    assert data["workspace_id"] == world.acme.pk


@pytest.mark.parametrize("which", ["other", "missing"])
def test_create_in_a_workspace_you_are_not_in_is_422(api, world, which):
    workspace_id = world.globex.pk if which == "other" else 987654
    response = api.owner.post(
        "/v1/projects", {"name": "Intruder", "workspace_id": workspace_id}, format="json"
    )
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert list(error["details"]) == ["workspace_id"]
    assert not Project.objects.filter(name="Intruder").exists()
    assert not Event.objects.exists()


def test_create_without_any_workspace_is_422(db):
    response = client_for(UserFactory()).post("/v1/projects", {"name": "Homeless"}, format="json")
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert list(error["details"]) == ["workspace_id"]
    assert not Project.objects.filter(name="Homeless").exists()


def test_viewer_cannot_create(api, world):
    response = api.viewer.post("/v1/projects", {"name": "Peek"}, format="json")
    assert_error(response, 403, "FORBIDDEN")
    assert not Project.objects.filter(name="Peek").exists()
    assert not Event.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": None}, "name"),
        ({"name": "x" * 201}, "name"),
        ({"name": "Ok", "visibility": "secret"}, "visibility"),
        ({"name": "Ok", "workspace_id": "abc"}, "workspace_id"),
        ({"name": "Ok", "workspace_id": 0}, "workspace_id"),
    ],
)
def test_create_validation(api, world, body, field):
    error = assert_error(
        api.owner.post("/v1/projects", body, format="json"), 422, "VALIDATION_ERROR"
    )
    assert list(error["details"]) == [field]
    assert Project.objects.count() == 2
    assert not Event.objects.exists()


# Read -----------------------------------------------------------------------------------


def test_get_one(api, world):
    body = assert_ok(api.viewer.get(url(world.project)))
    assert set(body) == {"success", "data"}
    assert body["data"]["id"] == world.project.pk
    assert body["data"]["name"] == "Rocket"
    assert body["data"]["team_count"] == 3


def test_another_workspaces_project_is_404(api, world):
    error = assert_error(api.owner.get(url(world.other_project)), 404, "NOT_FOUND")
    assert error["details"] == {}


# PUT ------------------------------------------------------------------------------------


def test_put_replaces_and_resets_omitted_fields(api, world):
    Project.objects.filter(pk=world.project.pk).update(
        description="Long text", visibility=Visibility.INTERNAL
    )
    response = api.developer.put(url(world.project), {"name": "Rocket II"}, format="json")
    data = assert_ok(response)["data"]
    project = Project.objects.get(pk=world.project.pk)
    assert (project.name, project.description, project.visibility, project.status) == (
        "Rocket II",
        "",
        "private",
        "active",
    )
    assert data["name"] == "Rocket II"
    assert data["description"] == ""
    assert data["visibility"] == "private"
    [event] = events("project.updated")
    assert event.changes == {
        "name": {"previous": "Rocket", "current": "Rocket II"},
        "description": {"previous": "Long text", "current": ""},
        "visibility": {"previous": "internal", "current": "private"},
    }
    assert event.data == {"project": data}
    assert event.actor_id == world.developer.pk


def test_put_with_every_field(api, world):
    body = {"name": "R", "description": "D", "visibility": "public", "status": "active"}
    data = assert_ok(api.owner.put(url(world.project), body, format="json"))["data"]
    assert {key: data[key] for key in body} == body


def test_put_without_name_is_422(api, world):
    response = api.owner.put(url(world.project), {"description": "only"}, format="json")
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert list(error["details"]) == ["name"]
    assert Project.objects.get(pk=world.project.pk).description == "A project"
    assert not Event.objects.exists()


# PATCH ----------------------------------------------------------------------------------


def test_patch_changes_only_the_fields_sent(api, world):
    Project.objects.filter(pk=world.project.pk).update(visibility=Visibility.INTERNAL)
    response = api.developer.patch(url(world.project), {"description": "New"}, format="json")
    data = assert_ok(response)["data"]
    project = Project.objects.get(pk=world.project.pk)
    assert (project.name, project.description, project.visibility) == (
        "Rocket",
        "New",
        "internal",
    )
    assert data["description"] == "New"
    assert data["visibility"] == "internal"
    [event] = events("project.updated")
    assert event.changes == {"description": {"previous": "A project", "current": "New"}}
    assert event.data == {"project": data}
    assert event.project_id == world.project.pk
    assert event.workspace_id == world.acme.pk
    assert event.actor_id == world.developer.pk


def test_patch_to_the_same_values_records_no_event(api, world):
    assert_ok(api.owner.patch(url(world.project), {"name": "Rocket"}, format="json"))
    assert_ok(api.owner.patch(url(world.project), {}, format="json"))
    assert not events("project.updated")


def test_patch_invalid_value_is_422_and_changes_nothing(api, world):
    response = api.owner.patch(
        url(world.project), {"name": "Fine", "visibility": "secret"}, format="json"
    )
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert list(error["details"]) == ["visibility"]
    assert Project.objects.get(pk=world.project.pk).name == "Rocket"
    assert not Event.objects.exists()


@pytest.mark.parametrize("method", ["put", "patch"])
def test_viewer_cannot_update(api, world, method):
    response = getattr(api.viewer, method)(url(world.project), {"name": "Nope"}, format="json")
    assert_error(response, 403, "FORBIDDEN")
    assert Project.objects.get(pk=world.project.pk).name == "Rocket"


def test_archive_and_unarchive_record_status_changes(api, world):
    assert_ok(api.owner.patch(url(world.project), {"status": "archived"}, format="json"))
    assert Project.objects.get(pk=world.project.pk).status == "archived"
    data = assert_ok(api.developer.patch(url(world.project), {"status": "active"}, format="json"))
    assert data["data"]["status"] == "active"
    assert Project.objects.get(pk=world.project.pk).status == "active"
    assert [e.changes for e in events("project.updated")] == [
        {"status": {"previous": "active", "current": "archived"}},
        {"status": {"previous": "archived", "current": "active"}},
    ]


# Archived projects are read-only --------------------------------------------------------


@pytest.fixture
def archived(world):
    Project.objects.filter(pk=world.project.pk).update(status=Project.Status.ARCHIVED)
    return world.project


def test_archived_project_reads_still_work(api, archived):
    assert assert_ok(api.viewer.get(url(archived)))["data"]["status"] == "archived"
    assert_ok(api.viewer.get(url(archived, "/members")))
    assert archived.pk in ids(assert_ok(api.viewer.get("/v1/projects")))


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("patch", "", {"name": "Renamed"}),
        ("patch", "", {"status": "archived", "name": "Renamed"}),
        ("put", "", {"name": "Renamed", "status": "archived"}),
        ("post", "/members", {"user_id": "{admin}"}),
        ("delete", "/members/{developer}", None),
    ],
)
def test_archived_project_writes_are_409(api, world, archived, method, suffix, body):
    suffix = suffix.format(developer=world.developer.pk)
    if body and body.get("user_id") == "{admin}":
        body = {"user_id": world.admin.pk}
    response = getattr(api.owner, method)(url(archived, suffix), body, format="json")
    error = assert_error(response, 409, "CONFLICT")
    assert error["details"] == {"project_status": "archived"}
    project = Project.objects.get(pk=archived.pk)
    assert (project.name, project.status) == ("Rocket", "archived")
    assert set(project.members.values_list("user_id", flat=True)) == {
        world.owner.pk,
        world.developer.pk,
        world.viewer.pk,
    }
    assert not Event.objects.exists()


def test_put_that_leaves_status_out_does_not_unarchive(api, archived):
    """Only an explicit ``status: active`` unarchives; a PUT from a client that does not
    know about status must not make an archived project writable by accident."""
    response = api.owner.put(url(archived), {"name": "Renamed"}, format="json")
    assert_error(response, 409, "CONFLICT")
    project = Project.objects.get(pk=archived.pk)
    assert (project.name, project.status) == ("Rocket", "archived")
    assert not Event.objects.exists()


def test_put_with_status_active_unarchives(api, archived):
    body = {"name": "Rocket", "description": "A project", "status": "active"}
    data = assert_ok(api.owner.put(url(archived), body, format="json"))["data"]
    assert data["status"] == "active"
    assert Project.objects.get(pk=archived.pk).status == "active"
    [event] = events("project.updated")
    assert event.changes == {"status": {"previous": "archived", "current": "active"}}


def test_archived_project_role_check_comes_first(api, archived):
    response = api.viewer.patch(url(archived), {"status": "active"}, format="json")
    assert_error(response, 403, "FORBIDDEN")
    assert Project.objects.get(pk=archived.pk).status == "archived"


def test_patch_status_active_unarchives(api, world, archived):
    response = api.owner.patch(
        url(archived), {"status": "active", "description": "Back"}, format="json"
    )
    data = assert_ok(response)["data"]
    assert (data["status"], data["description"]) == ("active", "Back")
    project = Project.objects.get(pk=archived.pk)
    assert (project.status, project.description) == ("active", "Back")
    [event] = events("project.updated")
    assert event.changes == {
        "status": {"previous": "archived", "current": "active"},
        "description": {"previous": "A project", "current": "Back"},
    }
    # Writable again.
    assert_ok(api.owner.patch(url(archived), {"name": "Rocket II"}, format="json"))


# DELETE ---------------------------------------------------------------------------------


@pytest.mark.parametrize("persona", ["owner", "admin"])
def test_delete(api, world, persona):
    project_id = world.project.pk
    response = getattr(api, persona).delete(url(project_id))
    assert response.status_code == 200
    assert response.json() == {"success": True, "data": None}
    assert not Project.objects.filter(pk=project_id).exists()
    assert not ProjectMember.objects.filter(project_id=project_id).exists()
    [event] = events("project.deleted")
    assert event.project_id == project_id
    assert event.workspace_id == world.acme.pk
    assert event.actor_id == getattr(world, persona).pk
    assert event.data["project"]["id"] == project_id
    assert event.data["project"]["name"] == "Rocket"
    assert_error(api.owner.get(url(project_id)), 404, "NOT_FOUND")


@pytest.mark.parametrize("persona", ["developer", "viewer"])
def test_delete_needs_owner_or_admin(api, world, persona):
    response = getattr(api, persona).delete(url(world.project))
    error = assert_error(response, 403, "FORBIDDEN")
    assert error["details"]["required_ability"] == "manage"
    assert Project.objects.filter(pk=world.project.pk).exists()
    assert not Event.objects.exists()


def test_delete_unknown_project_is_404(api, world):
    assert_error(api.owner.delete(url(987654)), 404, "NOT_FOUND")


# Members --------------------------------------------------------------------------------


def test_members_list(api, world):
    body = assert_ok(api.viewer.get(url(world.project, "/members")))
    assert set(body) == {"success", "data", "meta"}
    assert [(m["id"], m["email"], m["role"]) for m in body["data"]] == [
        (world.owner.pk, "owner@acme.test", "owner"),
        (world.developer.pk, "dev@acme.test", "developer"),
        (world.viewer.pk, "viewer@acme.test", "viewer"),
    ]
    member = body["data"][0]
    assert set(member) >= {"id", "email", "name", "role", "status", "added_at"}
    assert member["name"] == "Olive Owner"
    assert member["status"] == "active"
    assert member["added_at"].endswith("Z")
    assert body["meta"]["total"] == 3


@pytest.mark.parametrize("persona", ["owner", "admin"])
def test_add_member(api, world, persona):
    response = getattr(api, persona).post(
        url(world.project, "/members"), {"user_id": world.admin.pk}, format="json"
    )
    data = assert_ok(response, 201)["data"]
    assert response["Location"] == f"/v1/projects/{world.project.pk}/members/{world.admin.pk}"
    assert data["id"] == world.admin.pk
    assert data["email"] == "admin@acme.test"
    assert data["role"] == "admin"
    assert ProjectMember.objects.filter(project=world.project, user=world.admin).exists()
    assert assert_ok(api.owner.get(url(world.project)))["data"]["team_count"] == 4
    [event] = events("member.added")
    assert event.project_id == world.project.pk
    assert event.workspace_id == world.acme.pk
    assert event.actor_id == getattr(world, persona).pk
    assert event.data["user"]["id"] == world.admin.pk
    assert event.data["project"]["id"] == world.project.pk


@pytest.mark.parametrize("persona", ["developer", "viewer"])
def test_add_member_needs_owner_or_admin(api, world, persona):
    response = getattr(api, persona).post(
        url(world.project, "/members"), {"user_id": world.admin.pk}, format="json"
    )
    assert_error(response, 403, "FORBIDDEN")
    assert not ProjectMember.objects.filter(project=world.project, user=world.admin).exists()
    assert not Event.objects.exists()


def test_add_member_outside_the_workspace_is_422(api, world):
    response = api.owner.post(
        url(world.project, "/members"), {"user_id": world.outsider.pk}, format="json"
    )
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert list(error["details"]) == ["user_id"]
    assert not ProjectMember.objects.filter(project=world.project, user=world.outsider).exists()
    assert not Event.objects.exists()


NOT_A_WORKSPACE_MEMBER = {
    "success": False,
    "error": {
        "code": "VALIDATION_ERROR",
        "message": "The request has invalid fields.",
        "details": {"user_id": ["No member of this workspace has this id."]},
    },
}


@pytest.mark.parametrize("who", ["nobody", "outsider", "without-workspace", "invited-elsewhere"])
def test_adding_a_non_member_answers_the_same_whoever_the_id_is(api, world, who):
    """An id that is nobody's and an id of someone in another workspace (or in none) get the
    same status and body: different answers would enumerate users across workspaces."""
    user_id = {
        "nobody": lambda: 987654,
        "outsider": lambda: world.outsider.pk,
        "without-workspace": lambda: UserFactory().pk,
        "invited-elsewhere": lambda: (
            MembershipFactory(
                workspace=world.globex, user=UserFactory(status=User.Status.INVITED)
            ).user_id
        ),
    }[who]()

    response = api.owner.post(url(world.project, "/members"), {"user_id": user_id}, format="json")

    assert response.status_code == 422
    assert response.json() == NOT_A_WORKSPACE_MEMBER
    assert world.project.members.count() == 3
    assert not Event.objects.exists()


@pytest.mark.parametrize("body", [{}, {"user_id": "abc"}, {"user_id": 0}, {"user_id": 987654}])
def test_add_member_invalid_user_is_422(api, world, body):
    response = api.owner.post(url(world.project, "/members"), body, format="json")
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert list(error["details"]) == ["user_id"]
    assert world.project.members.count() == 3


def test_add_member_twice_is_422(api, world):
    response = api.owner.post(
        url(world.project, "/members"), {"user_id": world.developer.pk}, format="json"
    )
    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert list(error["details"]) == ["user_id"]
    assert ProjectMember.objects.filter(project=world.project, user=world.developer).count() == 1
    assert not Event.objects.exists()


def test_remove_member(api, world):
    response = api.admin.delete(url(world.project, f"/members/{world.developer.pk}"))
    assert response.status_code == 200
    assert response.json() == {"success": True, "data": None}
    assert not ProjectMember.objects.filter(project=world.project, user=world.developer).exists()
    [event] = events("member.removed")
    assert event.project_id == world.project.pk
    assert event.actor_id == world.admin.pk
    assert event.data["user"]["id"] == world.developer.pk
    # Off the team of a private project, the developer no longer sees it.
    assert_error(api.developer.get(url(world.project)), 404, "NOT_FOUND")


@pytest.mark.parametrize("who", ["admin", "outsider", "nobody"])
def test_remove_someone_not_on_the_team_is_404(api, world, who):
    user_id = 987654 if who == "nobody" else getattr(world, who).pk
    response = api.owner.delete(url(world.project, f"/members/{user_id}"))
    assert_error(response, 404, "NOT_FOUND")
    assert world.project.members.count() == 3
    assert not Event.objects.exists()


@pytest.mark.parametrize("persona", ["developer", "viewer"])
def test_remove_member_needs_owner_or_admin(api, world, persona):
    response = getattr(api, persona).delete(url(world.project, f"/members/{world.viewer.pk}"))
    assert_error(response, 403, "FORBIDDEN")
    assert world.project.members.count() == 3


def test_members_of_another_workspaces_project_are_404(api, world):
    other = world.other_project
    assert_error(api.owner.get(url(other, "/members")), 404, "NOT_FOUND")
    response = api.owner.post(url(other, "/members"), {"user_id": world.owner.pk}, format="json")
    assert_error(response, 404, "NOT_FOUND")
    assert_error(api.owner.delete(url(other, f"/members/{world.outsider.pk}")), 404, "NOT_FOUND")
    assert list(other.members.values_list("user_id", flat=True)) == [world.outsider.pk]
