from django.apps import AppConfig


class TransferConfig(AppConfig):
    """A workspace taken out (export) and brought in (import, from an archive or from GitHub),
    and backups of the whole service. It reads every app's records, so it sits on the top floor."""

    name = "transfer"
    verbose_name = "Export, import and backups"

    def ready(self) -> None:
        # Registered now: services queue an export's build by name, and a web process imports
        # no tasks module otherwise (only a worker discovers them).
        from . import tasks  # noqa: F401
