"""Issues and labels in the admin, written through the issue services so that a change made here
records the same history rows and events as over the API (docs/guide/issues.md,
docs/guide/events-and-webhooks.md).

The services raise API errors, which a form cannot show once saving has started, so every
rule they enforce (assignee who can see the project, label names unique per project, the
read-only archived project) is checked in the forms' ``clean`` first.
"""

from django import forms
from django.contrib import admin
from django.core.validators import RegexValidator

from collab.admin import adopt

from . import selectors, services
from .models import Issue, IssueHistory, Label
from .serializers import COLOR_PATTERN

ARCHIVED_MESSAGE = "This project is archived and read-only."


# Issues -----------------------------------------------------------------------------------


class LabelChoiceField(forms.ModelMultipleChoiceField):
    """Labels named with their project: the add form lists every project's."""

    def label_from_instance(self, obj):
        return f"{obj.project.name}: {obj.name}"


class IssueForm(forms.ModelForm):
    """Checks what ``issue_create``/``issue_update`` would refuse."""

    class Meta:
        model = Issue
        fields = (
            "project",
            "title",
            "description",
            "type",
            "priority",
            "status",
            "assignee",
            "labels",
        )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        labels = self.fields.get("labels")
        if labels is None:
            return
        labels.queryset = Label.objects.select_related("project").order_by("project__name", "name")
        if self.instance.pk:
            # An issue carries its own project's labels only.
            labels.queryset = labels.queryset.filter(project_id=self.instance.project_id)

    def clean(self):
        cleaned = super().clean()
        project = cleaned.get("project") if "project" in self.fields else self.instance.project
        if project is None:
            return cleaned
        if project.is_archived:
            raise forms.ValidationError(ARCHIVED_MESSAGE)
        assignee = cleaned.get("assignee")
        # As in issue_update: keeping an assignee who has since lost sight of it is allowed.
        changed = "assignee" in self.changed_data or not self.instance.pk
        if (
            assignee is not None
            and changed
            and not selectors.assignee_allowed(project=project, user=assignee)
        ):
            self.add_error(
                "assignee", "The assignee must be an active user who can see this project."
            )
        foreign = [
            label.name for label in cleaned.get("labels") or [] if label.project_id != project.pk
        ]
        if foreign:
            self.add_error("labels", f"Not labels of this project: {', '.join(foreign)}.")
        return cleaned

    def service_data(self, names) -> dict:
        """The cleaned values of ``names`` in the services' terms (ids, label names)."""
        data = {}
        for name in names:
            value = self.cleaned_data[name]
            if name == "assignee":
                data["assignee_id"] = value.pk if value is not None else None
            elif name == "labels":
                data["labels"] = [label.name for label in value]
            elif name != "project":
                data[name] = value
        return data


