"""Projects in the admin, written through the project services so that every change made
here records the same event as over the API (docs/guide/events-and-webhooks.md)."""

from django import forms
from django.contrib import admin
from django.db.models import Count

from accounts.models import Membership
from collab.admin import adopt

from . import services
from .models import Project, ProjectMember


class ProjectMemberForm(forms.ModelForm):
    class Meta:
        model = ProjectMember
        fields = ("user",)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["user"].disabled = True


class ProjectMemberFormSet(forms.BaseInlineFormSet):
    def clean(self):
        super().clean()
        if any(self.errors):
            return
        new_users = [
            form.cleaned_data["user"]
            for form in self.forms
            if not form.instance.pk
            and form.cleaned_data.get("user")
            and not form.cleaned_data.get("DELETE")
        ]
        members = set(
            Membership.objects.filter(
                workspace_id=self.instance.workspace_id, user__in=new_users
            ).values_list("user_id", flat=True)
        )
        outsiders = [user.email for user in new_users if user.pk not in members]
        if outsiders:
            raise forms.ValidationError(
                f"Not members of the project's workspace: {', '.join(outsiders)}."
            )


class ProjectMemberInline(admin.TabularInline):
    model = ProjectMember
    form = ProjectMemberForm
    formset = ProjectMemberFormSet
    fields = ("user", "added_at")
    readonly_fields = ("added_at",)
    autocomplete_fields = ("user",)
    extra = 0
    verbose_name = "team member"
    verbose_name_plural = "team"


class ProjectAddForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = ("workspace", "name", "description", "visibility", "created_by")
        labels = {"created_by": "Creator"}
        help_texts = {
            "created_by": "A member of the workspace. They join the project's team and are "
            "recorded as the author of its creation."
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["created_by"].required = True

    def clean(self):
        cleaned = super().clean()
        workspace, creator = cleaned.get("workspace"), cleaned.get("created_by")
        if (
            workspace
            and creator
            and not Membership.objects.filter(workspace=workspace, user=creator).exists()
        ):
            self.add_error("created_by", "This user is not a member of the workspace.")
        return cleaned


class ProjectChangeForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = services.WRITABLE_FIELDS

    def clean(self):
        cleaned = super().clean()
        # project_update's rule: an archived project only accepts being made active again.
        was_archived = Project.objects.filter(
            pk=self.instance.pk, status=Project.Status.ARCHIVED
        ).exists()
        if was_archived and self.changed_data and cleaned.get("status") != Project.Status.ACTIVE:
            raise forms.ValidationError(
                "This project is archived and read-only; set its status to active first."
            )
        return cleaned


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "workspace", "visibility", "status", "team_size", "created_at")
    list_filter = ("status", "visibility")
    list_select_related = ("workspace",)
    search_fields = ("name", "workspace__name")
    autocomplete_fields = ("workspace", "created_by")
    inlines = [ProjectMemberInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(team_size=Count("members"))

    @admin.display(ordering="team_size", description="team")
    def team_size(self, obj):
        return obj.team_size

    def get_form(self, request, obj=None, **kwargs):
        kwargs["form"] = ProjectAddForm if obj is None else ProjectChangeForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ProjectAddForm.Meta.fields
        return (
            "workspace",
            *services.WRITABLE_FIELDS,
            "created_by",
            "created_at",
            "updated_at",
        )

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return ("workspace", "created_by", "created_at", "updated_at")

    def get_inlines(self, request, obj):
        # The creator makes the first team; more members are added on the project's page.
        return self.inlines if obj is not None else []

    def save_model(self, request, obj, form, change):
        if change:
            data = {name: form.cleaned_data[name] for name in form.changed_data}
            if data:
                services.project_update(project=obj, actor=request.user, **data)
            return
        project = services.project_create(
            workspace=form.cleaned_data["workspace"],
            actor=form.cleaned_data["created_by"],
            name=form.cleaned_data["name"],
            description=form.cleaned_data["description"],
            visibility=form.cleaned_data["visibility"],
        )
        adopt(obj, project)

    def save_formset(self, request, form, formset, change):
        if formset.model is not ProjectMember:
            return super().save_formset(request, form, formset, change)
        formset.save(commit=False)
        for member in formset.new_objects:
            services.project_member_add(
                project=form.instance, user=member.user, actor=request.user, skip_existing=True
            )
        for member in formset.deleted_objects:
            services.project_member_remove(member=member, actor=request.user)

    def delete_model(self, request, obj):
        services.project_delete(project=obj, actor=request.user)

    def delete_queryset(self, request, queryset):
        for project in queryset:
            services.project_delete(project=project, actor=request.user)
