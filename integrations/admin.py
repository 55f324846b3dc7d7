"""The operator's admin for API keys (minted through the service that checks what they may
reach, the plaintext shown once), service accounts, and OAuth apps with the users'
authorizations of them."""

from django import forms
from django.contrib import admin, messages
from oauth2_provider import models as toolkit

from accounts import services as account_services
from accounts.models import ApiKey, AppAuthorization, AuditEntry, OAuthApp
from collab.admin import ReadOnlyAdmin, adopt
from collab.api.exceptions import ValidationFailed
from collab.api.scopes import ALL_SCOPES

from . import oauth, services
from .models import ServiceAccount

# API keys ---------------------------------------------------------------------------------


class ApiKeyAddForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(
        choices=[(scope, scope) for scope in ALL_SCOPES],
        widget=forms.CheckboxSelectMultiple,
        help_text="Each :admin implies :write, which implies :read.",
    )
    projects = forms.CharField(
        required=False,
        help_text="Comma-separated ids of the projects the key is limited to (projects its "
        "owner sees); blank for every project they see.",
    )
    expires_in = forms.CharField(
        label="Expires in",
        required=False,
        initial="1y",
        max_length=32,
        help_text="A number and a unit s, m, h, d, w or y ('90d', '1y'); blank or 'never' "
        "for no expiry.",
    )

    class Meta:
        model = ApiKey
        fields = ("user", "name")

    def clean_expires_in(self):
        value = self.cleaned_data["expires_in"].strip() or None
        try:
            account_services.parse_expires_in(value)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        return value

    def clean_projects(self):
        raw = [part.strip() for part in self.cleaned_data["projects"].split(",") if part.strip()]
        if not raw:
            return None
        if not all(part.isdigit() and int(part) > 0 for part in raw):
            raise forms.ValidationError("Give project ids, separated by commas.")
        return [int(part) for part in raw]

    def clean(self):
        cleaned = super().clean()
        user, projects = cleaned.get("user"), cleaned.get("projects")
        if user is not None and projects is not None:
            try:
                services.projects_seen(user=user, project_ids=projects)
            except ValidationFailed as exc:
                self.add_error("projects", exc.message)
        return cleaned


