"""Names, titles and other one-line fields refuse control characters (422 naming the field),
on every write route that takes one: a line break in a name once stopped that user's emails.

Two sweeps: every writable text field of every input serializer is either single-line
(``collab.api.fields.single_line``) or listed below as free text or an opaque value; and each
such field, sent with a line break on its route, answers 422 and changes nothing."""

import pytest
from drf_spectacular.generators import SchemaGenerator
from oauth2_provider.models import Application
from rest_framework import serializers
from rest_framework_simplejwt.tokens import AccessToken

from accounts import services as account_services
from accounts.models import ApiKey, Invitation, User, Workspace
from collab.api.fields import single_line
from gitintegration.models import PullRequest, Repository
from integrations.oauth import oauth_app_create
from integrations.services import service_account_create
from issues.models import Issue, Label
from notifications.models import Webhook
from projects.models import Project
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import PullRequestFactory, RepositoryFactory, WebhookFactory, make_issue

INJECTED = "Release\r\nBcc: victim@example.com"

# Text that may span lines (Markdown, descriptions), and values that are not text for people
# and are checked on their own terms (a password, a secret, a token, an email address).
FREE_TEXT = {"description", "body"}
OPAQUE = {"password", "secret", "token", "refresh_token", "email"}
# Values a fully anchored pattern of characters that excludes control characters checks.
FORMATTED = {"color"}


def _write_routes():
    """Every write route's request serializer, as the schema states it: (method, path, it)."""
    generator = SchemaGenerator()
    generator._initialise_endpoints()
    for path, path_regex, method, callback in generator.endpoints:
        if method not in ("POST", "PUT", "PATCH"):
            continue
        view = generator.create_view(callback, method)
        view.schema.method, view.schema.path, view.schema.path_regex = method, path, path_regex
        serializer = view.schema.get_request_serializer()
        if isinstance(serializer, type):
            serializer = serializer()
        if isinstance(serializer, serializers.Serializer):
            yield method, path, serializer


def _text_fields(serializer):
    for name, field in serializer.fields.items():
        if field.read_only:
            continue
        if isinstance(field, serializers.ListField):
            field = field.child
        if isinstance(field, serializers.CharField) and not isinstance(
            field, serializers.EmailField
        ):
            yield name, field


def _single_line_fields():
    """(method, path, field) of every one-line text field a write route takes, and the fields
    that take text without the guard."""
    guarded, unguarded = set(), set()
    for method, path, serializer in _write_routes():
        for name, field in _text_fields(serializer):
            if name in FREE_TEXT | OPAQUE | FORMATTED:
                continue
            if single_line in field.validators:
                guarded.add((method, path, name))
            else:
                unguarded.add((method, path, type(serializer).__name__, name))
    return guarded, unguarded


def test_every_one_line_field_of_every_write_route_is_guarded_and_tried_below():
    guarded, unguarded = _single_line_fields()
    assert len(guarded) > 20  # the walk found the routes
    assert unguarded == set()
    # Each is sent a control character below: a new route or field adds its case.
    assert guarded - set(CASES) == set()


def test_single_line_refuses_every_control_character_and_nothing_else():
    refused = [chr(c) for c in [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029]]
    for character in refused:
        with pytest.raises(serializers.ValidationError):
            single_line(f"a{character}b")
    for fine in ["Zoë Ünïcode — “quoted” ✓", "a b", "日本語の名前", "emoji 🚀", ""]:
        single_line(fine)


@pytest.fixture
def targets(world):
    """One of everything a single-line field can be written on, in the owner's project."""
    repository = RepositoryFactory(project=world.project)
    label = Label.objects.create(project=world.project, name="bug")
    _, token = account_services.invitation_create(
        workspace=world.acme,
        inviter=world.owner,
        email="new@example.com",
        role="developer",
        projects=[],
    )
    jwt = client_for()
    jwt.credentials(HTTP_AUTHORIZATION=f"Bearer {AccessToken.for_user(world.owner)}")
    return {
        "api": client_for(world.owner),
        "jwt": jwt,
        "anonymous": client_for(),
        "project": world.project,
        "workspace": world.acme,
        "issue": make_issue(world.project, world.owner, title="Fine title"),
        "label": label,
        "repository": repository,
        "pull": PullRequestFactory(repository=repository),
        "webhook": WebhookFactory(project=world.project),
        "invitation_token": token,
        "robot": service_account_create(workspace=world.acme, actor=world.owner, name="Bot"),
        "app": oauth_app_create(workspace=world.acme, actor=world.owner, **APP)[0],
    }


def case(client, path, body, details_key, model, column):
    return (client, path, body, details_key, model, column)


PROJECT = "/v1/projects/{project}"
REPOSITORY = {"name": "repo", "clone_url": "https://git.example.test/r.git"}
PULL = {"title": "Fine", "head": "feature", "base": "main"}
HOOK = {"url": "http://127.0.0.1:9/h", "events": ["*"]}
KEY = {"name": "ci", "scopes": ["projects:read"]}
APP = {
    "name": "App",
    "client_type": "confidential",
    "redirect_uris": ["https://app.example.test/callback"],
    "scopes": ["issues:read"],
}
ACCEPT = {"token": "{invitation_token}", "name": "Nina", "password": "violet-Trombone-42"}

