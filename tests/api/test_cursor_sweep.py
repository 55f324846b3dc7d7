"""Every list route of the schema, swept (docs/guide/pagination.md): walked by cursor it gives
every row once, in the order pages by number give, for the same queries as page 1 and without
an OFFSET. The crowd it walks (three rows or more in every list) is made once for the module;
the cursor's own rules are tested in test_cursor_pagination.py.
"""

import copy
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from accounts.services import invitation_create
from comments import services as comment_services
from comments.models import Comment
from events.services import event_record
from gitintegration import services as git_services
from gitintegration.models import Branch
from integrations.models import ServiceAccount
from integrations.oauth import app_authorization_grant, oauth_app_create
from integrations.services import service_account_create, service_account_key_issue
from issues import services as issue_services
from issues.models import Issue
from notifications.models import Delivery
from tests.api.paging import captured, walk, whole, with_query
from tests.conftest import assert_ok, client_for, jwt_client
from tests.factories import (
    CommitFactory,
    MembershipFactory,
    ProjectFactory,
    PullRequestFactory,
    RepositoryFactory,
    ReviewFactory,
    WebhookFactory,
    WorkspaceFactory,
    completed_export,
    make_api_key,
    make_issue,
)
from tests.gitorigin import Origin
from transfer.models import Export


@pytest.fixture(scope="module")
def crowd_once(swept_once, module_db, tmp_path_factory, five_commits):
    """The swept world (tests/api/conftest.py) with at least three rows in every list the
    owner can read, and a real git repository whose main branch has five commits: made once
    for the module (tests/conftest.py's ``module_db``), whose tests only read it."""
    world, known = swept_once
    folder = tmp_path_factory.mktemp("crowd")
    with override_settings(GIT_STORAGE_DIR=folder / "mirrors"):
        with module_db.unblock():
            known = crowd_build(world, known, five_commits.copy_to(folder))
        yield world, known


@pytest.fixture
def crowd(crowd_once, db):
    """``crowd_once``, as a test's own: the world's instances are a copy."""
    world, known = crowd_once
    return copy.deepcopy(world), known


def crowd_build(world, known: dict, origin: Origin) -> dict:
    """Rows enough in every list, and a repository of ``origin``, synced: the ids, and the
    ``origin``."""
    project = world.project
    issue = Issue.objects.get(pk=known["issue"])
    for n in range(4):
        make_issue(project, world.owner, title=f"Crowd {n}", labels=[f"crowd-{n}"])
    for n in range(3):
        issue_services.issue_update(issue=issue, actor=world.owner, title=f"Swept {n}")
    ProjectFactory.create_batch(3, workspace=world.acme)
    for n in range(2):
        MembershipFactory(workspace=WorkspaceFactory(name=f"Extra {n}"), user=world.owner)
    for n in range(3):
        make_api_key(world.owner, ["projects:read"], name=f"crowd {n}")
    robot = ServiceAccount.objects.get(pk=known["service-account"])
    for n in range(3):
        service_account_create(workspace=world.acme, actor=world.owner, name=f"Crowd bot {n}")
        service_account_key_issue(account=robot, name=f"crowd {n}", scopes=["issues:read"])
    for n in range(3):
        app, _secret = oauth_app_create(
            workspace=world.acme,
            actor=world.owner,
            name=f"Crowd app {n}",
            client_type="public",
            redirect_uris=["https://app.example.test/callback"],
            scopes=["issues:read"],
        )
        app_authorization_grant(
            user=world.owner, app=app, scopes=["issues:read"], projects=[project.pk]
        )
    for n in range(3):
        invitation_create(
            workspace=world.acme,
            inviter=world.owner,
            email=f"crowd{n}@example.test",
            role="viewer",
            projects=[],
        )
    # Exports: the swept one and three more, two of them made at the same time.
    same_time = timezone.now() - timedelta(days=1)
    for n in range(3):
        export = completed_export(world.acme, world.owner)
        if n:
            Export.objects.filter(pk=export.pk).update(created_at=same_time)
    webhook = project.webhooks.get(pk=known["webhook"])
    WebhookFactory.create_batch(3, project=project, created_by=world.owner)
    WebhookFactory.create_batch(3, workspace=world.acme, project=None, created_by=world.owner)
    for n in range(3):
        event = event_record(
            type="webhook.ping",
            workspace_id=world.acme.pk,
            project_id=project.pk,
            data={"webhook": {"id": webhook.pk, "n": n}},
        )
        Delivery.objects.create(webhook=webhook, event=event)
    repository = project.repositories.get(pk=known["repository"])
    RepositoryFactory.create_batch(2, project=project)
    for name in ("main", "feature", "docs", "zeta"):
        Branch.objects.create(
            repository=repository, name=name, commit_sha="0" * 40, is_default=name == "main"
        )
    same_time = timezone.now() - timedelta(days=1)
    CommitFactory.create_batch(3, repository=repository, committed_at=same_time)
    CommitFactory.create_batch(2, repository=repository)
    PullRequestFactory.create_batch(3, repository=repository, author=world.developer)
    pull = repository.pull_requests.get(pk=known["pull"])
    ReviewFactory.create_batch(2, pull_request=pull, created_at=same_time)
    ReviewFactory(pull_request=pull)
    for n in range(3):
        comment_services.comment_create(parent=issue, actor=world.owner, body=f"Crowd {n}")
        comment_services.comment_create(parent=pull, actor=world.owner, body=f"Crowd {n}")
    # Ties on the thread's order: the last three share their time.
    Comment.objects.filter(issue=issue).exclude(pk=known["comment"]).update(created_at=same_time)
    swept_comment = Comment.objects.get(pk=known["comment"])
    for n in range(3):
        comment_services.comment_update(
            comment=swept_comment, actor=world.owner, body=f"Edited {n}"
        )

    real = git_services.repository_create(
        project=project, actor=world.owner, name="origin", clone_url=origin.url
    )
    git_services.repository_sync(repository_id=real.pk)
    return {**known, "real_repository": real.pk, "origin": origin}


