from django.apps import AppConfig


class GitintegrationConfig(AppConfig):
    name = "gitintegration"

    def ready(self) -> None:
        # Registered now: services queue the sync by name, and a web process imports no tasks
        # module otherwise (only a worker discovers them).
        from . import tasks  # noqa: F401
