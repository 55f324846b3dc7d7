from django.http import Http404
from drf_spectacular.utils import extend_schema

from accounts import selectors as account_selectors
from accounts import services as account_services
from accounts.models import ApiKey
from accounts.views import signed_in
from collab.api.permissions import JwtOnly
from collab.api.viewsets import ApiViewSet

from . import services
from .serializers import ApiKeyCreatedSerializer, ApiKeyCreateSerializer, ApiKeySerializer


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
        account_services.api_key_revoke(api_key=self._get_key(pk))
        return self.deleted()

    def _get_key(self, pk) -> ApiKey:
        api_key = account_selectors.api_key_list(user=signed_in(self.request)).filter(pk=pk).first()
        if api_key is None:
            raise Http404
        return api_key