# operationId: the path the sweep reads it at (with the crowd's ids), and whether it needs a JWT.
LISTS = {
    "api_keys_list": ("/v1/api-keys", True),
    "events_list": ("/v1/events", False),
    "issues_list": ("/v1/issues", False),
    "issues_history_list": ("/v1/issues/{issue}/history", False),
    "issues_comments_list": ("/v1/issues/{issue}/comments", False),
    "pulls_comments_list": ("/v1/pulls/{pull}/comments", False),
    "comments_history_list": ("/v1/comments/{comment}/history", False),
    "projects_list": ("/v1/projects", False),
    "projects_members_list": ("/v1/projects/{project}/members", False),
    "projects_issues_list": ("/v1/projects/{project}/issues", False),
    "projects_labels_list": ("/v1/projects/{project}/labels", False),
    "projects_repositories_list": ("/v1/projects/{project}/repositories", False),
    "projects_webhooks_list": ("/v1/projects/{project}/webhooks", False),
    "pulls_reviews_list": ("/v1/pulls/{pull}/reviews", False),
    "repositories_branches_list": ("/v1/repositories/{repository}/branches", False),
    "repositories_commits_list": ("/v1/repositories/{repository}/commits", False),
    "repositories_pulls_list": ("/v1/repositories/{repository}/pulls", False),
    "users_list": ("/v1/users", False),
    "webhooks_deliveries_list": ("/v1/webhooks/{webhook}/deliveries", False),
    "workspaces_list": ("/v1/workspaces", False),
    "workspaces_invitations_list": ("/v1/workspaces/{workspace}/invitations", False),
    "workspaces_members_list": ("/v1/workspaces/{workspace}/members", False),
    "workspaces_exports_list": ("/v1/workspaces/{workspace}/exports", False),
    "workspaces_webhooks_list": ("/v1/workspaces/{workspace}/webhooks", False),
    "search_list": ("/v1/search?q=crowd", False),
    "workspaces_service_accounts_list": ("/v1/workspaces/{workspace}/service-accounts", False),
    "service_accounts_keys_list": ("/v1/service-accounts/{service-account}/keys", True),
    "workspaces_oauth_apps_list": ("/v1/workspaces/{workspace}/oauth-apps", False),
    "users_me_authorizations_list": ("/v1/users/me/authorizations", True),
    "workspaces_audit_log_list": ("/v1/workspaces/{workspace}/audit-log", False),
}
# Variants of the lists above whose rows come another way: git's order of a branch.
VARIANTS = {
    "commits of a branch": ("/v1/repositories/{real_repository}/commits?branch=main", False),
    "events oldest first": ("/v1/events?sort=id", False),
    "search oldest first": ("/v1/search?q=crowd&sort=created_at", False),
}
SWEPT = {**LISTS, **VARIANTS}


def rank_index_ready() -> bool:
    from collab.db import fulltext
    from search.schema import TABLES

    return fulltext.rank_index_ready(list(TABLES))


def test_the_sweep_names_every_list_of_the_schema(document):
    listed = set()
    for operations in document["paths"].values():
        for operation in operations.values():
            if any(p["name"] == "cursor" for p in operation.get("parameters", [])):
                listed.add(operation["operationId"])
    assert listed == set(LISTS)
    # Every operation answering a page, in the schema, takes a cursor.
    for operations in document["paths"].values():
        for operation in operations.values():
            ok = operation.get("responses", {}).get("200", {})
            schema = ok.get("content", {}).get("application/json", {}).get("schema", {})
            if "$ref" in schema and "/Paginated" in schema["$ref"]:
                assert operation["operationId"] in LISTS, operation["operationId"]


def _client_and_path(crowd, name):
    world, known = crowd
    template, jwt = SWEPT[name]
    path = template.format(**known)
    return (jwt_client(world.owner) if jwt else client_for(world.owner)), path


@pytest.mark.parametrize("name", list(SWEPT))
def test_every_list_walks_by_cursor_as_it_pages_by_number(crowd, name):
    client, path = _client_and_path(crowd, name)
    client.get(path)  # the key's first use is recorded once: out of what is compared
    everything = whole(client, path)
    assert len(everything) >= 3, f"{name}: too few rows to walk"
    for per_page in (1, 2):
        assert walk(client, path, per_page) == everything, (name, per_page)
    # Pages by number hand over to cursors at any page.
    second = assert_ok(client.get(with_query(path, per_page=1, page=2)))
    third = assert_ok(
        client.get(with_query(path, per_page=1, cursor=second["meta"]["next_cursor"]))
    )
    assert third["data"] == everything[2:3]


@pytest.mark.parametrize("name", list(SWEPT))
def test_a_cursor_page_costs_the_queries_of_page_one_and_no_offset(crowd, name):
    client, path = _client_and_path(crowd, name)
    client.get(path)
    first, first_sql = captured(client, with_query(path, per_page=1))
    cursor = first["meta"]["next_cursor"]
    second, second_sql = captured(client, with_query(path, per_page=1, cursor=cursor))
    assert len(second_sql) == len(first_sql), "\n".join([*first_sql, "", *second_sql])
    # Git's order: an offset into a pinned history. Search's rank, read from the rank index
    # (PostgreSQL with RUM): its ties come in the index's order, which no keyset restates.
    by_offset = name == "commits of a branch" or (name == "search_list" and rank_index_ready())
    if not by_offset:
        assert not any(" OFFSET " in sql for sql in second_sql), "\n".join(second_sql)
