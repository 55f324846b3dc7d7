"""Comment events leave the service like every other: signed webhooks to a real receiver on
127.0.0.1, the event list, and and an open stream (tests/notifications/test_stream_scope.py)."""

import pytest

from events.catalogue import EVENT_KINDS
from tests.conftest import assert_ok
from tests.factories import make_issue
from tests.notifications.test_delivery import SECRET, verify_both_signatures

pytestmark = pytest.mark.django_db(transaction=True)


def test_comment_kinds_are_in_the_catalogue(api):
    kinds = {row["type"] for row in assert_ok(api.viewer.get("/v1/events/kinds"))["data"]}
    assert {"comment.created", "comment.updated", "comment.deleted"} <= kinds
    assert {"comment.created", "comment.updated", "comment.deleted"} <= set(EVENT_KINDS)


def test_comment_events_are_delivered_signed(api, world, receiver):
    body = {"url": receiver.url, "events": ["comment.*"], "secret": SECRET}
    assert_ok(api.owner.post(f"/v1/projects/{world.project.pk}/webhooks", body, format="json"), 201)
    issue = make_issue(world.project, world.owner, title="Crash on save")
    comment = assert_ok(
        api.developer.post(f"/v1/issues/{issue.pk}/comments", {"body": "On it."}, format="json"),
        201,
    )["data"]
    url = f"/v1/comments/{comment['id']}"
    assert_ok(api.developer.patch(url, {"body": "Fixed in #2."}, format="json"))
    assert_ok(api.developer.delete(url))

    requests = receiver.wait_for(3)
    assert [r.headers["x-collab-event"] for r in requests] == [
        "comment.created",
        "comment.updated",
        "comment.deleted",
    ]
    payloads = [verify_both_signatures(r) for r in requests]
    assert payloads[0]["data"]["comment"] == comment
    assert payloads[0]["data"]["issue"]["id"] == issue.pk
    assert payloads[1]["data"]["comment"]["body"] == "Fixed in #2."
    assert payloads[2]["data"]["comment"]["id"] == comment["id"]
    assert payloads[2]["data"]["issue"]["comment_count"] == 0

    listed = assert_ok(api.viewer.get("/v1/events", {"types": "comment.*"}))["data"]
    assert sorted(e["type"] for e in listed) == [
        "comment.created",
        "comment.deleted",
        "comment.updated",
    ]
