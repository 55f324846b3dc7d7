"""The Django admin: every page renders, keys are minted once and stored hashed, and changes
made here go through the services (so they record the same events as the API)."""

import re
from datetime import timedelta

import pytest
from django import forms
from django.contrib import admin
from django.contrib.auth.models import Group
from django.db import transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts import keys
from accounts.models import ApiKey, Invitation, Membership, Role, User, Workspace
from collab.adminsite import AdminSite
from events.models import Event
from events.services import event_record
from gitintegration.models import PullRequest, Repository
from issues.models import Issue, Label
from projects.models import Project, ProjectMember
from tests.conftest import BLANK_PASSWORDS, assert_error, assert_ok, bearer
from tests.factories import (
    PASSWORD,
    PullRequestFactory,
    RepositoryFactory,
    UserFactory,
    make_api_key,
    make_issue,
)

KEY_PATTERN = re.compile(r"clb_[0-9A-Za-z]{36}")


def url(model, view: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def form_data(response) -> dict:
    """What a browser would post back from an admin change page, inlines included."""
    forms = [response.context["adminform"].form]
    for inline in response.context["inline_admin_formsets"]:
        forms.append(inline.formset.management_form)
        forms.extend(inline.formset.forms)
    data: dict = {}
    for form in forms:
        for name in form.fields:
            value = form[name].value()
            key = form.add_prefix(name)
            if value is None or value is False:
                continue
            if value is True:
                data[key] = "on"
            elif isinstance(value, (list, tuple)):
                data[key] = [str(item) for item in value]
            else:
                data[key] = str(value)
    return data


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


# Every page -------------------------------------------------------------------------------


def test_every_registered_model_renders_its_changelist_add_and_change_pages(browser, root, world):
    make_api_key(world.developer, ["projects:read"])
    Invitation.objects.create(
        workspace=world.acme,
        email="new@acme.test",
        role=Role.DEVELOPER,
        token_hash=keys.hash_key("token"),
        invited_by=world.owner,
        user=UserFactory(email="new@acme.test", status=User.Status.INVITED),
        expires_at=timezone.now() + timedelta(days=7),
    )
    with transaction.atomic():
        event_record(type="project.created", workspace_id=world.acme.pk, data={"x": 1})

    checked = []
    request = type("Request", (), {"user": root})()
    for model, model_admin in admin.site._registry.items():
        changelist = browser.get(url(model, "changelist"))
        assert changelist.status_code == 200, model
        assert browser.get(url(model, "changelist"), {"q": "acme"}).status_code == 200, model
        if model_admin.has_add_permission(request):
            assert browser.get(url(model, "add")).status_code == 200, model
        instance = model._default_manager.order_by("pk").first()
        if instance is not None:
            assert browser.get(url(model, "change", instance.pk)).status_code == 200, model
        checked.append(model)
    for model in (User, Workspace, Membership, Invitation, ApiKey, Project, Event):
        assert model in checked


def test_admin_needs_a_staff_login(world):
    client = Client()
    response = client.get(url(ApiKey, "changelist"))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    client.force_login(world.owner)  # not staff
    assert client.get(url(ApiKey, "changelist")).status_code == 302


# API keys ---------------------------------------------------------------------------------


def test_creating_a_key_shows_it_once_and_stores_only_its_hash(browser, world):
    response = browser.post(
        url(ApiKey, "add"),
        {
            "user": world.developer.pk,
            "name": "deploy bot",
            "scopes": ["projects:read", "issues:write"],
            "expires_in": "90d",
        },
        follow=True,
    )
    assert response.status_code == 200
    content = response.content.decode()
    keys_shown = KEY_PATTERN.findall(content)
    assert len(keys_shown) == 1
    key = keys_shown[0]
    assert any(
        key in message and "not be shown again" in message for message in messages_of(response)
    )

    api_key = ApiKey.objects.get(name="deploy bot")
    assert api_key.user == world.developer
    assert api_key.key_hash == keys.hash_key(key)
    assert api_key.prefix == key[:12]
    assert key not in str([getattr(api_key, f.attname) for f in ApiKey._meta.concrete_fields])
    assert api_key.scopes == ["issues:write", "projects:read"]
    assert abs(api_key.expires_at - (timezone.now() + timedelta(days=90))) < timedelta(minutes=1)

    # Never again, and the hash is never shown.
    for page in (url(ApiKey, "changelist"), url(ApiKey, "change", api_key.pk)):
        content = browser.get(page).content.decode()
        assert key not in content
        assert api_key.key_hash not in content
        assert api_key.prefix in content

    body = assert_ok(bearer(key).get("/v1/projects"))
    assert [p["name"] for p in body["data"]] == ["Rocket"]
    assert_error(bearer(key).post("/v1/projects", {"name": "X"}, format="json"), 403, "FORBIDDEN")


def test_a_blank_expiry_means_never(browser, world):
    browser.post(
        url(ApiKey, "add"),
        {"user": world.owner.pk, "name": "forever", "scopes": ["users:read"], "expires_in": ""},
    )
    assert ApiKey.objects.get(name="forever").expires_at is None


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"expires_in": "90 days"}, "expires_in", "is not a duration"),
        ({"expires_in": "100y"}, "expires_in", "at most"),
        ({"scopes": []}, "scopes", "required"),
        ({"scopes": ["projects:destroy"]}, "scopes", "valid choice"),
        ({"name": ""}, "name", "required"),
    ],
)
def test_the_key_form_rejects_bad_input(browser, world, changes, field, message):
    data = {"user": world.owner.pk, "name": "k", "scopes": ["users:read"], "expires_in": "1y"}
    response = browser.post(url(ApiKey, "add"), {**data, **changes})
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert message in " ".join(errors[field])
    assert not ApiKey.objects.exists()
    assert not KEY_PATTERN.search(response.content.decode())


