"""Comments in the admin: read where they belong (inline on their issue or pull request, whose
admins this app extends), and moderated here. A deletion goes through the service, so the
parent's count, the issue's history and the event follow as over the API."""

from django.contrib import admin

from gitintegration.admin import PullRequestAdmin
from gitintegration.models import PullRequest
from issues.admin import IssueAdmin
from issues.models import Issue

from . import services
from .models import Comment, CommentRevision


class CommentInline(admin.TabularInline):
    model = Comment
    fk_name = "issue"
    fields = ("created_at", "author", "body", "edited")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True
    verbose_name_plural = "comments (delete one from its own page)"

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("author")

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class PullCommentInline(CommentInline):
    fk_name = "pull_request"


class CommentRevisionInline(admin.TabularInline):
    model = CommentRevision
    fields = ("created_at", "replaced_at", "author", "body")
    readonly_fields = fields
    extra = 0
    can_delete = False
    verbose_name_plural = "earlier bodies"

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Comment)
class CommentAdmin(admin.ModelAdmin):
    list_display = ("__str__", "project", "author", "edited", "created_at")
    list_filter = ("edited",)
    list_select_related = ("project", "author")
    search_fields = ("body", "author__email", "author__handle")
    fields = (
        "project",
        "issue",
        "pull_request",
        "author",
        "body",
        "body_html",
        "edited",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields
    inlines = (CommentRevisionInline,)
    ordering = ("-created_at", "-id")
    show_full_result_count = False

    def has_add_permission(self, request):
        # Comments are written over the API, by their authors.
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def delete_model(self, request, obj):
        services.comment_delete(comment=obj, actor=request.user)

    def delete_queryset(self, request, queryset):
        for comment in queryset:
            services.comment_delete(comment=comment, actor=request.user)


class IssueWithCommentsAdmin(IssueAdmin):
    inlines = [*IssueAdmin.inlines, CommentInline]


class PullRequestWithCommentsAdmin(PullRequestAdmin):
    inlines = [*PullRequestAdmin.inlines, PullCommentInline]


admin.site.unregister(Issue)
admin.site.register(Issue, IssueWithCommentsAdmin)
admin.site.unregister(PullRequest)
admin.site.register(PullRequest, PullRequestWithCommentsAdmin)