# (method, the schema's path, field) -> the client, the path, a body with a control character
# in that field, the key details name, and the model and column that must not change.
CASES = {
    ("PATCH", "/v1/users/me", "name"): case(
        "api", "/v1/users/me", {"name": INJECTED}, "name", User, "name"
    ),
    ("PATCH", "/v1/users/me", "handle"): case(
        "api", "/v1/users/me", {"handle": "a\nb"}, "handle", User, "handle"
    ),
    ("POST", "/v1/invitations/accept", "name"): case(
        "anonymous", "/v1/invitations/accept", {**ACCEPT, "name": INJECTED}, "name", User, "name"
    ),
    ("POST", "/v1/workspaces", "name"): case(
        "api", "/v1/workspaces", {"name": INJECTED}, "name", Workspace, "name"
    ),
    ("POST", "/v1/api-keys", "name"): case(
        "jwt", "/v1/api-keys", {**KEY, "name": INJECTED}, "name", ApiKey, "name"
    ),
    ("POST", "/v1/api-keys", "expiresIn"): case(
        "jwt", "/v1/api-keys", {**KEY, "expiresIn": "90\nd"}, "expiresIn", ApiKey, "name"
    ),
    ("POST", "/v1/projects", "name"): case(
        "api", "/v1/projects", {"name": INJECTED}, "name", Project, "name"
    ),
    ("PUT", "/v1/projects/{pk}", "name"): case(
        "api", PROJECT, {"name": INJECTED}, "name", Project, "name"
    ),
    ("PATCH", "/v1/projects/{pk}", "name"): case(
        "api", PROJECT, {"name": "a\tb"}, "name", Project, "name"
    ),
    ("POST", "/v1/projects/{project_id}/issues", "title"): case(
        "api", PROJECT + "/issues", {"title": INJECTED}, "title", Issue, "title"
    ),
    ("POST", "/v1/projects/{project_id}/issues", "labels"): case(
        "api",
        PROJECT + "/issues",
        {"title": "Fine", "labels": ["ok", "bad\nlabel"]},
        "labels.1",
        Label,
        "name",
    ),
    ("PUT", "/v1/issues/{pk}", "title"): case(
        "api", "/v1/issues/{issue}", {"title": INJECTED}, "title", Issue, "title"
    ),
    ("PUT", "/v1/issues/{pk}", "labels"): case(
        "api", "/v1/issues/{issue}", {"title": "T", "labels": ["a\rb"]}, "labels.0", Label, "name"
    ),
    ("PATCH", "/v1/issues/{pk}", "title"): case(
        "api", "/v1/issues/{issue}", {"title": "a\x85b"}, "title", Issue, "title"
    ),
    ("PATCH", "/v1/issues/{pk}", "labels"): case(
        "api", "/v1/issues/{issue}", {"labels": ["a\u2028b"]}, "labels.0", Label, "name"
    ),
    ("POST", "/v1/projects/{project_id}/labels", "name"): case(
        "api", PROJECT + "/labels", {"name": INJECTED}, "name", Label, "name"
    ),
    ("PUT", "/v1/labels/{pk}", "name"): case(
        "api", "/v1/labels/{label}", {"name": INJECTED}, "name", Label, "name"
    ),
    ("PATCH", "/v1/labels/{pk}", "name"): case(
        "api", "/v1/labels/{label}", {"name": "a\x7fb"}, "name", Label, "name"
    ),
    ("POST", "/v1/projects/{project_id}/repositories", "name"): case(
        "api",
        PROJECT + "/repositories",
        {**REPOSITORY, "name": "repo\nx"},
        "name",
        Repository,
        "name",
    ),
    ("POST", "/v1/projects/{project_id}/repositories", "clone_url"): case(
        "api",
        PROJECT + "/repositories",
        {**REPOSITORY, "clone_url": "https://git.example.test/r\x00.git"},
        "clone_url",
        Repository,
        "clone_url",
    ),
    ("POST", "/v1/repositories/{repository_id}/pulls", "title"): case(
        "api",
        "/v1/repositories/{repository}/pulls",
        {**PULL, "title": INJECTED},
        "title",
        PullRequest,
        "title",
    ),
    ("POST", "/v1/repositories/{repository_id}/pulls", "head"): case(
        "api",
        "/v1/repositories/{repository}/pulls",
        {**PULL, "head": "feat\rure"},
        "head",
        PullRequest,
        "head",
    ),
    ("POST", "/v1/repositories/{repository_id}/pulls", "base"): case(
        "api",
        "/v1/repositories/{repository}/pulls",
        {**PULL, "base": "ma\x1bin"},
        "base",
        PullRequest,
        "base",
    ),
    ("PATCH", "/v1/pulls/{pk}", "title"): case(
        "api", "/v1/pulls/{pull}", {"title": INJECTED}, "title", PullRequest, "title"
    ),
    ("POST", "/v1/projects/{project_id}/webhooks", "url"): case(
        "api",
        PROJECT + "/webhooks",
        {**HOOK, "url": "http://127.0.0.1:9/h\x01"},
        "url",
        Webhook,
        "url",
    ),
    ("POST", "/v1/projects/{project_id}/webhooks", "events"): case(
        "api", PROJECT + "/webhooks", {**HOOK, "events": ["issue.\n*"]}, "events.0", Webhook, None
    ),
    ("POST", "/v1/workspaces/{workspace_id}/webhooks", "url"): case(
        "api",
        "/v1/workspaces/{workspace}/webhooks",
        {**HOOK, "url": "http://127.0.0.1:9/h\x01"},
        "url",
        Webhook,
        "url",
    ),
    ("POST", "/v1/workspaces/{workspace_id}/webhooks", "events"): case(
        "api",
        "/v1/workspaces/{workspace}/webhooks",
        {**HOOK, "events": ["issue.\n*"]},
        "events.0",
        Webhook,
        None,
    ),
    ("PATCH", "/v1/webhooks/{pk}", "url"): case(
        "api",
        "/v1/webhooks/{webhook}",
        {"url": "http://127.0.0.1:9/h\x1b[2J"},
        "url",
        Webhook,
        "url",
    ),
    ("PATCH", "/v1/webhooks/{pk}", "events"): case(
        "api", "/v1/webhooks/{webhook}", {"events": ["issue\t.*"]}, "events.0", Webhook, None
    ),
    ("POST", "/v1/workspaces/{workspace_id}/service-accounts", "name"): case(
        "api",
        "/v1/workspaces/{workspace}/service-accounts",
        {"name": INJECTED},
        "name",
        User,
        "name",
    ),
    ("PATCH", "/v1/service-accounts/{pk}", "name"): case(
        "api", "/v1/service-accounts/{robot}", {"name": INJECTED}, "name", User, "name"
    ),
    ("POST", "/v1/service-accounts/{pk}/keys", "name"): case(
        "jwt",
        "/v1/service-accounts/{robot}/keys",
        {**KEY, "name": INJECTED},
        "name",
        ApiKey,
        "name",
    ),
    ("POST", "/v1/workspaces/{workspace_id}/oauth-apps", "name"): case(
        "jwt",
        "/v1/workspaces/{workspace}/oauth-apps",
        {**APP, "name": INJECTED},
        "name",
        Application,
        "name",
    ),
    ("POST", "/v1/workspaces/{workspace_id}/oauth-apps", "redirect_uris"): case(
        "jwt",
        "/v1/workspaces/{workspace}/oauth-apps",
        {**APP, "redirect_uris": ["https://app.example.test/c\x01b"]},
        "redirect_uris.0",
        Application,
        "redirect_uris",
    ),
    ("PATCH", "/v1/oauth-apps/{pk}", "name"): case(
        "api", "/v1/oauth-apps/{app}", {"name": INJECTED}, "name", Application, "name"
    ),
    ("PATCH", "/v1/oauth-apps/{pk}", "redirect_uris"): case(
        "api",
        "/v1/oauth-apps/{app}",
        {"redirect_uris": ["https://app.example.test/c\nb"]},
        "redirect_uris.0",
        Application,
        "redirect_uris",
    ),
    ("POST", "/v1/service-accounts/{pk}/keys", "expiresIn"): case(
        "jwt",
        "/v1/service-accounts/{robot}/keys",
        {**KEY, "expiresIn": "90\nd"},
        "expiresIn",
        ApiKey,
        "name",
    ),
}


