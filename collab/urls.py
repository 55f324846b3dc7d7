"""The project's routes: each app's own urls.py, included under /v1/, plus what belongs to
no app (health, the schema and its docs, the admin), and the OAuth authorization server."""

from django.contrib import admin
from django.urls import include, path, re_path
from oauth2_provider.views import OAuthServerMetadataView

from collab import views

urlpatterns = [
    path("v1/", include("analytics.urls")),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("metrics", views.metrics, name="metrics"),
    path("v1/schema", views.SchemaView.as_view(), name="schema"),
    path("v1/docs", views.DocsView.as_view(url_name="schema"), name="docs"),
    path("v1/", include("accounts.urls")),
    path("v1/", include("projects.urls")),
    path("v1/", include("issues.urls")),
    path("v1/", include("notifications.urls")),
    path("v1/", include("gitintegration.urls")),
    path("v1/", include("comments.urls")),
    path("v1/", include("search.urls")),
    path("v1/", include("transfer.urls")),
    path("v1/", include("integrations.urls")),
    path("admin/", admin.site.urls),
    # OAuth 2.0 for third-party apps: the endpoints and their metadata (RFC 8414).
    path("oauth/", include("integrations.oauth_urls")),
    path(
        ".well-known/oauth-authorization-server",
        OAuthServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
    # Any other path, newlines and all, is the API's JSON 404, never an HTML page.
    re_path(r"^(?!admin/|static/)[\s\S]*\Z", views.not_found),
]

handler400 = "collab.views.bad_request"
handler404 = "collab.views.not_found"
handler500 = "collab.views.server_error"
