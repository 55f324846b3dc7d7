"""``CachedFormFilterSet.narrowed``: a request pays only for the filters it names, and gets
the same answer as with the whole filterset."""

from django.http import QueryDict

from issues.filters import GlobalIssueFilter, IssueFilter
from issues.models import Issue
from tests.conftest import assert_error, assert_ok
from tests.factories import make_issue


def params(text: str) -> QueryDict:
    return QueryDict(text)


def test_only_the_named_filters_are_kept():
    assert list(IssueFilter.narrowed(params("status=open&per_page=50")).base_filters) == ["status"]
    kept = IssueFilter.narrowed(params("sort=-priority&q=x&page=2&labels=a"))
    assert set(kept.base_filters) == {"sort", "q", "labels"}
    assert IssueFilter.narrowed(params("page=3")).base_filters == {}
    every = "&".join(f"{name}=x" for name in GlobalIssueFilter.base_filters)
    assert GlobalIssueFilter.narrowed(params(every)) is GlobalIssueFilter


def test_narrowed_classes_are_built_once_and_share_the_filters():
    first = IssueFilter.narrowed(params("status=open&assignee=me"))
    again = IssueFilter.narrowed(params("assignee=none&status=closed&page=9"))
    assert first is again
    assert first.base_filters["status"] is IssueFilter.base_filters["status"]
    assert first.__name__ == "IssueFilter" and issubclass(first, IssueFilter)


def test_a_suffixed_parameter_keeps_its_filter():
    assert "created_after" in IssueFilter.narrowed(params("created_after_0=x")).base_filters


def test_narrowed_lists_answer_as_before(api, world):
    make_issue(world.project, world.owner, title="Open one")
    make_issue(world.project, world.owner, title="Closed one", status="closed")
    url = f"/v1/projects/{world.project.pk}/issues"
    data = assert_ok(api.owner.get(f"{url}?status=closed"))["data"]
    assert [row["title"] for row in data] == ["Closed one"]
    assert len(assert_ok(api.owner.get(url))["data"]) == Issue.objects.count()
    error = assert_error(api.owner.get(f"{url}?status="), 400, "BAD_REQUEST")
    assert "status" in error["details"]
    error = assert_error(api.owner.get(f"{url}?priority=urgent&page=1"), 400, "BAD_REQUEST")
    assert list(error["details"]) == ["priority"]
