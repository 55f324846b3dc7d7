"""Conditional requests (docs/guide/conditional-requests.md), swept over every route of the URLconf.

Every 200 to a GET carries an ETag and answers 304 to it; a 304 costs no rate-limit budget;
every PUT, PATCH and DELETE with a stale ``If-Match`` answers 412 and writes nothing, and
with the current tag goes through. Two editors holding one tag: one wins, one gets 412.
"""

import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from events.models import Event
from issues.models import Issue
from tests.accounts.test_api_keys import jwt_client
from tests.api.test_methods import ENDLESS, ROUTES, _changed, _fingerprint, _path
from tests.conftest import assert_error, assert_ok, client_for
from tests.factories import make_issue
from tests.urlconf import needs_jwt

WRITES = ("PUT", "PATCH", "DELETE")
# What each write is sent: a change every route accepts or refuses on its own terms.
BODY = {"title": "Edited", "name": "Edited", "role": "developer", "active": True}
# Documents, not records: no entity tag (the metrics change with every scrape).
DOCUMENTS = {"schema", "docs", "healthz", "readyz", "metrics"}
# Analytics over a period that ends now, and a rate-limit window not yet opened (its reset is
# a window from now): the body moves with the clock, and so does its tag.
BY_THE_CLOCK = {"project-dashboard", "project-metrics", "workspace-dashboard", "rate-limit"}


def owner_client(world, name: str):
    """The owner, by JWT where only a JWT will do (API keys are managed with one)."""
    return jwt_client(world.owner) if needs_jwt(name) else client_for(world.owner)


def _allowed(client, path: str) -> set[str]:
    return {method.strip() for method in client.options(path).get("Allow", "").split(",")}


READABLE = [(name, regex) for name, regex in ROUTES if name not in DOCUMENTS | set(ENDLESS)]


