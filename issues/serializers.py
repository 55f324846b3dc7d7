from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from collab.api.acting import ActorSerializer, actor_payload
from collab.api.bulk import MAX_ITEMS
from collab.api.fields import EmptyAsNullCharField, SingleLineCharField
from collab.api.routers import MAX_ID

from .models import IssueType, Label, Priority, Status

LABEL_NAME_MAX = 50
COLOR_PATTERN = r"^#[0-9a-fA-F]{6}$"


class IssueHighlightsSerializer(serializers.Serializer):
    """Where a list's ``q`` matched: escaped HTML, the matched words in ``<mark>``."""

    title = serializers.CharField()
    description = serializers.CharField(
        allow_blank=True, help_text="The best passage of the description."
    )


class IssueSerializer(serializers.Serializer):
    """An issue record, for the schema: lists and records are built from ``.values()`` rows."""

    id = serializers.IntegerField()
    project_id = serializers.IntegerField()
    number = serializers.IntegerField()
    title = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    type = serializers.ChoiceField(choices=IssueType.choices)
    priority = serializers.ChoiceField(choices=Priority.choices)
    status = serializers.ChoiceField(choices=Status.choices)
    assignee_id = serializers.IntegerField(allow_null=True)
    reporter_id = serializers.IntegerField(allow_null=True)
    labels = serializers.ListField(child=serializers.CharField())
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)
    comment_count = serializers.IntegerField(min_value=0)
    highlights = IssueHighlightsSerializer(
        required=False,
        allow_null=True,
        help_text="Only on lists asked with `highlight=true`: null without `q`.",
    )


class IssueInputSerializer(serializers.Serializer):
    """POST and PUT send every writable field (omitted ones take their defaults); PATCH any."""

    title = SingleLineCharField(max_length=500)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    type = serializers.ChoiceField(choices=IssueType.choices, default=IssueType.TASK)
    priority = serializers.ChoiceField(choices=Priority.choices, default=Priority.MEDIUM)
    status = serializers.ChoiceField(choices=Status.choices, default=Status.OPEN)
    assignee_id = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1
    )
    labels = serializers.ListField(
        child=SingleLineCharField(max_length=LABEL_NAME_MAX),
        required=False,
        default=list,
        max_length=50,
    )


class IssueHistorySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    field = serializers.CharField()
    old_value = serializers.JSONField(allow_null=True)
    new_value = serializers.JSONField(allow_null=True)
    actor_id = serializers.IntegerField(allow_null=True)
    actor = serializers.SerializerMethodField(
        help_text="Who made the change, and through what credential (as an event's actor)."
    )
    source = EmptyAsNullCharField(  # type: ignore[assignment]  # the history row's own field
        help_text="What made the change when not the API: admin, a pull request."
    )
    created_at = serializers.DateTimeField()

    @extend_schema_field(ActorSerializer(allow_null=True))
    def get_actor(self, row) -> dict | None:
        return actor_payload(row.actor_id, row.actor_detail)


class LabelSerializer(serializers.ModelSerializer):
    project_id = serializers.IntegerField(read_only=True)

    class Meta:
        model = Label
        fields = ["id", "project_id", "name", "color", "description", "created_at"]
        read_only_fields = fields


class LabelInputSerializer(serializers.Serializer):
    name = SingleLineCharField(max_length=LABEL_NAME_MAX)
    color = serializers.RegexField(
        COLOR_PATTERN,
        required=False,
        default="#6b7280",
        error_messages={"invalid": "Give a colour as #rrggbb."},
    )
    description = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default=""
    )


BULK_ITEMS_HELP = (
    f"1 to {MAX_ITEMS} objects, each checked on its own: one with a bad field is answered "
    "with its own 422 in the results, not refused with the request."
)


class BulkRequestSerializer(serializers.Serializer):
    """A bulk request: a list of objects, each checked one by one (each answers for itself)."""

    whole_on_patch = True  # the envelope is required even on PATCH (see the schema)

    items = serializers.ListField(
        child=serializers.DictField(), min_length=1, max_length=MAX_ITEMS, help_text=BULK_ITEMS_HELP
    )
    atomic = serializers.BooleanField(
        default=False, help_text="All or nothing: the first failing item fails the request."
    )


class IssueBulkCreateSerializer(BulkRequestSerializer):
    """``POST /v1/projects/:id/issues/bulk``: each item the body of a single create
    (``title`` required; ``description``, ``type``, ``priority``, ``status``, ``assignee_id``,
    ``labels``)."""


class IssueBulkUpdateSerializer(BulkRequestSerializer):
    """``PATCH /v1/issues/bulk``: each item ``{"id": <issue>, ...the fields to change}``, as the
    body of a single PATCH."""


class IssueBulkUpdateItemSerializer(IssueInputSerializer):
    """One item of ``PATCH /v1/issues/bulk``, checked on its own."""

    id = serializers.IntegerField(min_value=1, max_value=MAX_ID, help_text="The issue to change.")


class BulkErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.DictField()


class IssueBulkResultSerializer(serializers.Serializer):
    """One item's answer: its record (201 created, 200 changed) or its error."""

    index = serializers.IntegerField(help_text="The item's position in the request, from 0.")
    status = serializers.IntegerField(help_text="What the item alone would have answered.")
    data = IssueSerializer(allow_null=True)  # type: ignore[assignment]  # a field, not .data
    error = BulkErrorSerializer(allow_null=True)
