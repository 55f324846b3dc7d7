from django_filters import rest_framework as filters

from accounts.audit import AUDIT_KINDS
from accounts.models import AuditEntry
from collab.api.filters import CachedFormFilterSet, IdFilter


class AuditFilter(CachedFormFilterSet):
    type = filters.ChoiceFilter(
        choices=[(kind, kind) for kind in AUDIT_KINDS], help_text="Only entries of this kind."
    )
    actor_id = IdFilter(help_text="Only what this user (or service account) did.")

    class Meta:
        model = AuditEntry
        fields: list[str] = []
