from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import action

from accounts import selectors as account_selectors
from accounts import services as account_services
from accounts.models import ApiKey, AppAuthorization, AuditEntry, OAuthApp, Workspace
from accounts.views import signed_in
from collab.api.permissions import MANAGE, JwtOnly
from collab.api.routers import ID_PATTERN
from collab.api.viewsets import ApiViewSet

from . import oauth, selectors, services
from .filters import AuditFilter
from .models import ServiceAccount
from .records import oauth_app_record, service_account_record
from .serializers import (
    ApiKeyCreatedSerializer,
    ApiKeyCreateSerializer,
    ApiKeySerializer,
    AppAuthorizationSerializer,
    AuditEntrySerializer,
    OAuthAppCreatedSerializer,
    OAuthAppInputSerializer,
    OAuthAppSerializer,
    OAuthAppUpdateSerializer,
    ServiceAccountInputSerializer,
    ServiceAccountSerializer,
)


class ApiKeyViewSet(ApiViewSet):
    """API keys of the signed-in user. A JWT is required: keys cannot mint keys."""

    permission_classes = [*ApiViewSet.permission_classes, JwtOnly]
    serializer_class = ApiKeySerializer
    queryset = ApiKey.objects.none()  # for the schema; reads go through the selectors

    def list(self, request):
        return self.paginated(account_selectors.api_key_list(user=request.user), ApiKeySerializer)

    @extend_schema(request=ApiKeyCreateSerializer, responses={201: ApiKeyCreatedSerializer})
    def create(self, request):
        data = self.validated(ApiKeyCreateSerializer)
        api_key, plaintext = services.api_key_issue(
            user=request.user,
            name=data["name"],
            scopes=data["scopes"],
            expires_in=data.get("expiresIn"),
            projects=data.get("projects"),
        )
        api_key.key = plaintext
        return self.created(ApiKeyCreatedSerializer(api_key).data, f"/v1/api-keys/{api_key.pk}")

    def retrieve(self, request, pk=None):
        return self.ok(ApiKeySerializer(self._get_key(pk)).data)

    @extend_schema(responses={200: None})
    def destroy(self, request, pk=None):
        account_services.api_key_revoke(api_key=self._get_key(pk), actor=signed_in(request))
        return self.deleted()

    def _get_key(self, pk) -> ApiKey:
        api_key = account_selectors.api_key_list(user=signed_in(self.request)).filter(pk=pk).first()
        if api_key is None:
            raise Http404
        return api_key


# Service accounts ---------------------------------------------------------------------------


class _WorkspaceManaged(ApiViewSet):
    """What the routes of a workspace's integrations share (its service accounts, its OAuth
    apps): its owners and admins manage them, with ``users:read`` to read and ``users:write``
    to change; a credential limited to projects does not."""

    scope_group = "users"
    managed = ""  # what they are, for the refusal of a limited credential

    def _workspace_manage(self, workspace_id) -> Workspace:
        return account_selectors.workspace_require(
            user=signed_in(self.request),
            workspace_id=workspace_id,
            ability=MANAGE,
            unlimited_to=f"manage {self.managed}",
        )


class _ServiceAccountAccess(_WorkspaceManaged):
    managed = "service accounts"

    def _account(self, pk) -> ServiceAccount:
        account = selectors.service_account_get(user=signed_in(self.request), account_id=pk)
        if account is None:
            raise Http404
        self._workspace_manage(account.workspace_id)
        return account


class WorkspaceServiceAccountViewSet(_ServiceAccountAccess):
    """``/v1/workspaces/:workspace_id/service-accounts``: list and create."""

    queryset = ServiceAccount.objects.none()  # for the schema; reads go through the selectors

    @extend_schema(responses={200: ServiceAccountSerializer(many=True)}, filters=False)
    def list(self, request, workspace_id=None):
        workspace = self._workspace_manage(workspace_id)
        page = self.paginate_queryset(selectors.service_account_list(workspace_id=workspace.pk))
        described = selectors.service_accounts_described(list(page or []))
        return self.get_paginated_response(ServiceAccountSerializer(described, many=True).data)

    @extend_schema(request=ServiceAccountInputSerializer, responses={201: ServiceAccountSerializer})
    def create(self, request, workspace_id=None):
        workspace = self._workspace_manage(workspace_id)
        data = self.validated(ServiceAccountInputSerializer)
        account = services.service_account_create(
            workspace=workspace, actor=signed_in(request), **data
        )
        return self.created(service_account_record(account), f"/v1/service-accounts/{account.pk}")


