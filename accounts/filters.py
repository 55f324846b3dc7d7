from django.db.models import Q
from django.utils import timezone
from django_filters import rest_framework as filters

from .models import Invitation, Membership, Role, User


class UserFilter(filters.FilterSet):
    role = filters.ChoiceFilter(choices=Role.choices)
    status = filters.ChoiceFilter(field_name="user__status", choices=User.Status.choices)
    q = filters.CharFilter(method="filter_text", help_text="Text in the name, email or handle.")

    class Meta:
        model = Membership
        fields = ["role", "status"]

    def filter_text(self, queryset, name, value):
        return queryset.filter(
            Q(user__email__icontains=value)
            | Q(user__name__icontains=value)
            | Q(user__handle__icontains=value)
        )


class InvitationFilter(filters.FilterSet):
    status = filters.ChoiceFilter(choices=Invitation.Status.choices, method="filter_status")

    class Meta:
        model = Invitation
        fields = ["status"]

    def filter_status(self, queryset, name, value):
        # A pending invitation past its expiry is reported (and filtered) as expired.
        now = timezone.now()
        if value == Invitation.Status.PENDING:
            return queryset.filter(status=value, expires_at__gt=now)
        if value == Invitation.Status.EXPIRED:
            return queryset.filter(
                Q(status=value) | Q(status=Invitation.Status.PENDING, expires_at__lte=now)
            )
        return queryset.filter(status=value)