def _fill(value, targets):
    if isinstance(value, str):
        return value.format(
            **{k: getattr(v, "pk", v) for k, v in targets.items() if not hasattr(v, "get")}
        )
    if isinstance(value, dict):
        return {k: _fill(v, targets) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, targets) for v in value]
    return value


def _snapshot(model, column):
    rows = model.objects.order_by("pk")
    return list(rows.values_list("pk", column)) if column else list(rows.values_list("pk"))


@pytest.mark.parametrize(("route", "case"), CASES.items(), ids=[" ".join(route) for route in CASES])
def test_a_control_character_in_a_single_line_field_is_422(targets, route, case):
    method = route[0].lower()
    client, path, body, field, model, column = case
    before = _snapshot(model, column)

    response = getattr(targets[client], method)(
        _fill(path, targets), _fill(body, targets), format="json"
    )

    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert field in error["details"], error
    assert any("single line" in message for message in error["details"][field])
    assert _snapshot(model, column) == before


def test_bulk_items_refuse_a_control_character_each_on_its_own(targets):
    project = targets["project"]
    body = {"items": [{"title": "Fine"}, {"title": INJECTED}]}

    response = targets["api"].post(f"/v1/projects/{project.pk}/issues/bulk", body, format="json")

    results = assert_ok(response)["data"]
    assert [r["status"] for r in results] == [201, 422]
    assert "title" in results[1]["error"]["details"]
    assert not Issue.objects.filter(title__contains="\n").exists()
    assert Invitation.objects.filter(status="pending").count() == 1  # untouched
