"""Repositories and pull requests in the admin, written through the git services so that a
change made here records the same events as over the API (docs/guide/events-and-webhooks.md).

Repositories are registered and deleted here (the URL guard runs in the form), synced with
the "Sync now" action, and show their last error. Pull requests can be retitled, closed and
reopened; merging stays with the API, where a conflict can be answered.
"""

from django import forms
from django.contrib import admin, messages

from collab.admin import adopt
from collab.api.exceptions import ApiError, ValidationFailed

from . import mirrors, services
from .models import Branch, PullRequest, Repository, Review

ARCHIVED_MESSAGE = "This project is archived and read-only."


def _messages(exc: ApiError) -> list[str]:
    if isinstance(exc, ValidationFailed):
        return [message for values in exc.details.values() for message in values]
    return [exc.message]


class RepositoryForm(forms.ModelForm):
    class Meta:
        model = Repository
        fields = ("project", "name", "clone_url")

    def clean(self):
        cleaned = super().clean()
        project = cleaned.get("project")
        if project is not None and project.is_archived:
            raise forms.ValidationError(ARCHIVED_MESSAGE)
        if cleaned.get("clone_url"):
            try:
                cleaned["clone_url"] = mirrors.clone_url_check(clone_url=cleaned["clone_url"])
            except ValidationFailed as exc:
                self.add_error("clone_url", _messages(exc))
        return cleaned


class BranchInline(admin.TabularInline):
    model = Branch
    fields = ("name", "commit_sha", "is_default")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Repository)
class RepositoryAdmin(admin.ModelAdmin):
    form = RepositoryForm
    list_display = ("name", "project", "sync_status", "default_branch", "last_synced_at")
    list_filter = ("sync_status",)
    search_fields = ("name", "clone_url", "project__name")
    list_select_related = ("project",)
    actions = ("sync_now",)
    inlines = (BranchInline,)
    readonly_fields = (
        "default_branch",
        "sync_status",
        "sync_error",
        "last_synced_at",
        "webhook_secret",
        "created_by",
        "created_at",
        "updated_at",
    )

    def get_readonly_fields(self, request, obj=None):
        if obj is not None:
            # A repository's identity is fixed once registered: register another instead.
            return ("project", "name", "clone_url", *self.readonly_fields)
        return ()

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("project", "name", "clone_url")
        return ("project", "name", "clone_url", *self.readonly_fields)

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else ()

    def save_model(self, request, obj, form, change):
        if change:
            return
        data = form.cleaned_data
        saved = services.repository_create(
            project=data["project"],
            actor=request.user,
            name=data["name"],
            clone_url=data["clone_url"],
        )
        adopt(obj, saved)

    def delete_model(self, request, obj):
        services.repository_delete(repository=obj, actor=request.user)

    def delete_queryset(self, request, queryset):
        for repository in queryset.select_related("project"):
            services.repository_delete(repository=repository, actor=request.user)

    @admin.action(description="Sync now")
    def sync_now(self, request, queryset):
        count = 0
        for repository in queryset:
            services.repository_sync_request(repository=repository)
            count += 1
        self.message_user(request, f"Sync queued for {count} repositories.", messages.SUCCESS)


class ReviewInline(admin.TabularInline):
    model = Review
    fields = ("author", "state", "body", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


class PullRequestForm(forms.ModelForm):
    state = forms.ChoiceField(
        choices=PullRequest.State.choices,
        help_text="Close or reopen here; merge over the API (POST /v1/pulls/:id/merge).",
    )

    class Meta:
        model = PullRequest
        fields = ("title", "description", "state")

    def clean(self):
        cleaned = super().clean()
        pull = self.instance
        if pull.repository.project.is_archived:
            raise forms.ValidationError(ARCHIVED_MESSAGE)
        state = cleaned.get("state")
        if state and state != pull.state:
            if PullRequest.State.MERGED in (state, pull.state):
                self.add_error("state", "Merged pull requests stay merged; merge over the API.")
            elif state == PullRequest.State.OPEN and (
                PullRequest.objects.filter(
                    repository_id=pull.repository_id,
                    head=pull.head,
                    base=pull.base,
                    state=PullRequest.State.OPEN,
                )
                .exclude(pk=pull.pk)
                .exists()
            ):
                self.add_error("state", "Another pull request of these branches is open.")
        return cleaned


@admin.register(PullRequest)
class PullRequestAdmin(admin.ModelAdmin):
    form = PullRequestForm
    list_display = ("__str__", "repository", "head", "base", "state", "author", "created_at")
    list_filter = ("state",)
    search_fields = ("title", "head", "base", "repository__name")
    list_select_related = ("repository", "author")
    inlines = [ReviewInline]
    readonly_fields = (
        "repository",
        "number",
        "head",
        "base",
        "author",
        "head_sha",
        "base_sha",
        "merge_commit_sha",
        "merge_method",
        "merged_by",
        "created_at",
        "updated_at",
        "merged_at",
        "closed_at",
        "comment_count",
    )
    fields = ("title", "description", "state", *readonly_fields)

    def has_add_permission(self, request):
        # Opening checks branches in the mirror: over the API.
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        data = {name: form.cleaned_data[name] for name in ("title", "description", "state")}
        original = PullRequest.objects.get(pk=obj.pk)
        adopt(obj, services.pull_request_update(pull=original, actor=request.user, **data))