class ServiceAccountViewSet(_ServiceAccountAccess):
    """``/v1/service-accounts/:id``, and its keys."""

    # No queryset: its model's key is its user's, and the schema would name the path's id
    # {user}; reads go through the selectors.
    action_scopes = {"destroy": "users:write", "keys": "users:read", "key_revoke": "users:write"}

    def required_scope(self):
        if self.action == "keys" and self.request.method == "POST":
            return "users:write"
        return super().required_scope()

    def get_permissions(self):
        if self.action in {"keys", "key_revoke"}:  # keys cannot mint keys
            return [*super().get_permissions(), JwtOnly()]
        return super().get_permissions()

    @extend_schema(responses={200: ServiceAccountSerializer})
    def retrieve(self, request, pk=None):
        return self.ok(service_account_record(self._account(pk)))

    @extend_schema(
        request=ServiceAccountInputSerializer(partial=True),
        responses={200: ServiceAccountSerializer},
    )
    def partial_update(self, request, pk=None):
        account = self._account(pk)
        data = self.validated(ServiceAccountInputSerializer, partial=True)
        account = services.service_account_update(account=account, actor=signed_in(request), **data)
        return self.ok(service_account_record(account))

    @extend_schema(responses={200: None})
    def destroy(self, request, pk=None):
        services.service_account_delete(account=self._account(pk), actor=signed_in(request))
        return self.deleted()

    @extend_schema(methods=["GET"], responses={200: ApiKeySerializer(many=True)}, filters=False)
    @extend_schema(
        methods=["POST"],
        request=ApiKeyCreateSerializer,
        responses={201: ApiKeyCreatedSerializer},
    )
    @action(detail=True, methods=["get", "post"], filter_backends=[])
    def keys(self, request, pk=None):
        account = self._account(pk)
        if request.method == "GET":
            return self.paginated(selectors.service_account_keys(account=account), ApiKeySerializer)
        data = self.validated(ApiKeyCreateSerializer)
        api_key, plaintext = services.service_account_key_issue(
            account=account,
            actor=signed_in(request),
            name=data["name"],
            scopes=data["scopes"],
            expires_in=data.get("expiresIn"),
            projects=data.get("projects"),
        )
        api_key.key = plaintext
        return self.created(
            ApiKeyCreatedSerializer(api_key).data,
            f"/v1/service-accounts/{account.pk}/keys/{api_key.pk}",
        )

    @extend_schema(responses={200: None})
    @action(detail=True, methods=["delete"], url_path=rf"keys/(?P<key_id>{ID_PATTERN})")
    def key_revoke(self, request, pk=None, key_id=None):
        account = self._account(pk)
        api_key = selectors.service_account_keys(account=account).filter(pk=key_id).first()
        if api_key is None:
            raise Http404
        account_services.api_key_revoke(api_key=api_key, actor=signed_in(request))
        return self.deleted()


# OAuth apps ---------------------------------------------------------------------------------


class _OAuthAppAccess(_WorkspaceManaged):
    """Registering an app (which makes a client secret) takes a JWT, besides."""

    managed = "OAuth apps"

    def _app(self, pk) -> OAuthApp:
        app = selectors.oauth_app_get(user=signed_in(self.request), app_id=pk)
        if app is None:
            raise Http404
        self._workspace_manage(app.workspace_id)
        return app


