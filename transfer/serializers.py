from rest_framework import serializers

from .models import Export


class ExportSerializer(serializers.ModelSerializer):
    workspace_id = serializers.IntegerField(read_only=True)
    created_by_id = serializers.IntegerField(read_only=True, allow_null=True)

    class Meta:
        model = Export
        fields = [
            "id",
            "workspace_id",
            "status",
            "created_at",
            "completed_at",
            "size",
            "expires_at",
            "error",
            "include_events",
            "sha256",
            "created_by_id",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "status": {
                "help_text": "pending (queued), running (a worker builds it), completed (ready "
                "to download until expires_at), failed (see error)."
            },
            "completed_at": {"help_text": "When it completed or failed; null before."},
            "size": {"help_text": "The archive's size in bytes, once completed."},
            "expires_at": {
                "help_text": "When the archive and this record are purged "
                "(EXPORT_RETENTION_DAYS after it completed or failed); null before."
            },
            "error": {"help_text": "Why it failed; null otherwise."},
            "include_events": {"help_text": "Whether the archive holds the event log."},
            "sha256": {"help_text": "The SHA-256 of the archive, once completed (hex)."},
        }


class ExportCreateSerializer(serializers.Serializer):
    include_events = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Put the workspace's event log in the archive too (default false).",
    )
