from django.apps import AppConfig
from django.db.models.signals import post_delete, post_migrate


class IssuesConfig(AppConfig):
    name = "issues"

    def ready(self):
        from . import facets

        # The counters of a deleted project go with it (see ``issues.facets``).
        post_delete.connect(
            facets.project_deleted,
            sender="projects.Project",
            dispatch_uid="issues.facets.project_deleted",
        )
        # SQLite drops a table's triggers when a migration rebuilds the table: made again.
        post_migrate.connect(facets.triggers_ensure, sender=self)