def test_only_the_name_of_a_key_can_change(browser, world):
    make_api_key(world.developer, ["projects:read"], name="old")
    api_key = ApiKey.objects.get()
    page = browser.get(url(ApiKey, "change", api_key.pk))
    form = page.context["adminform"].form
    assert list(form.fields) == ["name"]
    data = form_data(page)
    data.update(name="renamed", scopes=["projects:admin"], user=world.owner.pk, key_hash="x")
    response = browser.post(url(ApiKey, "change", api_key.pk), data)
    assert response.status_code == 302
    api_key.refresh_from_db()
    assert api_key.name == "renamed"
    assert api_key.scopes == ["projects:read"]
    assert api_key.user == world.developer
    assert api_key.key_hash != "x"


def test_revoke_selected_keys_action(browser, world):
    first = make_api_key(world.developer, ["projects:read"], name="first")
    second = make_api_key(world.developer, ["projects:read"], name="second")
    kept = make_api_key(world.developer, ["projects:read"], name="kept")
    chosen = ApiKey.objects.filter(name__in=["first", "second"]).values_list("pk", flat=True)
    response = browser.post(
        url(ApiKey, "changelist"),
        {"action": "revoke_keys", "_selected_action": [str(pk) for pk in chosen]},
        follow=True,
    )
    assert "Revoked 2 API key(s)." in messages_of(response)
    revoked = ApiKey.objects.filter(revoked_at__isnull=False).values_list("name", flat=True)
    assert sorted(revoked) == ["first", "second"]
    for key in (first, second):
        assert_error(bearer(key).get("/v1/projects"), 401, "UNAUTHORIZED")
    assert_ok(bearer(kept).get("/v1/projects"))
    # The changelist can tell them apart.
    listed = browser.get(url(ApiKey, "changelist"), {"revoked": "yes"})
    assert listed.context["cl"].result_count == 2


# Users ------------------------------------------------------------------------------------


