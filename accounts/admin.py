"""The operator's admin for accounts.

Writes that have a service go through it, as they do over the API, so an admin change
records the same event and obeys the same rules. Service errors cannot be shown on a form
once saving has started, so every rule a service enforces is also checked in the form's
``clean`` first; the service stays the authority.
"""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.contrib.auth.forms import BaseUserCreationForm
from django.contrib.auth.forms import UserChangeForm as BaseUserChangeForm
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.urls import reverse

from collab.admin import adopt
from collab.api.exceptions import Conflict

from . import services
from .forms import ProtectedSignIn
from .models import Invitation, Membership, Role, User, Workspace

# Signing in ---------------------------------------------------------------------------------


class AdminLoginForm(ProtectedSignIn, AdminAuthenticationForm):
    """The admin's sign-in, behind the API login's protection (``accounts.forms``); the admin
    then wants a member of its staff."""


admin.site.login_form = AdminLoginForm


# Users ----------------------------------------------------------------------------------


class UserCreationForm(BaseUserCreationForm):
    """Email and the password twice (Django's validators apply); the rest on the next page."""

    class Meta:
        model = User
        fields = ("email", "name")


class UserChangeForm(BaseUserChangeForm):
    class Meta:
        model = User
        fields = "__all__"
        field_classes: dict = {}


class MembershipOfUserInline(admin.TabularInline):
    model = Membership
    fk_name = "user"
    fields = ("workspace", "role", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True
    verbose_name_plural = "Workspaces (change them on the workspace)"

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    form = UserChangeForm
    add_form = UserCreationForm
    # The stock template speaks of a username; the generic one fits an email login.
    add_form_template = None
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Profile", {"fields": ("handle", "name", "tier", "status")}),
        (
            "Admin access",
            {"fields": ("is_staff", "is_superuser", "groups", "user_permissions")},
        ),
        ("Dates", {"fields": ("created_at", "last_login")}),
    )
    add_fieldsets = (
        (None, {"classes": ("wide",), "fields": ("email", "name", "password1", "password2")}),
    )
    readonly_fields = ("created_at", "last_login")
    list_display = ("email", "handle", "name", "tier", "status", "is_staff", "created_at")
    list_filter = ("tier", "status", "is_staff", "is_superuser")
    search_fields = ("email", "handle", "name")
    ordering = ("email",)
    inlines = [MembershipOfUserInline]

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else []


# Workspaces and memberships ---------------------------------------------------------------


class MembershipInlineForm(forms.ModelForm):
    class Meta:
        model = Membership
        fields = ("user", "role")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            # Moving a membership to another person is a removal and an addition.
            self.fields["user"].disabled = True


class MembershipInlineFormSet(forms.BaseInlineFormSet):
    def clean(self):
        super().clean()
        if any(self.errors):
            return
        roles = [
            form.cleaned_data.get("role")
            for form in self.forms
            if form.cleaned_data and not form.cleaned_data.get("DELETE")
        ]
        if self.instance.pk and Role.OWNER not in roles:
            raise forms.ValidationError("A workspace keeps at least one owner.")


class MembershipInline(admin.TabularInline):
    model = Membership
    form = MembershipInlineForm
    formset = MembershipInlineFormSet
    fields = ("user", "role", "created_at")
    readonly_fields = ("created_at",)
    autocomplete_fields = ("user",)
    extra = 0


