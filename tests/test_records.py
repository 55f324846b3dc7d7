"""One home for each output shape, and no "" for an absent value.

Records built by hand live in each app's ``records.py`` as a ``TypedDict`` and its builder;
the schema describes them with output serializers. The first tests hold each pair together
(same fields, same nullability, compatible types), and fail on a record type nobody paired.
The last walks every record type the API answers, built from the barest rows (nothing
optional filled in), and finds no "" outside the free text a caller writes (docs/guide/index.md).
"""

import importlib
import types
import typing
from pathlib import Path

import pytest
from django.apps import apps as django_apps
from django.conf import settings
from django.db import transaction
from rest_framework import serializers

from comments import records as comment_records
from comments import serializers as comment_serializers
from comments.models import Comment
from comments.services import comment_create, comment_update
from events.services import event_record
from gitintegration import records as git_records
from gitintegration import serializers as git_serializers
from issues import records as issue_records
from issues import serializers as issue_serializers
from notifications import records as notification_records
from notifications import serializers as notification_serializers
from notifications.models import Delivery, DeliveryAttempt
from tests.accounts.test_api_keys import jwt_client
from tests.conftest import assert_ok, client_for
from tests.factories import (
    CommitFactory,
    PullRequestFactory,
    RepositoryFactory,
    ReviewFactory,
    WebhookFactory,
    make_issue,
)

ROOT = Path(settings.BASE_DIR)

# record type -> (the output serializer the schema shows, fields only the serializer has and
# why). A new TypedDict in a records.py must be added here.
PAIRS = {
    git_records.RepositoryRecord: (git_serializers.RepositorySerializer, {}),
    git_records.BranchRecord: (git_serializers.BranchSerializer, {}),
    git_records.CommitRecord: (git_serializers.CommitSerializer, {}),
    git_records.PullRequestRecord: (git_serializers.PullRequestSerializer, {}),
    git_records.ReviewRecord: (git_serializers.ReviewSerializer, {}),
    issue_records.IssueRecord: (
        issue_serializers.IssueSerializer,
        {"highlights": "added to the rows of a list asked with highlight=true"},
    ),
    comment_records.CommentRecord: (comment_serializers.CommentSerializer, {}),
    comment_records.CommentRevisionRecord: (comment_serializers.CommentRevisionSerializer, {}),
    issue_records.LabelRecord: (issue_serializers.LabelSerializer, {}),
    notification_records.WebhookRecord: (
        notification_serializers.WebhookSerializer,
        {"secret": "added to the creation's answer only, when the server made the secret"},
    ),
}

# What each annotation may be described by in the schema.
FIELD_TYPES = {
    int: (serializers.IntegerField,),
    bool: (serializers.BooleanField,),
    str: (serializers.CharField, serializers.ChoiceField, serializers.DateTimeField),
    list: (serializers.ListField,),
}


def _records_modules():
    for config in django_apps.get_app_configs():
        if Path(config.path).parent == ROOT and (Path(config.path) / "records.py").exists():
            yield importlib.import_module(f"{config.name}.records")


def _typed_dicts(module) -> list[type]:
    return [
        value
        for value in vars(module).values()
        if typing.is_typeddict(value) and value.__module__ == module.__name__
    ]


def _split(annotation) -> tuple[type, bool]:
    """(the base type, whether None is allowed) of ``int | None``, ``list[str]`` and so on."""
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        rest = [arg for arg in args if arg is not type(None)]
        assert len(rest) == 1, annotation
        return _split(rest[0])[0], type(None) in args
    return typing.get_origin(annotation) or annotation, False


def test_every_record_type_is_paired_with_its_serializer():
    found = {typed for module in _records_modules() for typed in _typed_dicts(module)}
    assert found, "no records.py found"
    assert found - set(PAIRS) == set(), "pair each new record type in PAIRS"


@pytest.mark.parametrize("record", list(PAIRS), ids=lambda record: record.__name__)
def test_record_and_serializer_describe_the_same_fields(record):
    serializer_class, only_in_serializer = PAIRS[record]
    fields = serializer_class().fields
    hints = typing.get_type_hints(record)
    assert set(hints) == set(fields) - set(only_in_serializer)
    for name, annotation in hints.items():
        base, nullable = _split(annotation)
        field = fields[name]
        assert field.allow_null == nullable, f"{record.__name__}.{name}: nullability differs"
        assert isinstance(field, FIELD_TYPES[base]), f"{record.__name__}.{name}: {field!r}"