def test_changing_tier_and_status_in_the_admin_persists(browser, world):
    key = make_api_key(world.developer, ["projects:read"])
    page = browser.get(url(User, "change", world.developer.pk))
    assert page.status_code == 200
    data = form_data(page)
    assert "password" not in page.context["adminform"].form.changed_data
    data.update(tier="premium")
    response = browser.post(url(User, "change", world.developer.pk), data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    world.developer.refresh_from_db()
    assert world.developer.tier == User.Tier.PREMIUM
    assert world.developer.check_password(PASSWORD), "saving must not touch the password"

    data.update(status="suspended")
    browser.post(url(User, "change", world.developer.pk), data)
    world.developer.refresh_from_db()
    assert world.developer.status == User.Status.SUSPENDED
    assert_error(bearer(key).get("/v1/projects"), 401, "UNAUTHORIZED")


def test_user_list_filters_and_search(browser, world):
    User.objects.filter(pk=world.viewer.pk).update(tier=User.Tier.ENTERPRISE)
    listed = browser.get(url(User, "changelist"), {"tier": "enterprise"})
    assert [u.email for u in listed.context["cl"].result_list] == ["viewer@acme.test"]
    listed = browser.get(url(User, "changelist"), {"status": "active", "q": "Dana"})
    assert [u.email for u in listed.context["cl"].result_list] == ["dev@acme.test"]


def test_adding_a_user_takes_an_email_and_the_password_twice(browser, world):
    password = "quartz-meadow-ladder-7"
    response = browser.post(
        url(User, "add"),
        {
            "email": "New.Person@Acme.test",
            "name": "New",
            "password1": password,
            "password2": password,
        },
    )
    assert response.status_code == 302
    user = User.objects.get(email="new.person@acme.test")
    assert user.check_password(password) and user.status == User.Status.ACTIVE
    assert response["Location"] == url(User, "change", user.pk)
    assert Client().login(email="new.person@acme.test", password=password)


@pytest.mark.parametrize(
    ("email", "password1", "password2", "field"),
    [
        ("fresh@acme.test", "quartz-meadow-ladder-7", "something-else-entirely", "password2"),
        ("fresh@acme.test", "short", "short", "password2"),
        ("DEV@acme.test", "quartz-meadow-ladder-7", "quartz-meadow-ladder-7", "email"),
        ("not-an-email", "quartz-meadow-ladder-7", "quartz-meadow-ladder-7", "email"),
        ("fresh@acme.test", " " * 12, " " * 12, "password2"),
        ("fresh@acme.test", "\t \u3000\u00a0   \t ", "\t \u3000\u00a0   \t ", "password2"),
    ],
)
def test_the_user_add_form_rejects_bad_input(browser, world, email, password1, password2, field):
    count = User.objects.count()
    response = browser.post(
        url(User, "add"), {"email": email, "password1": password1, "password2": password2}
    )
    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    assert User.objects.count() == count


def test_changing_a_password_in_the_admin(browser, world):
    password = "velvet-harbor-cactus-3"
    response = browser.post(
        reverse("admin:auth_user_password_change", args=[world.viewer.pk]),
        {"password1": password, "password2": password, "usable_password": "true"},
    )
    assert response.status_code == 302
    world.viewer.refresh_from_db()
    assert world.viewer.check_password(password)


@pytest.mark.parametrize("password", BLANK_PASSWORDS)
def test_a_password_of_whitespace_is_refused_in_the_admin(browser, world, password):
    response = browser.post(
        reverse("admin:auth_user_password_change", args=[world.viewer.pk]),
        {"password1": password, "password2": password, "usable_password": "true"},
    )
    assert response.status_code == 200
    assert "blank" in str(response.context["form"].errors["password2"])
    world.viewer.refresh_from_db()
    assert world.viewer.check_password(PASSWORD)


# Workspaces and memberships ---------------------------------------------------------------


def test_adding_a_workspace_makes_the_given_user_its_owner(browser, world):
    response = browser.post(
        url(Workspace, "add"), {"name": "Initech", "owner_email": "Dev@Acme.test"}
    )
    assert response.status_code == 302
    workspace = Workspace.objects.get(name="Initech")
    assert workspace.slug == "initech"
    membership = Membership.objects.get(workspace=workspace)
    assert (membership.user, membership.role) == (world.developer, Role.OWNER)
    assert Event.objects.filter(type="workspace.created", workspace_id=workspace.pk).exists()

    response = browser.post(url(Workspace, "add"), {"name": "X", "owner_email": "no@acme.test"})
    assert "owner_email" in response.context["adminform"].form.errors


def test_memberships_inline_goes_through_the_services(browser, world):
    page = browser.get(url(Workspace, "change", world.acme.pk))
    data = form_data(page)
    forms = page.context["inline_admin_formsets"][0].formset.forms
    index = {form.instance.user_id: n for n, form in enumerate(forms)}
    data[f"memberships-{index[world.viewer.pk]}-role"] = Role.DEVELOPER
    data[f"memberships-{index[world.admin.pk]}-DELETE"] = "on"
    total = len(forms)
    data["memberships-TOTAL_FORMS"] = str(total + 1)
    data[f"memberships-{total}-user"] = str(world.outsider.pk)
    data[f"memberships-{total}-role"] = Role.VIEWER
    before = Event.objects.count()

    response = browser.post(url(Workspace, "change", world.acme.pk), data)

    assert response.status_code == 302
    roles = dict(Membership.objects.filter(workspace=world.acme).values_list("user_id", "role"))
    assert roles[world.viewer.pk] == Role.DEVELOPER
    assert world.admin.pk not in roles
    assert roles[world.outsider.pk] == Role.VIEWER
    types = sorted(Event.objects.filter(pk__gt=before).values_list("type", flat=True))
    assert types == [
        "workspace.member_added",
        "workspace.member_removed",
        "workspace.member_updated",
    ]
    assert Event.objects.get(type="workspace.member_updated").actor_id is not None


def test_a_workspace_keeps_an_owner(browser, world):
    page = browser.get(url(Workspace, "change", world.acme.pk))
    data = form_data(page)
    forms = page.context["inline_admin_formsets"][0].formset.forms
    owner_form = next(n for n, form in enumerate(forms) if form.instance.user_id == world.owner.pk)
    data[f"memberships-{owner_form}-role"] = Role.ADMIN
    response = browser.post(url(Workspace, "change", world.acme.pk), data)
    assert response.status_code == 200
    assert "at least one owner" in response.content.decode()
    assert Membership.objects.get(workspace=world.acme, user=world.owner).role == Role.OWNER

    # Handing over ownership in the same save is fine.
    dev_form = next(
        n for n, form in enumerate(forms) if form.instance.user_id == world.developer.pk
    )
    data[f"memberships-{dev_form}-role"] = Role.OWNER
    assert browser.post(url(Workspace, "change", world.acme.pk), data).status_code == 302
    roles = dict(Membership.objects.filter(workspace=world.acme).values_list("user_id", "role"))
    assert (roles[world.owner.pk], roles[world.developer.pk]) == (Role.ADMIN, Role.OWNER)


def test_the_last_owner_membership_cannot_be_deleted(browser, world):
    membership = Membership.objects.get(workspace=world.acme, user=world.owner)
    response = browser.post(url(Membership, "delete", membership.pk), {"post": "yes"}, follow=True)
    assert any("last owner" in message for message in messages_of(response))
    assert Membership.objects.filter(pk=membership.pk).exists()

    other = Membership.objects.get(workspace=world.acme, user=world.viewer)
    browser.post(url(Membership, "delete", other.pk), {"post": "yes"})
    assert not Membership.objects.filter(pk=other.pk).exists()
    assert Event.objects.filter(type="workspace.member_removed").count() == 1


def test_invitations_are_read_only(browser, world, root):
    request = type("Request", (), {"user": root})()
    invitation_admin = admin.site._registry[Invitation]
    assert not invitation_admin.has_add_permission(request)
    assert not invitation_admin.has_change_permission(request)
    assert browser.get(url(Invitation, "add")).status_code == 403


# Projects ---------------------------------------------------------------------------------


def test_projects_added_and_changed_in_the_admin_record_events(browser, world):
    response = browser.post(
        url(Project, "add"),
        {
            "workspace": world.acme.pk,
            "name": "Admin made",
            "description": "From the admin",
            "visibility": "internal",
            "created_by": world.developer.pk,
        },
    )
    assert response.status_code == 302
    project = Project.objects.get(name="Admin made")
    assert project.created_by == world.developer
    assert list(project.members.values_list("user_id", flat=True)) == [world.developer.pk]
    created = Event.objects.get(type="project.created", project_id=project.pk)
    assert created.data["project"]["name"] == "Admin made"

    page = browser.get(url(Project, "change", project.pk))
    data = form_data(page)
    data.update(name="Renamed", status="archived")
    data["members-TOTAL_FORMS"] = "2"
    data["members-1-user"] = str(world.viewer.pk)
    assert browser.post(url(Project, "change", project.pk), data).status_code == 302

    project.refresh_from_db()
    assert (project.name, project.status) == ("Renamed", "archived")
    updated = Event.objects.get(type="project.updated", project_id=project.pk)
    assert updated.changes["name"] == {"previous": "Admin made", "current": "Renamed"}
    assert updated.actor_id is not None
    assert Event.objects.filter(type="member.added", project_id=project.pk).count() == 1
    assert ProjectMember.objects.filter(project=project, user=world.viewer).exists()


def test_project_admin_keeps_the_services_rules(browser, world):
    response = browser.post(
        url(Project, "add"),
        {
            "workspace": world.acme.pk,
            "name": "Nope",
            "visibility": "private",
            "created_by": world.outsider.pk,
        },
    )
    assert "created_by" in response.context["adminform"].form.errors
    assert not Project.objects.filter(name="Nope").exists()

    page = browser.get(url(Project, "change", world.project.pk))
    data = form_data(page)
    data["members-TOTAL_FORMS"] = str(int(data["members-TOTAL_FORMS"]) + 1)
    data[f"members-{int(data['members-TOTAL_FORMS']) - 1}-user"] = str(world.outsider.pk)
    response = browser.post(url(Project, "change", world.project.pk), data)
    assert response.status_code == 200
    assert "Not members of the project&#x27;s workspace" in response.content.decode()

    Project.objects.filter(pk=world.project.pk).update(status="archived")
    page = browser.get(url(Project, "change", world.project.pk))
    data = form_data(page)
    data.update(name="Still archived")
    response = browser.post(url(Project, "change", world.project.pk), data)
    assert response.status_code == 200
    assert "archived and read-only" in response.content.decode()
    data.update(status="active")
    assert browser.post(url(Project, "change", world.project.pk), data).status_code == 302


def test_deleting_a_project_in_the_admin_records_the_event(browser, world):
    project_id = world.project.pk
    response = browser.post(url(Project, "delete", project_id), {"post": "yes"})
    assert response.status_code == 302
    assert not Project.objects.filter(pk=project_id).exists()
    assert Event.objects.filter(type="project.deleted", project_id=project_id).count() == 1


# Events -----------------------------------------------------------------------------------


def test_the_event_log_is_read_only(browser, world, root):
    with transaction.atomic():
        event = event_record(
            type="issue.created",
            workspace_id=world.acme.pk,
            project_id=world.project.pk,
            actor=world.owner,
            data={"issue": {"id": 1}},
        )
    request = type("Request", (), {"user": root})()
    event_admin = admin.site._registry[Event]
    assert not event_admin.has_add_permission(request)
    assert not event_admin.has_change_permission(request, event)
    assert not event_admin.has_delete_permission(request, event)

    listed = browser.get(url(Event, "changelist"), {"type": "issue.created"})
    assert [e.pk for e in listed.context["cl"].result_list] == [event.pk]
    assert "delete_selected" not in listed.context["cl"].model_admin.get_actions(
        listed.wsgi_request
    )
    assert browser.get(url(Event, "add")).status_code == 403
    assert browser.get(url(Event, "change", event.pk)).status_code == 200  # view only
    assert browser.post(url(Event, "delete", event.pk), {"post": "yes"}).status_code == 403
    assert browser.post(url(Event, "change", event.pk), {"type": "x"}).status_code == 403
    assert Event.objects.get(pk=event.pk).type == "issue.created"


# Single-line fields -------------------------------------------------------------------------

HEADER_INJECTION = "x\r\nBcc: y@collab.test"
ONE_LINE_INPUTS = {"text", "email", "url", "search", "tel"}


def _one_line_text_fields(form_class) -> list[str]:
    return [
        name
        for name, field in form_class.base_fields.items()
        if isinstance(field, forms.CharField)
        and getattr(field.widget, "input_type", None) in ONE_LINE_INPUTS
    ]


def _admin_forms():
    """(model, view, fields): every registered admin's add and change form that a superuser
    may post and that has one-line text fields, found without a database."""
    superuser = User(email="sweep@collab.test", is_staff=True, is_superuser=True)
    request = type("Request", (), {"user": superuser, "method": "POST", "GET": {}, "POST": {}})()
    for model, model_admin in admin.site._registry.items():
        pages = (
            ("add", model_admin.has_add_permission(request), None),
            ("change", model_admin.has_change_permission(request), model()),
        )
        for view, allowed, obj in pages:
            fields = _one_line_text_fields(model_admin.get_form(request, obj)) if allowed else []
            if fields:
                yield pytest.param(model, view, fields, id=f"{model._meta.label_lower}-{view}")


ADMIN_FORMS = list(_admin_forms())


def test_the_sweep_finds_the_admin_forms_with_one_line_fields():
    found = {(param.values[0], param.values[1]): param.values[2] for param in ADMIN_FORMS}
    assert found[(User, "add")] == ["email", "name"]
    assert {"handle", "name"} <= set(found[(User, "change")])
    assert found[(Workspace, "add")] == ["name", "owner_email"]
    assert found[(ApiKey, "add")] == ["name", "projects", "expires_in"]
    assert (Group, "add") in found  # Django's own admins too
    for model in (Project, Issue, Label, Repository, PullRequest):
        assert any(found_model is model for found_model, _view in found), model


@pytest.fixture
def one_of_each(world):
    """A row of every model whose admin change form has one-line text fields."""
    make_api_key(world.developer, ["projects:read"])
    Label.objects.create(project=world.project, name="bug")
    make_issue(world.project, actor=world.owner)
    PullRequestFactory(repository=RepositoryFactory(project=world.project))
    Group.objects.create(name="operators")
    return world


def _row(instance) -> dict:
    return {field.attname: getattr(instance, field.attname) for field in instance._meta.fields}


@pytest.mark.parametrize(("model", "view", "fields"), ADMIN_FORMS)
def test_every_admin_form_refuses_control_characters_in_its_one_line_fields(
    browser, one_of_each, model, view, fields
):
    if view == "add":
        page = url(model, "add")
        instance = None
    else:
        instance = model._default_manager.order_by("pk").first()
        page = url(model, "change", instance.pk)
    before_rows = {row.pk: _row(row) for row in model._default_manager.all()}
    events = Event.objects.count()
    form = browser.get(page)
    assert form.status_code == 200
    data = form_data(form)
    for name in fields:
        data[name] = HEADER_INJECTION

    response = browser.post(page, data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    for name in fields:
        assert any("Control characters (here U+000D)" in message for message in errors[name]), (
            name,
            errors,
        )
    assert {row.pk: _row(row) for row in model._default_manager.all()} == before_rows
    assert Event.objects.count() == events


def test_inline_and_list_editable_forms_refuse_control_characters_too(rf, root, world):
    """No registered inline or change list edits a one-line text field today; the site guards
    them all the same."""

    class ProjectInline(admin.TabularInline):
        model = Project
        fields = ("name", "created_by")
        extra = 1

    class WorkspaceWithProjects(admin.ModelAdmin):
        inlines = [ProjectInline]

    class EditableProjects(admin.ModelAdmin):
        list_display = ("id", "name")
        list_editable = ("name",)

    site = AdminSite(name="sweep")
    site.register(Workspace, WorkspaceWithProjects)
    site.register(Project, EditableProjects)
    request = rf.post("/")
    request.user = root

    [(formset_class, _inline)] = site._registry[Workspace].get_formsets_with_inlines(
        request, world.acme
    )
    prefix = formset_class.get_default_prefix()
    formset = formset_class(
        {
            f"{prefix}-TOTAL_FORMS": "1",
            f"{prefix}-INITIAL_FORMS": "0",
            f"{prefix}-0-name": HEADER_INJECTION,
            f"{prefix}-0-created_by": str(world.owner.pk),
        },
        instance=world.acme,
        prefix=prefix,
    )
    assert not formset.is_valid()
    assert "Control characters" in formset.errors[0]["name"][0]

    changelist_formset = site._registry[Project].get_changelist_formset(request)
    rows = changelist_formset(
        {
            "form-TOTAL_FORMS": "1",
            "form-INITIAL_FORMS": "1",
            "form-0-id": str(world.project.pk),
            "form-0-name": HEADER_INJECTION,
        },
        queryset=Project.objects.filter(pk=world.project.pk),
    )
    assert not rows.is_valid()
    assert "Control characters" in rows.errors[0]["name"][0]
    world.project.refresh_from_db()
    assert world.project.name == "Rocket"