class WorkspaceOAuthAppViewSet(_OAuthAppAccess):
    """``/v1/workspaces/:workspace_id/oauth-apps``: list and register."""

    queryset = OAuthApp.objects.none()  # for the schema; reads go through the selectors

    def get_permissions(self):
        if self.request.method == "POST":  # a client secret is a credential: keys mint none
            return [*super().get_permissions(), JwtOnly()]
        return super().get_permissions()

    @extend_schema(responses={200: OAuthAppSerializer(many=True)}, filters=False)
    def list(self, request, workspace_id=None):
        workspace = self._workspace_manage(workspace_id)
        return self.paginated(
            selectors.oauth_app_list(workspace_id=workspace.pk), OAuthAppSerializer
        )

    @extend_schema(request=OAuthAppInputSerializer, responses={201: OAuthAppCreatedSerializer})
    def create(self, request, workspace_id=None):
        workspace = self._workspace_manage(workspace_id)
        data = self.validated(OAuthAppInputSerializer)
        app, secret = oauth.oauth_app_create(workspace=workspace, actor=signed_in(request), **data)
        return self.created(
            {**oauth_app_record(app), "client_secret": secret}, f"/v1/oauth-apps/{app.pk}"
        )


class OAuthAppViewSet(_OAuthAppAccess):
    """``/v1/oauth-apps/:id``."""

    # No queryset: its model's key is its application's, and the schema would name the path's
    # id {application}; reads go through the selectors.
    action_scopes = {"destroy": "users:write"}

    @extend_schema(responses={200: OAuthAppSerializer})
    def retrieve(self, request, pk=None):
        return self.ok(oauth_app_record(self._app(pk)))

    @extend_schema(
        request=OAuthAppUpdateSerializer(partial=True), responses={200: OAuthAppSerializer}
    )
    def partial_update(self, request, pk=None):
        app = self._app(pk)
        data = self.validated(OAuthAppUpdateSerializer, partial=True)
        app = oauth.oauth_app_update(app=app, actor=signed_in(request), **data)
        return self.ok(oauth_app_record(app))

    @extend_schema(responses={200: None})
    def destroy(self, request, pk=None):
        oauth.oauth_app_delete(app=self._app(pk), actor=signed_in(request))
        return self.deleted()


class AuthorizationViewSet(ApiViewSet):
    """``/v1/users/me/authorizations``: the apps the signed-in user authorised, and revoking
    one. With a JWT: an app does not see which other apps its user trusts."""

    permission_classes = [*ApiViewSet.permission_classes, JwtOnly]
    scope_group = "users"
    action_scopes = {"destroy": "users:write"}
    queryset = AppAuthorization.objects.none()  # for the schema; reads go through the selectors

    @extend_schema(responses={200: AppAuthorizationSerializer(many=True)}, filters=False)
    def list(self, request):
        page = self.paginate_queryset(selectors.app_authorization_list(user=signed_in(request)))
        described = selectors.app_authorizations_described(list(page or []))
        return self.get_paginated_response(AppAuthorizationSerializer(described, many=True).data)

    @extend_schema(responses={200: None})
    def destroy(self, request, pk=None):
        authorization = selectors.app_authorization_get(
            user=signed_in(request), authorization_id=pk
        )
        if authorization is None:
            raise Http404
        oauth.app_authorization_revoke(authorization=authorization, actor=signed_in(request))
        return self.deleted()


# The audit log ------------------------------------------------------------------------------


class WorkspaceAuditLogViewSet(_WorkspaceManaged):
    """``/v1/workspaces/:workspace_id/audit-log``: the workspace's credential events, the
    newest first, for its owners and admins."""

    managed = "the audit log"
    queryset = AuditEntry.objects.none()  # for the schema; reads go through the selectors
    filterset_class = AuditFilter

    @extend_schema(responses={200: AuditEntrySerializer(many=True)})
    def list(self, request, workspace_id=None):
        workspace = self._workspace_manage(workspace_id)
        entries = self.filter_queryset(selectors.audit_log(workspace_id=workspace.pk))
        return self.paginated(entries, AuditEntrySerializer)
