"""The JSON of service accounts: shown by their serializer (one source for the API, the schema
and the events' payloads), built here for the services."""

from typing import Any

from .models import ServiceAccount
from .selectors import service_accounts_described
from .serializers import ServiceAccountSerializer


def service_account_record(account: ServiceAccount) -> dict[str, Any]:
    """A service account as the API shows it, its role and teams read now."""
    [described] = service_accounts_described([account])
    return dict(ServiceAccountSerializer(described).data)