@pytest.mark.parametrize(("name", "regex"), READABLE, ids=[n for n, _ in READABLE])
def test_every_get_carries_an_etag_and_answers_304_to_it(swept, name, regex):
    world, ids = swept
    client = owner_client(world, name)
    path = _path(name, regex, ids)
    if "GET" not in _allowed(client, path):
        return  # a route of writes only (its If-Match is swept below)
    first = client.get(path)
    assert first.status_code == 200, (path, first.content)
    if first.streaming and "/reports/" in path:
        return  # a report is streamed as it is read: no tag over a body not yet written
    # Otherwise a streamed answer is a stored file (an export's archive), tagged by its digest.
    assert not first.streaming or path.endswith("/download"), path
    etag = first["ETag"]
    assert etag.startswith('"') and etag.endswith('"') and len(etag) > 10
    if name in BY_THE_CLOCK:
        # Within the same second the body, and so the tag, may still be the same: then 304;
        # otherwise a 200 with the new tag, never the one asked about.
        again = client.get(path, HTTP_IF_NONE_MATCH=etag)
        assert (again.status_code, again.content) == (304, b"") or (
            again.status_code == 200 and again["ETag"] != etag
        ), path
        return
    again = client.get(path, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304, path
    assert again.content == b""
    assert again["ETag"] == etag
    assert again["X-Request-Id"]
    weak = client.get(path, HTTP_IF_NONE_MATCH=f'"other", W/{etag}')
    assert weak.status_code == 304, "If-None-Match compares weakly"
    stale = client.get(path, HTTP_IF_NONE_MATCH='"not-the-tag"')
    assert stale.status_code == 200 and stale["ETag"] == etag
    head = client.head(path, HTTP_IF_NONE_MATCH=etag)
    assert head.status_code == 304


def test_the_tag_follows_what_the_caller_reads(api, world):
    issue = make_issue(world.project, world.owner, title="Tagged", labels=["bug"])
    before = api.owner.get(f"/v1/issues/{issue.pk}")["ETag"]
    listed = api.owner.get(f"/v1/projects/{world.project.pk}/issues")["ETag"]
    label = issue.labels.get()
    assert_ok(api.owner.patch(f"/v1/labels/{label.pk}", {"name": "defect"}, format="json"))
    after = api.owner.get(f"/v1/issues/{issue.pk}", HTTP_IF_NONE_MATCH=before)
    assert after.status_code == 200, "a renamed label changes the issue's representation"
    assert after["ETag"] != before
    relisted = api.owner.get(f"/v1/projects/{world.project.pk}/issues", HTTP_IF_NONE_MATCH=listed)
    assert relisted.status_code == 200


@pytest.mark.parametrize("backend", ["database", "redis"])
def test_a_304_costs_no_budget(api, world, settings, backend):
    if backend == "redis" and not settings.REDIS_URL:
        pytest.skip("needs REDIS_URL")
    settings.RATE_LIMIT_ENABLED = True
    settings.RATE_LIMIT_BACKEND = backend
    path = f"/v1/projects/{world.project.pk}"
    first = api.owner.get(path)
    used = int(first["X-RateLimit-Used"])
    for _ in range(3):
        not_modified = api.owner.get(path, HTTP_IF_NONE_MATCH=first["ETag"])
        assert not_modified.status_code == 304
        assert int(not_modified["X-RateLimit-Used"]) == used
        assert int(not_modified["X-RateLimit-Remaining"]) == int(first["X-RateLimit-Remaining"])
    counted = api.owner.get(path)
    assert int(counted["X-RateLimit-Used"]) == used + 1
    status = assert_ok(api.owner.get("/v1/rate_limit"))["data"]
    assert status["used"] == used + 1


# A change every route takes (a bulk route its ``items``, each single route its ``title``).
STALE_WRITE = '{"title": "Edited", "items": [{"title": "Edited"}]}'
WRITABLE = [(name, regex) for name, regex in ROUTES if name not in DOCUMENTS]


@pytest.mark.parametrize(("name", "regex"), WRITABLE, ids=[n for n, _ in WRITABLE])
def test_a_stale_if_match_changes_nothing_on_every_write(swept, name, regex):
    world, ids = swept
    client = owner_client(world, name)
    path = _path(name, regex, ids)
    for method in sorted(_allowed(client, path) & set(WRITES)):
        before = _fingerprint()
        response = client.generic(
            method,
            path,
            STALE_WRITE,
            content_type="application/json",
            HTTP_IF_MATCH='"stale"',
        )
        where = f"{method} {path}"
        error = assert_error(response, 412, "PRECONDITION_FAILED")
        current = client.get(path)
        if current.status_code == 200:
            assert error["details"]["etag"] == current["ETag"] == response["ETag"], where
        assert _changed(before, _fingerprint()) == [], where


@pytest.mark.parametrize("method", WRITES)
def test_the_current_tag_lets_the_write_through(api, world, method):
    issue = make_issue(world.project, world.owner, title="Current")
    path = f"/v1/issues/{issue.pk}"
    etag = api.owner.get(path)["ETag"]
    if method == "DELETE":
        response = api.owner.delete(path, HTTP_IF_MATCH=etag)
    else:
        response = api.owner.generic(
            method,
            path,
            '{"title": "Renamed"}',
            content_type="application/json",
            HTTP_IF_MATCH=etag,
        )
    assert response.status_code == 200, response.content
    if method == "DELETE":
        assert not Issue.objects.filter(pk=issue.pk).exists()
    else:
        assert Issue.objects.get(pk=issue.pk).title == "Renamed"
        # The tag moved on: the same If-Match is stale now.
        again = api.owner.patch(path, {"title": "Again"}, format="json", HTTP_IF_MATCH=etag)
        assert_error(again, 412, "PRECONDITION_FAILED")
        assert Issue.objects.get(pk=issue.pk).title == "Renamed"


def test_if_match_star_and_lists_of_tags(api, world):
    issue = make_issue(world.project, world.owner, title="Starred")
    path = f"/v1/issues/{issue.pk}"
    etag = api.owner.get(path)["ETag"]
    starred = api.owner.patch(path, {"title": "Star"}, format="json", HTTP_IF_MATCH="*")
    assert starred.status_code == 200
    etag = api.owner.get(path)["ETag"]
    listed = api.owner.patch(
        path, {"title": "Listed"}, format="json", HTTP_IF_MATCH=f'"old", {etag}'
    )
    assert listed.status_code == 200
    weak = api.owner.patch(path, {"title": "Weak"}, format="json", HTTP_IF_MATCH=f"W/{etag}")
    assert_error(weak, 412, "PRECONDITION_FAILED")  # If-Match compares strongly
    missing = api.owner.patch(
        "/v1/issues/999999", {"title": "x"}, format="json", HTTP_IF_MATCH=etag
    )
    assert_error(missing, 404, "NOT_FOUND")


def test_a_path_without_a_representation_holds_only_star(api, world):
    path = f"/v1/projects/{world.project.pk}/members/{world.viewer.pk}"
    events = Event.objects.count()
    stale = api.owner.delete(path, HTTP_IF_MATCH='"anything"')
    assert_error(stale, 412, "PRECONDITION_FAILED")
    assert world.project.members.filter(user=world.viewer).exists()
    assert Event.objects.count() == events, "the write was undone, its event with it"
    # A write that would fail answers its own error, not 412.
    assert_error(api.viewer.delete(path, HTTP_IF_MATCH='"anything"'), 403, "FORBIDDEN")
    assert_error(APIClient().delete(path, HTTP_IF_MATCH='"x"'), 401, "UNAUTHORIZED")
    assert api.owner.delete(path, HTTP_IF_MATCH="*").status_code == 200
    assert not world.project.members.filter(user=world.viewer).exists()


@pytest.mark.parametrize("value", ["", "abc", '"unterminated', "W/abc", '"a" "b"', "0"])
def test_headers_that_hold_no_tags_match_nothing(api, world, value):
    """RFC 9110, 13.1.1-2: a value naming no entity tag matches no representation, so an
    If-None-Match holds (a full answer) and an If-Match fails (412, nothing written)."""
    issue = make_issue(world.project, world.owner)
    path = f"/v1/issues/{issue.pk}"
    answer = api.owner.get(path, HTTP_IF_NONE_MATCH=value)
    assert answer.status_code == 200 and answer.json()["data"]["id"] == issue.pk
    current = answer["ETag"]
    error = assert_error(
        api.owner.patch(path, {"title": "x"}, format="json", HTTP_IF_MATCH=value),
        412,
        "PRECONDITION_FAILED",
    )
    assert error["details"] == {"etag": current}
    assert Issue.objects.get(pk=issue.pk).title != "x"
    # Without valid credentials the 401 comes first, whatever the header holds.
    assert_error(APIClient().get(path, HTTP_IF_NONE_MATCH=value), 401, "UNAUTHORIZED")
    assert_error(
        APIClient().patch(path, {"title": "x"}, format="json", HTTP_IF_MATCH=value),
        401,
        "UNAUTHORIZED",
    )
    # Each header only where it is meant: If-Match on a GET, If-None-Match on a PATCH, ignored.
    assert api.owner.get(path, HTTP_IF_MATCH=value).status_code == 200
    patched = api.owner.patch(path, {"title": "y"}, format="json", HTTP_IF_NONE_MATCH=value)
    assert patched.status_code == 200


def test_a_method_the_route_lacks_is_still_405(api, world):
    issue = make_issue(world.project, world.owner)
    response = api.owner.put(
        f"/v1/issues/{issue.pk}/history", {}, format="json", HTTP_IF_MATCH="bad"
    )
    assert_error(response, 405, "METHOD_NOT_ALLOWED")


@pytest.mark.django_db(transaction=True)
def test_two_editors_holding_one_tag_cannot_both_write(world):
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL")
    issue = make_issue(world.project, world.owner, title="Contested")
    path = f"/v1/issues/{issue.pk}"
    editors = [client_for(world.owner), client_for(world.developer)]
    etag = editors[0].get(path)["ETag"]
    barrier = threading.Barrier(len(editors) * 4)
    statuses: list[int] = []

    def edit(client, title):
        barrier.wait()
        response = client.patch(path, {"title": title}, format="json", HTTP_IF_MATCH=etag)
        statuses.append(response.status_code)
        connection.close()

    threads = [threading.Thread(target=edit, args=(editors[n % 2], f"Title {n}")) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(statuses) == [200] + [412] * 7, statuses
    winner = Issue.objects.get(pk=issue.pk).title
    assert winner.startswith("Title ")
    assert issue.history.filter(field="title").count() == 1