# Text a caller (or a git author) writes: "" when they wrote nothing. Everything else the server
# fills in, and shows as null while it has nothing to show.
FREE_TEXT = {"description", "body", "message", "author_name", "author_email", "name"}
# Not records: what a receiver answered, as it answered it.
VERBATIM = {"response_excerpt"}


def _empty_strings(value, path="") -> list[str]:
    if isinstance(value, dict):
        found = []
        for key, item in value.items():
            if key in VERBATIM or key == "request_headers":
                continue
            if item == "" and key not in FREE_TEXT:
                found.append(f"{path}.{key}")
            found += _empty_strings(item, f"{path}.{key}")
        return found
    if isinstance(value, list):
        return [hit for n, item in enumerate(value) for hit in _empty_strings(item, f"{path}[{n}]")]
    return []


@pytest.fixture
def bare(world):
    """One row of every record type, with nothing optional filled in."""
    project = world.project
    issue = make_issue(project, world.owner, title="Bare")
    unsynced = RepositoryFactory(project=project, default_branch="", name="unsynced")
    repository = RepositoryFactory(project=project)
    CommitFactory(repository=repository, author_name="", author_email="", message="")
    pull = PullRequestFactory(repository=repository)
    ReviewFactory(pull_request=pull)
    comment = comment_create(parent=issue, actor=world.owner, body="First")
    comment_create(parent=pull, actor=world.owner, body="On the pull request")
    comment_update(comment=Comment.objects.get(pk=comment["id"]), actor=world.owner, body="Edited")
    webhook = WebhookFactory(project=project)
    with transaction.atomic():
        event = event_record(type="project.updated", workspace_id=project.workspace_id, data={})
    delivery = Delivery.objects.create(webhook=webhook, event=event)
    DeliveryAttempt.objects.create(delivery=delivery, number=1, status_code=200)
    return types.SimpleNamespace(
        issue=issue,
        comment_id=comment["id"],
        unsynced=unsynced,
        repository=repository,
        pull=pull,
        webhook=webhook,
        delivery=delivery,
    )


def test_no_record_shows_an_absent_value_as_an_empty_string(world, bare):
    client = client_for(world.owner)
    project = world.project
    paths = [
        "/v1/users/me",
        "/v1/users",
        "/v1/workspaces",
        f"/v1/workspaces/{world.acme.pk}/members",
        f"/v1/workspaces/{world.acme.pk}/invitations",
        "/v1/rate_limit",
        "/v1/projects",
        f"/v1/projects/{project.pk}",
        f"/v1/projects/{project.pk}/members",
        f"/v1/projects/{project.pk}/issues",
        f"/v1/issues/{bare.issue.pk}",
        f"/v1/issues/{bare.issue.pk}/history",
        f"/v1/projects/{project.pk}/labels",
        f"/v1/projects/{project.pk}/repositories",
        f"/v1/repositories/{bare.unsynced.pk}",
        f"/v1/repositories/{bare.repository.pk}/branches",
        f"/v1/repositories/{bare.repository.pk}/pulls",
        f"/v1/pulls/{bare.pull.pk}",
        f"/v1/pulls/{bare.pull.pk}/reviews",
        f"/v1/issues/{bare.issue.pk}/comments",
        f"/v1/pulls/{bare.pull.pk}/comments",
        f"/v1/comments/{bare.comment_id}",
        f"/v1/comments/{bare.comment_id}/history",
        f"/v1/projects/{project.pk}/webhooks",
        f"/v1/webhooks/{bare.webhook.pk}/deliveries",
        f"/v1/webhooks/{bare.webhook.pk}/deliveries/{bare.delivery.pk}",
        "/v1/events",
        f"/v1/projects/{project.pk}/metrics",
        f"/v1/projects/{project.pk}/dashboard",
    ]
    client.post(f"/v1/workspaces/{world.acme.pk}/invitations", {"email": "new@acme.test"})
    client.post(f"/v1/projects/{project.pk}/labels", {"name": "bare"})
    found = {}
    keys = assert_ok(jwt_client(world.owner).get("/v1/api-keys"))["data"]
    if _empty_strings(keys):
        found["/v1/api-keys"] = _empty_strings(keys)
    for path in paths:
        body = assert_ok(client.get(path))
        hits = _empty_strings(body["data"])
        if hits:
            found[path] = hits
    assert found == {}
