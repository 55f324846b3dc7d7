"""What the API says about API keys (the key as listed, as created with the key itself once,
and what a new one is asked with) and service accounts."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.audit import AUDIT_KINDS
from accounts.models import ApiKey, Role, User
from collab.api.acting import ActorSerializer, actor_payload
from collab.api.fields import EmptyAsNullCharField, SingleLineCharField
from collab.api.routers import MAX_ID
from collab.api.scopes import ALL_SCOPES

# The most projects one key is limited to, or one service account's teams.
MAX_KEY_PROJECTS = 100
# A service account's role in its workspace: any but the owner's.
SERVICE_ROLE_CHOICES = [
    (role.value, role.value) for role in (Role.ADMIN, Role.DEVELOPER, Role.VIEWER)
]


class ApiKeySerializer(serializers.ModelSerializer):
    revoked = serializers.BooleanField(source="is_revoked", read_only=True)
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=[(s, s) for s in ALL_SCOPES]), read_only=True
    )
    projects = serializers.ListField(
        child=serializers.IntegerField(),
        read_only=True,
        allow_null=True,
        help_text="The ids of the projects the key is limited to; null, every project its "
        "owner sees.",
    )

    class Meta:
        model = ApiKey
        fields = [
            "id",
            "name",
            "prefix",
            "scopes",
            "projects",
            "expires_at",
            "last_used_at",
            "revoked",
            "revoked_at",
            "created_at",
        ]
        read_only_fields = fields


class ApiKeyCreatedSerializer(ApiKeySerializer):
    key = serializers.CharField(read_only=True, help_text="The key itself, shown only once.")

    class Meta(ApiKeySerializer.Meta):
        fields = [*ApiKeySerializer.Meta.fields, "key"]
        read_only_fields = fields


class ApiKeyCreateSerializer(serializers.Serializer):
    name = SingleLineCharField(max_length=100)
    # Not a ListField of choices: an unknown scope is reported on ``scopes`` itself
    # (``details.scopes``), not on ``scopes.0``.
    scopes = serializers.MultipleChoiceField(
        choices=[(s, s) for s in ALL_SCOPES], allow_empty=False
    )
    # camelCase to match the documented client library: docs/guide/authentication.md.
    expiresIn = SingleLineCharField(  # noqa: N815
        required=False, allow_null=True, default="1y", max_length=32
    )
    projects = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        required=False,
        allow_null=True,
        allow_empty=False,
        max_length=MAX_KEY_PROJECTS,
        default=None,
        help_text="Limit the key to these projects (ids of projects you see): everything "
        "outside them is then 404, and the key cannot create projects or manage members. "
        "Left out or null: every project you see.",
    )


class ServiceAccountSerializer(serializers.Serializer):
    """A service account, as its workspace's owners and admins see it.

    Its ``role`` and ``projects`` are read for it (``service_accounts_described``)."""

    id = serializers.IntegerField(source="user_id")
    kind = serializers.CharField(source="user.kind", help_text="Always `service`.")
    name = serializers.CharField(source="user.name")
    handle = serializers.CharField(source="user.handle")
    workspace_id = serializers.IntegerField()
    role = serializers.ChoiceField(choices=SERVICE_ROLE_CHOICES)
    projects = serializers.ListField(
        source="project_ids",
        child=serializers.IntegerField(),
        help_text="The projects whose teams it is on (what it sees of private projects).",
    )
    tier = serializers.ChoiceField(source="user.tier", choices=User.Tier.choices)
    created_by = serializers.IntegerField(source="created_by_id", allow_null=True)
    created_at = serializers.DateTimeField()


class ServiceAccountInputSerializer(serializers.Serializer):
    name = SingleLineCharField(max_length=150)
    role = serializers.ChoiceField(choices=SERVICE_ROLE_CHOICES, default=Role.DEVELOPER)
    projects = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        default=list,
        max_length=MAX_KEY_PROJECTS,
        help_text="Ids of the workspace's projects whose teams it joins.",
    )
    tier = serializers.ChoiceField(
        choices=User.Tier.choices,
        default=User.Tier.STANDARD,
        help_text="Its rate limit's tier: at most yours.",
    )


# OAuth apps ---------------------------------------------------------------------------------

CLIENT_TYPES = [
    ("confidential", "confidential: a server that keeps its client secret"),
    ("public", "public: a native or browser app that cannot keep one (PKCE alone)"),
]


class OAuthAppSerializer(serializers.Serializer):
    """A workspace's registration of a third-party app, as its owners and admins see it."""

    id = serializers.IntegerField(source="application_id")
    name = serializers.CharField(source="application.name")
    client_id = serializers.CharField(source="application.client_id")
    client_type = serializers.ChoiceField(source="application.client_type", choices=CLIENT_TYPES)
    redirect_uris = serializers.SerializerMethodField()
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=[(s, s) for s in ALL_SCOPES]),
        help_text="The most an app may ask a user for (and what they imply).",
    )
    workspace_id = serializers.IntegerField()
    created_by = serializers.IntegerField(source="created_by_id", allow_null=True)
    created_at = serializers.DateTimeField()

    def get_redirect_uris(self, app) -> list[str]:
        return app.application.redirect_uris.split()


class OAuthAppCreatedSerializer(OAuthAppSerializer):
    client_secret = serializers.CharField(
        allow_null=True,
        help_text="A confidential client's secret, shown only once (null for a public client).",
    )


class OAuthAppInputSerializer(serializers.Serializer):
    name = SingleLineCharField(max_length=255)
    client_type = serializers.ChoiceField(choices=CLIENT_TYPES, default="confidential")
    redirect_uris = serializers.ListField(
        child=SingleLineCharField(max_length=2000),
        allow_empty=False,
        max_length=10,
        help_text="Where the app may send its users back with a code: https URLs, or http on "
        "the loopback (127.0.0.1, [::1], localhost), matched exactly.",
    )
    scopes = serializers.MultipleChoiceField(
        choices=[(s, s) for s in ALL_SCOPES], allow_empty=False
    )


class OAuthAppUpdateSerializer(OAuthAppInputSerializer):
    """What an app's registration may change: not its client type."""

    client_type = None  # type: ignore[assignment]


class AuthorizedAppSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    client_id = serializers.CharField()
    workspace_id = serializers.IntegerField(allow_null=True)


class AppAuthorizationSerializer(serializers.Serializer):
    """An app a user authorised, and what its tokens reach."""

    id = serializers.IntegerField()
    app = AuthorizedAppSerializer(source="app_described")
    scopes = serializers.ListField(
        child=serializers.ChoiceField(choices=[(s, s) for s in ALL_SCOPES])
    )
    projects = serializers.ListField(child=serializers.IntegerField())
    user_id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


# The audit log ------------------------------------------------------------------------------


class AuditEntrySerializer(serializers.Serializer):
    """One credential event of a workspace."""

    id = serializers.IntegerField()
    type = serializers.ChoiceField(choices=[(kind, kind) for kind in AUDIT_KINDS])
    workspace_id = serializers.IntegerField()
    actor = serializers.SerializerMethodField(
        help_text="Who did it, and through what credential (null: the service, or an operator's "
        "command)."
    )
    subject = serializers.DictField(
        help_text="What it is about: `api_key`, `app`, `authorization` or `service_account`, as "
        "the API shows them (never a secret)."
    )
    address = EmptyAsNullCharField(help_text="The address the request came from, when known.")
    created_at = serializers.DateTimeField()

    @extend_schema_field(ActorSerializer(allow_null=True))
    def get_actor(self, entry) -> dict | None:
        return actor_payload(entry.actor_id, entry.actor_detail)
