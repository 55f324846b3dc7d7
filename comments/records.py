"""The JSON of comments and of their previous bodies: one ``TypedDict`` and one builder each,
for the views, the event payloads, the issue history and the schema's test."""

from datetime import datetime
from typing import Any, TypedDict, cast

from collab.api.renderers import iso_z

from .models import Comment, CommentRevision

COMMENT_FIELDS = (
    "id",
    "project_id",
    "issue_id",
    "pull_request_id",
    "author_id",
    "body",
    "body_html",
    "edited",
    "created_at",
    "updated_at",
)


class CommentRecord(TypedDict):
    id: int
    project_id: int
    issue_id: int | None
    pull_request_id: int | None
    author_id: int | None
    body: str
    body_html: str
    edited: bool
    created_at: str
    updated_at: str


class CommentRevisionRecord(TypedDict):
    id: int
    comment_id: int
    body: str
    author_id: int | None
    created_at: str
    replaced_at: str


def comment_record_from_row(row: dict[str, Any]) -> CommentRecord:
    """A comment from a ``.values(*COMMENT_FIELDS)`` row (the lists read no instances)."""
    return cast(
        CommentRecord,
        {
            name: iso_z(value) if isinstance(value, datetime) else value
            for name, value in row.items()
        },
    )


def comment_record(comment: Comment) -> CommentRecord:
    return comment_record_from_row(
        {name: getattr(comment, "pk" if name == "id" else name) for name in COMMENT_FIELDS}
    )


def revision_record(revision: CommentRevision) -> CommentRevisionRecord:
    return {
        "id": revision.pk,
        "comment_id": revision.comment_id,
        "body": revision.body,
        "author_id": revision.author_id,
        "created_at": iso_z(revision.created_at),
        "replaced_at": iso_z(revision.replaced_at),
    }
