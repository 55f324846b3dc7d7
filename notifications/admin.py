from django.contrib import admin, messages

from collab.api.exceptions import Conflict

from . import services
from .models import Delivery, DeliveryAttempt, Webhook


class DeliveryAttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    extra = 0
    can_delete = False
    fields = ("number", "started_at", "duration_ms", "status_code", "error", "response_excerpt")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    """Webhooks are registered over the API (the secret never shows here); the admin reads
    them and switches them on or off through the service, so the change is an event too."""

    list_display = (
        "id",
        "url",
        "workspace",
        "project",
        "is_active",
        "failing_since",
        "last_delivery_at",
    )
    list_filter = ("is_active",)
    search_fields = ("url", "workspace__name", "project__name")
    list_select_related = ("workspace", "project")
    fields = (
        "workspace",
        "project",
        "url",
        "events",
        "description",
        "is_active",
        "disabled_reason",
        "disabled_notified_at",
        "failing_since",
        "last_delivery_at",
        "created_by",
        "created_at",
        "updated_at",
    )
    readonly_fields = tuple(name for name in fields if name != "is_active")
    actions = ("switch_on", "switch_off")

    def has_add_permission(self, request):
        return False

    def save_model(self, request, obj, form, change):
        services.webhook_update(webhook=obj, actor=request.user, active=obj.is_active)

    @admin.action(description="Switch on the selected webhooks")
    def switch_on(self, request, queryset):
        for webhook in queryset:
            services.webhook_update(webhook=webhook, actor=request.user, active=True)

    @admin.action(description="Switch off the selected webhooks")
    def switch_off(self, request, queryset):
        for webhook in queryset:
            services.webhook_update(webhook=webhook, actor=request.user, active=False)


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    """The delivery log, every attempt inline; "redeliver" sends a delivery again."""

    list_display = (
        "id",
        "uuid",
        "webhook",
        "event",
        "status",
        "attempts",
        "last_status_code",
        "next_attempt_at",
        "created_at",
    )
    list_filter = ("status",)
    search_fields = ("uuid", "webhook__url")
    list_select_related = ("webhook", "event")
    show_full_result_count = False
    inlines = (DeliveryAttemptInline,)
    actions = ("redeliver",)
    fields = (
        "uuid",
        "webhook",
        "event",
        "redelivery_of",
        "status",
        "attempts",
        "next_attempt_at",
        "last_status_code",
        "last_error",
        "created_at",
        "completed_at",
    )
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.action(description="Redeliver the selected deliveries")
    def redeliver(self, request, queryset):
        sent = 0
        for delivery in queryset.select_related("webhook"):
            try:
                services.delivery_redeliver(delivery=delivery, actor=request.user)
                sent += 1
            except Conflict as exc:
                self.message_user(request, f"{delivery.uuid}: {exc.message}", messages.WARNING)
        self.message_user(request, f"{sent} redelivery(ies) queued.")
