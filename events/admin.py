from django.contrib import admin

from collab.admin import ReadOnlyAdmin

from .models import Event


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    """The event log, read-only: it is append-only, and webhooks and streams replay it."""

    list_display = ("id", "type", "workspace_id", "project_id", "actor_id", "created_at")
    list_filter = ("type",)
    # Narrow by id through the URL: ?workspace_id=3&project_id=7.
    search_fields = ("type",)
    ordering = ("-id",)
    # The log grows without bound; counting it all on every page is not worth its cost.
    show_full_result_count = False
    fields = (
        "id",
        "type",
        "workspace_id",
        "project_id",
        "actor_id",
        "created_at",
        "data",
        "changes",
    )
    readonly_fields = fields
