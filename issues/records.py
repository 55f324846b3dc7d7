"""The JSON of issues and labels: one ``TypedDict`` and one builder each, used by the views,
the services' history rows and event payloads, the CSV report and the schema's serializers'
test (``tests/test_records.py``).

Issues are built from ``.values()`` rows with one batched label query per page: a page of 50
issues costs the same queries as a page of 5, and no model instance is built for output.
"""

from collections import defaultdict
from datetime import datetime
from typing import Any, TypedDict, cast

from django.db.models import QuerySet

from collab.api.renderers import iso_z

from .models import Issue, Label

ISSUE_FIELDS = (
    "id",
    "project_id",
    "number",
    "title",
    "description",
    "type",
    "priority",
    "status",
    "assignee_id",
    "reporter_id",
    "created_at",
    "updated_at",
    "closed_at",
    "comment_count",
)


class IssueRecord(TypedDict):
    id: int
    project_id: int
    number: int
    title: str
    description: str
    type: str
    priority: str
    status: str
    assignee_id: int | None
    reporter_id: int | None
    labels: list[str]
    created_at: str
    updated_at: str
    closed_at: str | None
    comment_count: int


class LabelRecord(TypedDict):
    id: int
    project_id: int
    name: str
    color: str
    description: str
    created_at: str


def issue_rows(queryset: QuerySet[Issue]) -> list[dict[str, Any]]:
    """The records of a (sliced) queryset, as the API shows them."""
    rows = list(queryset.values(*ISSUE_FIELDS))
    return issue_attach_labels(rows)


def issue_attach_labels(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names: dict[int, list[str]] = defaultdict(list)
    if rows:
        pairs = (
            Issue.labels.through.objects.filter(issue_id__in=[row["id"] for row in rows])
            .order_by("label__name")
            .values_list("issue_id", "label__name")
        )
        for issue_id, name in pairs:
            names[issue_id].append(name)
    for row in rows:
        row["labels"] = names[row["id"]]
    return rows


def issue_record_from(issue: Issue, labels: list[str]) -> IssueRecord:
    """``issue_record`` of an issue just written, from the instance, without reading it back.

    ``labels`` must be in the order the database sorts label names (``issue_attach_labels``
    sorts by ``label__name``, whose collation Python's ``sorted`` need not share): the issue
    services read them ordered by name.
    """
    row = {name: getattr(issue, "pk" if name == "id" else name) for name in ISSUE_FIELDS}
    record = {
        name: iso_z(value) if isinstance(value, datetime) else value for name, value in row.items()
    }
    record["labels"] = list(labels)
    return cast(IssueRecord, record)


def issue_record(issue: Issue) -> IssueRecord:
    """One issue as plain JSON values: for responses, history and event payloads alike."""
    return issue_records(Issue.objects.filter(pk=issue.pk))[0]


def issue_records(queryset: QuerySet[Issue]) -> list[IssueRecord]:
    """``issue_record`` of every issue of a (sliced) queryset, in two queries."""
    return [
        cast(
            IssueRecord,
            {
                name: iso_z(value) if isinstance(value, datetime) else value
                for name, value in row.items()
            },
        )
        for row in issue_rows(queryset)
    ]


def label_record(label: Label) -> LabelRecord:
    return {
        "id": label.pk,
        "project_id": label.project_id,
        "name": label.name,
        "color": label.color,
        "description": label.description,
        "created_at": iso_z(label.created_at),
    }
