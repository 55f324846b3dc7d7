from django.apps import AppConfig
from django.db.models.signals import post_delete


class TransferConfig(AppConfig):
    """A workspace taken out (export) and brought in (import, from an archive or from GitHub),
    and backups of the whole service. It reads every app's records, so it sits on the top floor."""

    name = "transfer"
    verbose_name = "Export, import and backups"

    def ready(self) -> None:
        # Registered now: services queue an export's build by name, and a web process imports
        # no tasks module otherwise (only a worker discovers them).
        from . import services, tasks  # noqa: F401

        # An archive goes with its export row, whatever deleted it (a workspace's cascade).
        post_delete.connect(
            services.export_deleted,
            sender="transfer.Export",
            dispatch_uid="transfer.services.export_deleted",
        )
