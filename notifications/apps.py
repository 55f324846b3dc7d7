from django.apps import AppConfig
from django.db.models.signals import pre_delete


class NotificationsConfig(AppConfig):
    name = "notifications"

    def ready(self) -> None:
        from . import services

        # A project going takes its webhooks' deliveries with it. The projects app below knows
        # nothing of deliveries, so this consumer guards its own rows when one is deleted.
        pre_delete.connect(
            services.project_deliveries_lock,
            sender="projects.Project",
            dispatch_uid="notifications.project_deliveries_lock",
        )
