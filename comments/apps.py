from django.apps import AppConfig


class CommentsConfig(AppConfig):
    name = "comments"

    def ready(self) -> None:
        # Registered now: services queue the mention emails by name, and a web process imports
        # no tasks module otherwise (only a worker discovers them).
        from . import tasks  # noqa: F401
