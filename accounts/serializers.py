from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from collab.api.fields import SingleLineCharField
from collab.api.routers import MAX_ID

from .handles import HANDLE_MAX_LENGTH, HANDLE_RULE
from .models import Invitation, Membership, Role, User, Workspace


class UserSerializer(serializers.Serializer):
    """A user as seen inside one workspace: ``role`` is their role there."""

    id = serializers.IntegerField(source="user.id")
    email = serializers.EmailField(source="user.email")
    handle = serializers.CharField(source="user.handle")
    name = serializers.CharField(source="user.name")
    role = serializers.ChoiceField(choices=Role.choices)
    status = serializers.ChoiceField(source="user.status", choices=User.Status.choices)
    kind = serializers.ChoiceField(
        source="user.kind",
        choices=User.Kind.choices,
        help_text="`person`, or `service` for a service account.",
    )
    workspace_id = serializers.IntegerField()
    created_at = serializers.DateTimeField(source="user.created_at")


class MeSerializer(serializers.ModelSerializer):
    class Meta:
        model = User
        fields = ["id", "email", "handle", "name", "kind", "status", "tier", "created_at"]
        read_only_fields = fields


class MeUpdateSerializer(serializers.Serializer):
    """What a user changes of themselves: how they are shown and mentioned."""

    name = SingleLineCharField(max_length=150, allow_blank=True)
    handle = SingleLineCharField(
        max_length=HANDLE_MAX_LENGTH, help_text=f"{HANDLE_RULE} Matched case-insensitively."
    )


class WorkspaceSerializer(serializers.ModelSerializer):
    role = serializers.SerializerMethodField()

    class Meta:
        model = Workspace
        fields = ["id", "name", "slug", "role", "created_at"]
        read_only_fields = fields

    @extend_schema_field(serializers.ChoiceField(choices=Role.choices, allow_null=True))
    def get_role(self, workspace) -> str | None:
        roles = self.context.get("roles") or {}
        return roles.get(workspace.pk)


class WorkspaceCreateSerializer(serializers.Serializer):
    name = SingleLineCharField(max_length=200)


class MembershipUpdateSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)


class LoginSerializer(serializers.Serializer):
    email = serializers.CharField(max_length=254)
    password = serializers.CharField(max_length=4096, trim_whitespace=False)


class RefreshSerializer(serializers.Serializer):
    refresh_token = serializers.CharField(max_length=4096)


class TokenPairSerializer(serializers.Serializer):
    access_token = serializers.CharField()
    refresh_token = serializers.CharField()
    token_type = serializers.CharField()
    expires_in = serializers.IntegerField()


class InvitationSerializer(serializers.ModelSerializer):
    workspace_id = serializers.IntegerField(read_only=True)
    invited_by = serializers.IntegerField(source="invited_by_id", read_only=True, allow_null=True)
    status = serializers.ChoiceField(
        source="effective_status", choices=Invitation.Status.choices, read_only=True
    )
    projects = serializers.SerializerMethodField()

    class Meta:
        model = Invitation
        fields = [
            "id",
            "workspace_id",
            "email",
            "role",
            "projects",
            "status",
            "expires_at",
            "created_at",
            "invited_by",
            "email_status",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "email_status": {
                "help_text": "Whether the invitation's email went out: queued (being sent or "
                "retried), sent, or failed (it cannot be sent; see the admin for why)."
            }
        }

    def get_projects(self, invitation) -> list[int]:
        return sorted(project.pk for project in invitation.projects.all())


class InvitationCreateSerializer(serializers.Serializer):
    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=Role.choices, default=Role.DEVELOPER)
    projects = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID), required=False, default=list
    )


class InvitationAcceptSerializer(serializers.Serializer):
    token = serializers.CharField(max_length=200)
    name = SingleLineCharField(max_length=150, required=False, allow_blank=True, default="")
    password = serializers.CharField(max_length=4096, trim_whitespace=False)


class MembershipSerializer(serializers.ModelSerializer):
    class Meta:
        model = Membership
        fields = ["workspace_id", "user_id", "role", "created_at"]
        read_only_fields = fields


class RateLimitSerializer(serializers.Serializer):
    """The caller's rate-limit window (`GET /v1/rate_limit`)."""

    tier = serializers.ChoiceField(choices=User.Tier.choices)
    limit = serializers.IntegerField(help_text="Requests allowed per window at this tier.")
    remaining = serializers.IntegerField(
        allow_null=True, help_text="Requests left in the window (null: the counter is unreachable)."
    )
    used = serializers.IntegerField(
        allow_null=True,
        help_text="Requests counted in the window (null: the counter is unreachable).",
    )
    reset = serializers.IntegerField(
        allow_null=True,
        help_text="When the window ends, in Unix seconds; with no request counted yet, when "
        "a window opened now would end.",
    )
    reset_at = serializers.DateTimeField(allow_null=True, help_text="`reset` as a timestamp.")
    window_seconds = serializers.IntegerField(help_text="Length of a window.")