class WorkspaceAddForm(forms.ModelForm):
    owner_email = forms.EmailField(
        label="Owner's email", help_text="An existing user; they become the workspace's owner."
    )

    class Meta:
        model = Workspace
        fields = ("name",)

    def clean_owner_email(self):
        email = self.cleaned_data["owner_email"].strip().lower()
        owner = User.objects.filter(email=email).first()
        if owner is None:
            raise forms.ValidationError("No user has this email address.")
        self.cleaned_data["owner"] = owner
        return email


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "slug", "member_count", "created_at")
    search_fields = ("name", "slug")
    readonly_fields = ("created_at",)
    inlines = [MembershipInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(member_count=Count("memberships"))

    @admin.display(ordering="member_count", description="members")
    def member_count(self, obj):
        return obj.member_count

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = WorkspaceAddForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("name", "owner_email")
        return ("name", "slug", "created_at")

    def get_inlines(self, request, obj):
        # A new workspace starts with its owner; more members are added on its page.
        return self.inlines if obj is not None else []

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        workspace = services.workspace_create(
            name=form.cleaned_data["name"], owner=form.cleaned_data["owner"]
        )
        adopt(obj, workspace)

    def save_formset(self, request, form, formset, change):
        if formset.model is not Membership:
            return super().save_formset(request, form, formset, change)
        formset.save(commit=False)
        # Additions first, so a new owner exists before the old one is removed or demoted.
        for membership in formset.new_objects:
            services.membership_add(
                workspace=form.instance,
                user=membership.user,
                role=membership.role,
                actor=request.user,
            )
        # Promotions to owner before demotions, for the same reason.
        changed = sorted(
            (membership for membership, _fields in formset.changed_objects),
            key=lambda membership: membership.role != Role.OWNER,
        )
        for membership in changed:
            role = membership.role
            membership.role = Membership.objects.get(pk=membership.pk).role
            services.membership_update(membership=membership, role=role, actor=request.user)
        for membership in formset.deleted_objects:
            services.membership_remove(membership=membership, actor=request.user)


class MembershipForm(forms.ModelForm):
    class Meta:
        model = Membership
        fields = ("workspace", "user", "role")

    def clean(self):
        cleaned = super().clean()
        if self.instance.pk and "role" in self.changed_data and cleaned.get("role") != Role.OWNER:
            previous = Membership.objects.get(pk=self.instance.pk).role
            if previous == Role.OWNER and _is_last_owner(self.instance):
                raise forms.ValidationError("A workspace keeps at least one owner.")
        return cleaned


def _is_last_owner(membership: Membership) -> bool:
    return (
        not Membership.objects.filter(workspace_id=membership.workspace_id, role=Role.OWNER)
        .exclude(pk=membership.pk)
        .exists()
    )


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    form = MembershipForm
    list_display = ("id", "workspace", "user", "role", "created_at")
    list_filter = ("role",)
    list_select_related = ("workspace", "user")
    search_fields = ("user__email", "user__name", "workspace__name")
    autocomplete_fields = ("workspace", "user")

    def get_readonly_fields(self, request, obj=None):
        return ("workspace", "user", "created_at") if obj is not None else ()

    def save_model(self, request, obj, form, change):
        if change:
            role = obj.role
            obj.role = Membership.objects.get(pk=obj.pk).role
            services.membership_update(membership=obj, role=role, actor=request.user)
            return
        membership = services.membership_add(
            workspace=obj.workspace, user=obj.user, role=obj.role, actor=request.user
        )
        adopt(obj, membership)

    def delete_view(self, request, object_id, extra_context=None):
        membership = self.get_object(request, object_id)
        if membership is not None and membership.role == Role.OWNER and _is_last_owner(membership):
            self.message_user(
                request,
                "This is the workspace's last owner: make someone else owner first.",
                messages.ERROR,
            )
            return HttpResponseRedirect(
                reverse("admin:accounts_membership_change", args=[membership.pk])
            )
        return super().delete_view(request, object_id, extra_context)

    def delete_model(self, request, obj):
        services.membership_remove(membership=obj, actor=request.user)

    def delete_queryset(self, request, queryset):
        for membership in queryset.select_related("workspace", "user"):
            try:
                services.membership_remove(membership=membership, actor=request.user)
            except Conflict:
                self.message_user(
                    request,
                    f"{membership.user} is the last owner of {membership.workspace}; kept.",
                    messages.ERROR,
                )


# Invitations ------------------------------------------------------------------------------


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """Read-only: invitations are made and accepted over the API, with their emails."""

    list_display = (
        "id",
        "email",
        "workspace",
        "role",
        "status_now",
        "email_status",
        "expires_at",
        "created_at",
    )
    list_filter = ("status", "email_status", "role")
    list_select_related = ("workspace",)
    search_fields = ("email", "workspace__name")
    fields = (
        "workspace",
        "email",
        "role",
        "status",
        "projects",
        "invited_by",
        "user",
        "expires_at",
        "accepted_at",
        "created_at",
        "email_status",
        "email_error",
        "email_attempts",
    )
    actions = ["revoke_invitations"]

    @admin.display(description="status")
    def status_now(self, obj):
        return obj.effective_status

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.action(description="Revoke selected pending invitations")
    def revoke_invitations(self, request, queryset):
        revoked = 0
        for invitation in queryset.select_related("user"):
            try:
                services.invitation_revoke(invitation=invitation, actor=request.user)
                revoked += 1
            except Conflict:
                continue
        self.message_user(request, f"Revoked {revoked} invitation(s).", messages.SUCCESS)
