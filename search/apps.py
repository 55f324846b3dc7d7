from django.apps import AppConfig
from django.db.models.signals import post_migrate, pre_migrate


class SearchConfig(AppConfig):
    name = "search"

    def ready(self) -> None:
        pre_migrate.connect(_before_migrate, sender=self)
        post_migrate.connect(_after_migrate, sender=self)


def _before_migrate(sender, using, **kwargs) -> None:
    from .schema import drop_view

    drop_view(using)


def _after_migrate(sender, using, **kwargs) -> None:
    """The view again, and on SQLite the FTS triggers of any searchable table a migration
    rebuilt (rebuilding a table drops its triggers), with that table's index rebuilt. Nothing
    else to do on PostgreSQL, where the document is a generated column."""
    from collab.db.fulltext import ensure_sqlite_documents

    from .models import searchable_models
    from .schema import create_view

    ensure_sqlite_documents(searchable_models(), using=using)
    create_view(using)
