"""``/oauth/``: the authorization server's endpoints, under the names django-oauth-toolkit
reverses (its metadata document, ``/.well-known/oauth-authorization-server``, lists them)."""

from django.urls import path
from oauth2_provider import views as toolkit

from .oauth_pages import ConsentView, SignInView, SignOutView

app_name = "oauth2_provider"

urlpatterns = [
    path("authorize", ConsentView.as_view(), name="authorize"),
    path("token", toolkit.TokenView.as_view(), name="token"),
    path("revoke", toolkit.RevokeTokenView.as_view(), name="revoke-token"),
    path("login", SignInView.as_view(), name="login"),
    path("logout", SignOutView.as_view(), name="logout"),
]
