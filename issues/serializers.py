from rest_framework import serializers

from collab.api.fields import EmptyAsNullCharField

from .models import IssueType, Label, Priority, Status

LABEL_NAME_MAX = 50
COLOR_PATTERN = r"^#[0-9a-fA-F]{6}$"


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


class IssueInputSerializer(serializers.Serializer):
    """POST and PUT send every writable field (omitted ones take their defaults); PATCH any."""

    title = serializers.CharField(max_length=500)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    type = serializers.ChoiceField(choices=IssueType.choices, default=IssueType.TASK)
    priority = serializers.ChoiceField(choices=Priority.choices, default=Priority.MEDIUM)
    status = serializers.ChoiceField(choices=Status.choices, default=Status.OPEN)
    assignee_id = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1
    )
    labels = serializers.ListField(
        child=serializers.CharField(max_length=LABEL_NAME_MAX),
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
    source = EmptyAsNullCharField(  # type: ignore[assignment]  # the history row's own field
        help_text="What made the change when not the API: admin, a pull request."
    )
    created_at = serializers.DateTimeField()


class LabelSerializer(serializers.ModelSerializer):
    project_id = serializers.IntegerField(read_only=True)

    class Meta:
        model = Label
        fields = ["id", "project_id", "name", "color", "description", "created_at"]
        read_only_fields = fields


class LabelInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=LABEL_NAME_MAX)
    color = serializers.RegexField(
        COLOR_PATTERN,
        required=False,
        default="#6b7280",
        error_messages={"invalid": "Give a colour as #rrggbb."},
    )
    description = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default=""
    )
