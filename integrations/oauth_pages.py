"""The pages of the OAuth 2.0 authorization server (django-oauth-toolkit runs the protocol):
signing in, and the consent page, where a user sees which workspace and scopes an app asks
for, chooses the projects it may reach, and allows or denies it."""

from urllib.parse import urlsplit

from csp.constants import SELF
from django import forms
from django.contrib.auth import views as auth_views
from django.db import transaction
from oauth2_provider.forms import AllowForm
from oauth2_provider.views import AuthorizationView

from accounts.forms import ProtectedSignIn
from accounts.oauth import SCOPE_DESCRIPTIONS
from accounts.roles import user_roles
from collab.api.acting import acting_set
from collab.api.exceptions import ValidationFailed
from collab.api.ratelimit import client_address
from projects.selectors import project_list

from . import oauth, selectors


class SignInView(auth_views.LoginView):
    """``/oauth/login``: a person signs in (a service account never does) to answer an app."""

    template_name = "oauth/login.html"
    authentication_form = ProtectedSignIn


class SignOutView(auth_views.LogoutView):
    """``/oauth/logout`` (POST): to answer as someone else."""

    template_name = "oauth/signed_out.html"


class ConsentForm(AllowForm):
    projects = forms.TypedMultipleChoiceField(
        coerce=int, required=False, widget=forms.CheckboxSelectMultiple
    )


class ConsentView(AuthorizationView):
    """``/oauth/authorize``: django-oauth-toolkit's authorization endpoint with the page of
    this service. Allowing records the user's authorization (the projects chosen) and the
    ``app.authorized`` event in the transaction that issues the code."""

    template_name = "oauth/consent.html"
    form_class = ConsentForm

    def _client_id(self) -> str:
        source = self.request.POST if self.request.method == "POST" else self.request.GET
        return source.get("client_id", "")

    def _app(self):
        if not hasattr(self, "_app_cached"):
            self._app_cached = selectors.oauth_app_by_client(client_id=self._client_id())
        return self._app_cached

    def _projects(self):
        """The person's projects of the app's workspace, read once (the form's choices and
        its initial ticks)."""
        if not hasattr(self, "_projects_cached"):
            app = self._app()
            self._projects_cached = (
                []
                if app is None
                else list(
                    project_list(user=self.request.user)
                    .filter(workspace_id=app.workspace_id)
                    .order_by("name", "id")
                )
            )
        return self._projects_cached

    def get_form(self, form_class=None):
        form = super().get_form(form_class)
        form.fields["projects"].choices = [
            (project.pk, project.name) for project in self._projects()
        ]
        return form

    def get_initial(self):
        initial = super().get_initial()
        initial["projects"] = [project.pk for project in self._projects()]
        return initial

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        app = self._app()
        form = context.get("form")
        scopes = (form["scope"].value() or "").split() if form is not None else []
        context.update(
            app=app,
            workspace=app.workspace if app else None,
            member=app is not None and app.workspace_id in user_roles(self.request.user),
            scope_rows=[(scope, SCOPE_DESCRIPTIONS.get(scope, scope)) for scope in scopes],
        )
        return context

    def render_to_response(self, context, **response_kwargs):
        response = super().render_to_response(context, **response_kwargs)
        # The form's answer is a redirect to the app: this page's policy lets it go there.
        redirect_uri = context.get("redirect_uri") or (
            context["form"]["redirect_uri"].value() if context.get("form") else ""
        )
        app = self._app()
        origin = _origin(redirect_uri or "")
        # Only an address the app registered: the form's fields come back from the browser.
        if origin and app is not None and app.application.redirect_uri_allowed(redirect_uri):
            response._csp_update = {"form-action": [SELF, origin]}
        return response

    def form_valid(self, form):
        app = self._app()
        if not form.cleaned_data.get("allow") or app is None:
            return super().form_valid(form)  # a denial: the app hears access_denied
        if app.workspace_id not in user_roles(self.request.user):
            form.add_error(None, "You are not a member of this app's workspace.")
            return self.form_invalid(form)
        try:
            projects = oauth.consent_projects(
                user=self.request.user, app=app, project_ids=form.cleaned_data["projects"]
            )
        except ValidationFailed as refused:
            form.add_error("projects", refused.details.get("projects", refused.message))
            return self.form_invalid(form)
        # The person answers with the page's session: what the authorization records says so.
        acting_set(
            user_id=self.request.user.pk,
            kind=self.request.user.kind,
            credential="session",
            address=client_address(self.request),
        )
        with transaction.atomic():
            response = super().form_valid(form)
            if self.success_url:  # a code was issued (an error redirects without one)
                oauth.app_authorization_grant(
                    user=self.request.user,
                    app=app,
                    scopes=form.cleaned_data["scope"].split(),
                    projects=projects,
                )
        return response


def _origin(uri: str) -> str:
    parts = urlsplit(uri)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        return ""
    return f"{parts.scheme}://{parts.netloc}"
