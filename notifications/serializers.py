from rest_framework import serializers

from collab.api.acting import ActorSerializer
from collab.api.fields import EmptyAsNullCharField, SingleLineCharField, single_line
from collab.api.renderers import iso_z

from .models import Delivery


class WebhookSerializer(serializers.Serializer):
    """A webhook as shown: never its secret (``secret`` appears once, in a create's answer,
    when the service generated it)."""

    id = serializers.IntegerField()
    workspace_id = serializers.IntegerField()
    project_id = serializers.IntegerField(
        allow_null=True,
        help_text="null: the workspace's webhook, sent all of the workspace's events (its own "
        "and every project's).",
    )
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.CharField())
    description = serializers.CharField(allow_blank=True)
    active = serializers.BooleanField()
    disabled_reason = serializers.CharField(
        allow_null=True, help_text="Why it was switched off; null while it is on."
    )
    failing_since = serializers.DateTimeField(allow_null=True)
    last_delivery_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    secret = serializers.CharField(required=False, help_text="Only when generated, at creation.")


# An http(s) URL with a host, as the schema states it; its addresses are checked when it is
# registered (``notifications.services.webhook_url_check``).
WEBHOOK_URL_PATTERN = r"^https?://[^\s/?#@]+(?:[/?#]\S*)?$"


class WebhookInputSerializer(serializers.Serializer):
    url = serializers.RegexField(
        WEBHOOK_URL_PATTERN,
        max_length=2000,
        validators=[single_line],
        error_messages={"invalid": "Give an http:// or https:// URL with a host."},
    )
    events = serializers.ListField(
        child=SingleLineCharField(max_length=64), min_length=1, max_length=100
    )
    secret = serializers.CharField(
        required=False,
        min_length=8,
        max_length=256,
        write_only=True,
        help_text="Signs every delivery. Omitted: one is generated and shown once.",
    )
    description = serializers.CharField(required=False, allow_blank=True, max_length=200)


class WebhookUpdateSerializer(WebhookInputSerializer):
    active = serializers.BooleanField(required=False)


class DeliverySerializer(serializers.ModelSerializer):
    webhook_id = serializers.IntegerField()
    event_id = serializers.IntegerField()
    event_type = serializers.CharField(source="event.type")
    redelivery_of = serializers.IntegerField(source="redelivery_of_id", allow_null=True)
    next_attempt_at = serializers.SerializerMethodField()
    last_error = EmptyAsNullCharField(help_text="Why the last attempt failed; null if none did.")

    class Meta:
        model = Delivery
        fields = [
            "id",
            "uuid",
            "webhook_id",
            "event_id",
            "event_type",
            "status",
            "attempts",
            "next_attempt_at",
            "last_status_code",
            "last_error",
            "redelivery_of",
            "created_at",
            "completed_at",
        ]
        read_only_fields = fields

    def get_next_attempt_at(self, delivery) -> str | None:
        if delivery.status != Delivery.Status.PENDING:
            return None
        return iso_z(delivery.next_attempt_at)


class DeliveryAttemptSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    started_at = serializers.DateTimeField()
    duration_ms = serializers.IntegerField()
    status_code = serializers.IntegerField(allow_null=True)
    error = EmptyAsNullCharField(help_text="Why the attempt failed; null if it did not.")
    response_excerpt = serializers.CharField(allow_blank=True)
    request_headers = serializers.DictField(child=serializers.CharField())


class DeliveryDetailSerializer(DeliverySerializer):
    attempt_log = DeliveryAttemptSerializer(many=True)
    payload = serializers.SerializerMethodField()

    class Meta(DeliverySerializer.Meta):
        fields = [*DeliverySerializer.Meta.fields, "attempt_log", "payload"]
        read_only_fields = fields

    def get_payload(self, delivery) -> dict:
        return delivery.event.as_payload()


class EventSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    type = serializers.CharField()
    created_at = serializers.DateTimeField()
    workspace_id = serializers.IntegerField()
    project_id = serializers.IntegerField(allow_null=True)
    actor_id = serializers.IntegerField(allow_null=True)
    actor = ActorSerializer(
        allow_null=True, help_text="Who caused it, and through what; null for the service's own."
    )
    data = serializers.DictField()  # type: ignore[assignment]  # the event's field, not .data

    def to_representation(self, instance):
        return instance.as_payload()


class EventKindSerializer(serializers.Serializer):
    type = serializers.CharField()
    emitted_by = serializers.CharField()
    data = serializers.CharField()  # type: ignore[assignment]  # the kind's field, not .data
