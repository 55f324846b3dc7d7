"""The issue services inside another transaction: they make no savepoint of their own
(issues.services._atomic), so their refusals must leave the enclosing transaction as usable as
they found it, with nothing written."""

import pytest
from django.db import transaction

from collab.api.exceptions import NotFound, ValidationFailed
from events.models import Event
from issues import services
from issues.models import Issue, IssueHistory, IssueStatusCount
from tests.conftest import assert_error, client_for
from tests.factories import make_issue


def test_a_refused_assignee_leaves_the_enclosing_transaction_usable(world):
    issue = make_issue(world.project, world.owner, title="Kept")
    with transaction.atomic():
        with pytest.raises(ValidationFailed):
            services.issue_create(
                project=world.project, actor=world.owner, title="No", assignee_id=world.outsider.pk
            )
        with pytest.raises(ValidationFailed):
            services.issue_update(issue=issue, actor=world.owner, assignee_id=world.outsider.pk)
        # Still usable, and nothing of the refused writes is in it.
        assert list(Issue.objects.values_list("title", flat=True)) == ["Kept"]
        assert Issue.objects.get(pk=issue.pk).assignee_id is None
        assert IssueHistory.objects.filter(issue=issue).count() == 1
        assert Event.objects.count() == 1


def test_an_issue_gone_leaves_the_enclosing_transaction_usable(world):
    issue = make_issue(world.project, world.owner, title="Gone")
    with transaction.atomic():
        services.issue_delete(issue=issue, actor=world.owner)
        with pytest.raises(NotFound):
            services.issue_update(issue=issue, actor=world.owner, status="closed")
        assert not Issue.objects.exists()
        assert not IssueStatusCount.objects.filter(count__gt=0).exists()
        assert [event.type for event in Event.objects.order_by("id")] == [
            "issue.created",
            "issue.deleted",
        ]


def test_an_idempotent_create_refused_for_its_assignee_answers_and_replays_422(world):
    """The request's work runs in the key's transaction, which then keeps the answer."""
    client = client_for(world.owner)
    path = f"/v1/projects/{world.project.pk}/issues"
    body = {"title": "Refused", "assignee_id": world.outsider.pk}

    def post():
        return client.post(path, body, format="json", HTTP_IDEMPOTENCY_KEY="refused")

    error = assert_error(post(), 422, "VALIDATION_ERROR")
    assert "assignee_id" in error["details"]
    again = post()
    assert again.status_code == 422
    assert again["Idempotent-Replayed"] == "true"
    assert not Issue.objects.exists()
