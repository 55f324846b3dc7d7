from rest_framework import serializers

from accounts.models import Role, User
from collab.api.fields import SingleLineCharField

from .models import Project


class ProjectSerializer(serializers.ModelSerializer):
    """A project as the API shows it. ``team_count`` comes annotated by the selectors."""

    workspace_id = serializers.IntegerField(read_only=True)
    team_count = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = [
            "id",
            "workspace_id",
            "name",
            "description",
            "status",
            "visibility",
            "created_at",
            "updated_at",
            "team_count",
        ]
        read_only_fields = fields

    def get_team_count(self, project) -> int:
        count = getattr(project, "team_count", None)
        return count if count is not None else project.members.count()


class ProjectCreateSerializer(serializers.Serializer):
    workspace_id = serializers.IntegerField(required=False, min_value=1)
    name = SingleLineCharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    visibility = serializers.ChoiceField(
        choices=Project.Visibility.choices, default=Project.Visibility.PRIVATE
    )


class ProjectUpdateSerializer(serializers.Serializer):
    """PUT sends every writable field (omitted ones fall back to defaults); PATCH any subset."""

    name = SingleLineCharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    visibility = serializers.ChoiceField(
        choices=Project.Visibility.choices, default=Project.Visibility.PRIVATE
    )
    status = serializers.ChoiceField(choices=Project.Status.choices, default=Project.Status.ACTIVE)


class ProjectMemberAddSerializer(serializers.Serializer):
    user_id = serializers.IntegerField(min_value=1)


class ProjectMemberSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="user.id")
    email = serializers.EmailField(source="user.email")
    name = serializers.CharField(source="user.name")
    status = serializers.ChoiceField(source="user.status", choices=User.Status.choices)
    role = serializers.ChoiceField(choices=Role.choices, allow_null=True)
    added_at = serializers.DateTimeField()