class RevokedFilter(admin.SimpleListFilter):
    title = "revoked"
    parameter_name = "revoked"

    def lookups(self, request, model_admin):
        return [("yes", "Revoked"), ("no", "Not revoked")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(revoked_at__isnull=False)
        if self.value() == "no":
            return queryset.filter(revoked_at__isnull=True)
        return queryset


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are minted here through the service; the plaintext is shown once, after saving.

    Only the name can change afterwards. The hash never appears anywhere.
    """

    list_display = (
        "prefix",
        "name",
        "owner",
        "scope_list",
        "project_list",
        "expires_at",
        "last_used_at",
        "revoked",
    )
    list_filter = (RevokedFilter,)
    list_select_related = ("user",)
    search_fields = ("prefix", "name", "user__email")
    autocomplete_fields = ("user",)
    exclude = ("key_hash",)
    actions = ["revoke_keys"]

    @admin.display(ordering="user__email")
    def owner(self, obj):
        return obj.user.email

    @admin.display(description="scopes")
    def scope_list(self, obj):
        return ", ".join(obj.scopes)

    @admin.display(description="projects")
    def project_list(self, obj):
        return "every project" if obj.projects is None else ", ".join(map(str, obj.projects))

    @admin.display(boolean=True, ordering="revoked_at")
    def revoked(self, obj):
        return obj.is_revoked

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = ApiKeyAddForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("user", "name", "scopes", "projects", "expires_in")
        return (
            "name",
            "prefix",
            "user",
            "scope_list",
            "project_list",
            "created_at",
            "expires_at",
            "last_used_at",
            "revoked_at",
        )

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return (
            "prefix",
            "user",
            "scope_list",
            "project_list",
            "created_at",
            "expires_at",
            "last_used_at",
            "revoked_at",
        )

    def save_model(self, request, obj, form, change):
        if change:
            obj.save(update_fields=["name"])
            return
        api_key, plaintext = services.api_key_issue(
            user=form.cleaned_data["user"],
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            expires_in=form.cleaned_data["expires_in"],
            projects=form.cleaned_data["projects"],
        )
        adopt(obj, api_key)
        # The only time the key exists outside its owner's hands: the message lives in the
        # signed messages cookie until the next page shows it, then it is gone.
        self.message_user(
            request,
            f"Copy the new API key now, it will not be shown again: {plaintext}",
            messages.SUCCESS,
        )

    @admin.action(description="Revoke selected keys", permissions=["change"])
    def revoke_keys(self, request, queryset):
        revoked = 0
        for api_key in queryset.filter(revoked_at__isnull=True):
            account_services.api_key_revoke(api_key=api_key, actor=request.user)
            revoked += 1
        self.message_user(request, f"Revoked {revoked} API key(s).", messages.SUCCESS)


# Service accounts ---------------------------------------------------------------------------


@admin.register(ServiceAccount)
class ServiceAccountAdmin(admin.ModelAdmin):
    """Service accounts are made over the API by their workspace's owners and admins; here
    they are looked up and deleted (their keys revoked at once)."""

    list_display = ("name", "handle", "workspace", "created_by", "created_at", "deleted_at")
    list_filter = (("deleted_at", admin.EmptyFieldListFilter),)
    list_select_related = ("user", "workspace", "created_by")
    search_fields = ("user__name", "user__handle", "workspace__name")
    fields = ("user", "workspace", "created_by", "created_at", "deleted_at", "keys")
    readonly_fields = fields
    actions = ["delete_accounts"]

    @admin.display(ordering="user__name")
    def name(self, obj):
        return obj.user.name

    @admin.display(ordering="user__handle")
    def handle(self, obj):
        return obj.user.handle

    @admin.display(description="keys")
    def keys(self, obj):
        """Its keys, by prefix and name (each revoked on the API keys page, or all at once
        by deleting the account)."""
        rows = ApiKey.objects.filter(user_id=obj.pk).order_by("-id")
        shown = [
            f"{key.prefix}… {key.name}{' (revoked)' if key.is_revoked else ''}" for key in rows
        ]
        return "; ".join(shown) or "none"

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # deleting one keeps its row: the action below

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    @admin.action(description="Delete selected service accounts (revoke their keys)")
    def delete_accounts(self, request, queryset):
        deleted = 0
        for account in queryset.filter(deleted_at__isnull=True).select_related("user"):
            services.service_account_delete(account=account, actor=request.user)
            deleted += 1
        self.message_user(request, f"Deleted {deleted} service account(s).", messages.SUCCESS)


# OAuth apps ---------------------------------------------------------------------------------

# django-oauth-toolkit's own pages would make a client without its workspace and scopes, or
# a token by hand: apps are registered over the API by their workspace's owners and admins,
# and looked up and deleted here.
for model in (
    toolkit.get_application_model(),
    toolkit.get_access_token_model(),
    toolkit.get_refresh_token_model(),
    toolkit.get_grant_model(),
    toolkit.get_id_token_model(),
):
    if admin.site.is_registered(model):
        admin.site.unregister(model)


@admin.register(OAuthApp)
class OAuthAppAdmin(admin.ModelAdmin):
    list_display = ("name", "client_id", "client_type", "workspace", "created_by", "created_at")
    list_select_related = ("application", "workspace", "created_by")
    search_fields = ("application__name", "application__client_id", "workspace__name")
    fields = (
        "name",
        "client_id",
        "client_type",
        "redirect_uris",
        "scopes",
        "workspace",
        "created_by",
        "created_at",
        "authorized_by",
    )
    readonly_fields = fields
    actions = ["delete_apps"]

    @admin.display(ordering="application__name")
    def name(self, obj):
        return obj.application.name

    @admin.display(ordering="application__client_id")
    def client_id(self, obj):
        return obj.application.client_id

    @admin.display(ordering="application__client_type")
    def client_type(self, obj):
        return obj.application.client_type

    def redirect_uris(self, obj):
        return ", ".join(obj.application.redirect_uris.split())

    @admin.display(description="authorised by")
    def authorized_by(self, obj):
        count = AppAuthorization.objects.filter(application_id=obj.pk).count()
        return f"{count} user(s)"

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # the action below deletes through the service (and records the event)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    @admin.action(description="Delete selected apps (their tokens stop at once)")
    def delete_apps(self, request, queryset):
        deleted = 0
        for app in queryset.select_related("application"):
            oauth.oauth_app_delete(app=app, actor=request.user)
            deleted += 1
        self.message_user(request, f"Deleted {deleted} app(s).", messages.SUCCESS)


@admin.register(AppAuthorization)
class AppAuthorizationAdmin(admin.ModelAdmin):
    list_display = ("user", "application", "scopes", "projects", "created_at", "updated_at")
    list_select_related = ("user", "application")
    search_fields = ("user__email", "application__name")
    fields = ("user", "application", "scopes", "projects", "created_at", "updated_at")
    readonly_fields = fields
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False  # the action below revokes through the service (and records the event)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    @admin.action(description="Revoke selected authorizations (their tokens stop at once)")
    def revoke(self, request, queryset):
        revoked = 0
        for authorization in queryset:
            oauth.app_authorization_revoke(authorization=authorization, actor=request.user)
            revoked += 1
        self.message_user(request, f"Revoked {revoked} authorization(s).", messages.SUCCESS)


# The audit log ------------------------------------------------------------------------------


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    """Read only: what the services recorded of credentials."""

    list_display = ("id", "created_at", "workspace", "type", "actor_id", "address")
    list_filter = ("type",)
    list_select_related = ("workspace",)
    search_fields = ("type", "address", "workspace__name")
    fields = ("workspace", "type", "actor_id", "actor_detail", "subject", "address", "created_at")
    readonly_fields = fields
