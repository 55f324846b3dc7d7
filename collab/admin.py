"""The admin's plumbing every app's admin shares (names no app; Django's autodiscovery imports
this module too, and it registers nothing)."""

from django.contrib import admin
from django.db.models import Model


def adopt(target: Model, saved: Model) -> None:
    """Make the admin's unsaved form instance the row a service just created.

    The admin goes on to log, message and redirect with the object it built; a service
    creates its own instance, so its id and defaults are copied across.
    """
    for field in saved._meta.concrete_fields:
        setattr(target, field.attname, getattr(saved, field.attname))
    target._state.adding = False
    target._state.db = saved._state.db


class ReadOnlyAdmin(admin.ModelAdmin):
    """A log's admin: its rows are looked at, never added, changed or deleted here."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
