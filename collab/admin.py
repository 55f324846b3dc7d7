"""The admin's plumbing every app's admin shares (names no app; Django's autodiscovery imports
this module too, and it registers nothing)."""

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