class IssueHistoryInline(admin.TabularInline):
    """The issue's history, as the services wrote it: read-only."""

    model = IssueHistory
    fields = ("created_at", "field", "old_value", "new_value", "actor", "source")
    readonly_fields = fields
    extra = 0
    can_delete = False
    verbose_name_plural = "history"

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("actor")

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Issue)
class IssueAdmin(admin.ModelAdmin):
    """Issues added here are reported by the signed-in operator; their history rows and
    events name the operator as actor, with ``source`` "admin"."""

    form = IssueForm
    list_display = (
        "project",
        "number",
        "title",
        "type",
        "priority",
        "status",
        "assignee",
        "updated_at",
    )
    list_display_links = ("number", "title")
    list_filter = ("status", "type", "priority", "project")
    list_select_related = ("project", "assignee")
    # ``number__exact`` compares the number as text: "12" finds #12, and words do not fail.
    search_fields = ("title", "description", "number__exact")
    autocomplete_fields = ("project", "assignee")
    filter_horizontal = ("labels",)
    ordering = ("-created_at", "-id")
    # Projects hold up to millions of issues: no full count on every page.
    show_full_result_count = False
    inlines = [IssueHistoryInline]

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        if db_field.name == "labels":
            kwargs["form_class"] = LabelChoiceField
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return IssueForm.Meta.fields
        return (
            "project",
            "number",
            "title",
            "description",
            "type",
            "priority",
            "status",
            "assignee",
            "labels",
            "reporter",
            "created_at",
            "updated_at",
            "closed_at",
            "comment_count",
        )

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return (
            "project",
            "number",
            "reporter",
            "created_at",
            "updated_at",
            "closed_at",
            "comment_count",
        )

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else []

    def has_change_permission(self, request, obj=None):
        if obj is not None and obj.project.is_archived:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.project.is_archived:
            return False
        return super().has_delete_permission(request, obj)

    def save_model(self, request, obj, form, change):
        if change:
            data = form.service_data(form.changed_data)
            if data:
                issue, _record = services.issue_update(
                    issue=obj, actor=request.user, source="admin", **data
                )
                adopt(obj, issue)
            return
        issue = services.issue_create(
            project=form.cleaned_data["project"],
            actor=request.user,
            **form.service_data(IssueForm.Meta.fields),
        )
        adopt(obj, issue)

    def save_related(self, request, form, formsets, change):
        # No form.save_m2m(): the service above wrote the labels, with their history row.
        for formset in formsets:
            # The history inline is read-only: this only lists its (absent) changes for the
            # admin's log message.
            formset.save(commit=False)

    def delete_model(self, request, obj):
        services.issue_delete(issue=obj, actor=request.user)

    def delete_queryset(self, request, queryset):
        # Archived projects' issues never get here: has_delete_permission refuses the batch.
        for issue in queryset:
            services.issue_delete(issue=issue, actor=request.user)


# Labels -----------------------------------------------------------------------------------


class LabelForm(forms.ModelForm):
    color = forms.CharField(
        max_length=7,
        initial="#6b7280",
        validators=[RegexValidator(COLOR_PATTERN, "Give a colour as #rrggbb.")],
    )

    class Meta:
        model = Label
        fields = ("project", "name", "color", "description")

    def clean(self):
        cleaned = super().clean()
        project = cleaned.get("project") if "project" in self.fields else self.instance.project
        if project is None:
            return cleaned
        if project.is_archived:
            raise forms.ValidationError(ARCHIVED_MESSAGE)
        name = cleaned.get("name")
        # With the project read-only, the model's unique constraint is not checked by the form.
        taken = Label.objects.filter(project=project, name=name).exclude(pk=self.instance.pk)
        if name and taken.exists():
            self.add_error("name", "A label with this name exists already.")
        return cleaned


@admin.register(Label)
class LabelAdmin(admin.ModelAdmin):
    form = LabelForm
    list_display = ("name", "project", "color", "description", "created_at")
    list_filter = ("project",)
    list_select_related = ("project",)
    search_fields = ("name", "project__name")
    autocomplete_fields = ("project",)
    ordering = ("project__name", "name")

    def get_fields(self, request, obj=None):
        if obj is None:
            return LabelForm.Meta.fields
        return (*LabelForm.Meta.fields, "created_at")

    def get_readonly_fields(self, request, obj=None):
        return ("project", "created_at") if obj is not None else ()

    def has_change_permission(self, request, obj=None):
        if obj is not None and obj.project.is_archived:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.project.is_archived:
            return False
        return super().has_delete_permission(request, obj)

    def save_model(self, request, obj, form, change):
        if change:
            data = {name: form.cleaned_data[name] for name in form.changed_data}
            if data:
                # label_update compares with the label it is given: the stored one, not the
                # form's instance, which already carries the new values.
                stored = Label.objects.select_related("project").get(pk=obj.pk)
                adopt(obj, services.label_update(label=stored, actor=request.user, **data))
            return
        data = {name: form.cleaned_data[name] for name in ("name", "color", "description")}
        label = services.label_create(
            project=form.cleaned_data["project"], actor=request.user, **data
        )
        adopt(obj, label)

    def delete_model(self, request, obj):
        services.label_delete(label=obj, actor=request.user)

    def delete_queryset(self, request, queryset):
        # Archived projects' labels never get here: has_delete_permission refuses the batch.
        for label in queryset.select_related("project"):
            services.label_delete(label=label, actor=request.user)
