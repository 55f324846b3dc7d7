from django.apps import AppConfig
from django.db.models.signals import pre_delete


class NotificationsConfig(AppConfig):
    name = "notifications"

    def ready(self) -> None:
        # Registered now: services queue the tasks by name, and a web process imports no
        # tasks module otherwise (only a worker discovers them).
        from . import services, tasks  # noqa: F401

        # A project going takes its webhooks' deliveries with it. The projects app below knows
        # nothing of deliveries, so this consumer guards its own rows when one is deleted.
        pre_delete.connect(
            services.project_deliveries_lock,
            sender="projects.Project",
            dispatch_uid="notifications.project_deliveries_lock",
        )
        # And a workspace going, its own webhooks' (its projects' come with each project).
        pre_delete.connect(
            services.workspace_deliveries_lock,
            sender="accounts.Workspace",
            dispatch_uid="notifications.workspace_deliveries_lock",
        )
