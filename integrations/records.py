"""The JSON of service accounts, OAuth apps and app authorizations: shown by their serializers
(one source for the API, the schema and the events' payloads), built here for the services."""

from typing import Any

from accounts.models import AppAuthorization, OAuthApp

from .models import ServiceAccount
from .selectors import app_authorizations_described, service_accounts_described
from .serializers import (
    AppAuthorizationSerializer,
    OAuthAppSerializer,
    ServiceAccountSerializer,
)


def service_account_record(account: ServiceAccount) -> dict[str, Any]:
    """A service account as the API shows it, its role and teams read now."""
    [described] = service_accounts_described([account])
    return dict(ServiceAccountSerializer(described).data)


def oauth_app_record(app: OAuthApp) -> dict[str, Any]:
    return dict(OAuthAppSerializer(app).data)


def app_authorization_record(authorization: AppAuthorization) -> dict[str, Any]:
    [described] = app_authorizations_described([authorization])
    return dict(AppAuthorizationSerializer(described).data)
