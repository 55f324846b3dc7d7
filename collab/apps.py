from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig as DjangoAdminConfig
from django.db.models.signals import post_migrate


class CollabConfig(AppConfig):
    """The plumbing's own hooks (no models): after every migrate, each app's foreign keys
    delete in the database as their models say (collab.db.cascades)."""

    name = "collab"
    verbose_name = "Collab plumbing"

    def ready(self) -> None:
        from .db.cascades import post_migrate_cascades

        post_migrate.connect(post_migrate_cascades, dispatch_uid="collab.db.cascades")


class AdminConfig(DjangoAdminConfig):
    """Django's admin with ``collab.adminsite.AdminSite`` as ``admin.site``."""

    default_site = "collab.adminsite.AdminSite"
