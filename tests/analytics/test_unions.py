"""``collab.db.unions`` and ``collab.db.prepared.PreparedUnion``: rows of one shape from
several tables in one statement, and that statement compiled once per shape of its plan,
answering what the ORM answers."""

from datetime import timedelta
from typing import NamedTuple

import pytest
from django.db import connection
from django.db.models import BigIntegerField, Count, DateField, DateTimeField, F, TextField
from django.db.models.functions import TruncDate
from django.test.utils import CaptureQueriesContext

from collab.db.prepared import PreparedUnion as Prepared
from collab.db.unions import Rows
from comments.models import Comment
from issues.models import Issue
from tests.analytics.conftest import NOW
from tests.factories import ProjectFactory, make_issue

ROWS = Rows(
    kind=BigIntegerField(),
    project=BigIntegerField(),
    day=DateField(),
    n=BigIntegerField(),
    title=TextField(),
    at=DateTimeField(),
)


class Plan(NamedTuple):
    projects: tuple[int, ...]
    since: object  # a datetime, or None for all time
    titles: bool


def build(plan: Plan) -> list:
    issues = Issue.objects.filter(project_id__in=plan.projects)
    comments = Comment.objects.filter(project_id__in=plan.projects)
    if plan.since is not None:
        issues = issues.filter(created_at__gte=plan.since)
        comments = comments.filter(created_at__gte=plan.since)
    day = {"project": F("project_id"), "day": TruncDate("created_at")}
    branches = [
        ROWS.of(issues, keys=day, values={"n": Count("id")}, constants={"kind": 1}),
        ROWS.of(comments, keys=day, values={"n": Count("id")}, constants={"kind": 2}),
    ]
    if plan.titles:
        branches.append(
            ROWS.of(
                issues,
                values={"project": F("project_id"), "title": F("title"), "at": F("created_at")},
                constants={"kind": 3},
            )
        )
    return branches


@pytest.fixture
def data(world, pinned):
    second = ProjectFactory(workspace=world.acme)
    for back in range(4):
        for project in (world.project, second):
            with pinned(NOW - timedelta(days=back, hours=back)):
                make_issue(project, world.owner, title=f"{project.pk}-{back}")
    return [world.project.pk, second.pk]


def test_it_answers_what_the_orm_answers_for_every_plan(data):
    prepared = Prepared(build)
    built = []
    plans = [
        Plan((data[0],), None, False),
        Plan((data[1],), None, False),  # same shape, other value
        Plan(tuple(data), NOW - timedelta(days=2), True),
        Plan(tuple(data), NOW - timedelta(days=1), True),
        Plan(tuple(reversed(data)), NOW - timedelta(days=5), True),
    ]

    def counting(plan):
        built.append(plan)
        return build(plan)

    prepared.build = counting
    for plan in plans:
        expected = Rows.fetch(build(plan))
        with CaptureQueriesContext(connection) as captured:
            rows = prepared.fetch(plan)
        assert len(captured) == 1
        assert sorted(rows, key=repr) == sorted(expected, key=repr), plan
        assert rows, plan
    # Two shapes (one project without a time, two projects with one and the titles).
    assert len(built) == 2


def test_a_plan_without_reads_makes_no_query(db):
    prepared = Prepared(lambda plan: [])
    with CaptureQueriesContext(connection) as captured:
        assert prepared.fetch(Plan((), None, False)) == []
    assert len(captured) == 0


def test_a_value_the_query_transforms_is_refused(data):
    """A value that does not reach the SQL as given cannot be swapped for the next call's."""
    prepared = Prepared(
        lambda plan: [
            ROWS.of(
                Issue.objects.filter(pk__gte=plan.projects[0] + 1),
                values={"project": F("project_id")},
                constants={"kind": 1},
            )
        ]
    )
    with pytest.raises(ValueError, match="not found"):
        prepared.fetch(Plan((data[0],), None, False))


def test_columns_are_checked():
    with pytest.raises(ValueError):
        ROWS.of(Issue.objects.all(), values={"nope": F("id")})
    with pytest.raises(ValueError):
        ROWS.extended(day=DateField())
