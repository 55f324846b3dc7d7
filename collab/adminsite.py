"""The admin site every app registers with: Django's ``admin.site``, made an instance of
``AdminSite`` below by ``collab.apps.AdminConfig``.

Its one rule of its own is the API's (``collab.api.fields.single_line``): a single-line text
field refuses control characters, so a name saved as "x\\r\\nBcc: y" in the admin cannot break
an email's headers, a log line or a CSV cell later. The site applies it to every admin it
registers, Django's own (groups) and third parties' included, so an app's admin cannot forget
it; each app's ``admin.py`` stays plain Django.
"""

import copy
from typing import Any

from django import forms
from django.contrib import admin
from django.forms.widgets import Input

from collab.api.fields import single_line_form


def is_single_line(field: forms.Field) -> bool:
    """A text field typed on one line: a ``CharField`` (email, URL, slug... included) shown as
    an ``<input>``. Text areas hold free text; a password is an opaque secret, shown nowhere
    and put in no header, which the API takes as it comes too."""
    return (
        isinstance(field, forms.CharField)
        and isinstance(field.widget, Input)
        and not isinstance(field.widget, forms.PasswordInput)
    )


def single_line_guard(form_class: Any) -> Any:
    """``form_class`` with ``single_line_form`` among the validators of its one-line text
    fields. The admin builds a new form class on every call (``modelform_factory``), so its
    ``base_fields`` are replaced in place; the fields are copied first, since a declared field
    is the same object in every class built from its form."""
    fields = dict(form_class.base_fields)
    for name, field in fields.items():
        if is_single_line(field) and single_line_form not in field.validators:
            guarded = copy.deepcopy(field)
            guarded.validators = [*guarded.validators, single_line_form]
            fields[name] = guarded
    form_class.base_fields = fields
    return form_class


class SingleLineModelAdmin(admin.ModelAdmin):
    """Put before an app's ``ModelAdmin`` by ``AdminSite.register``: the add and change
    form, every inline's form and the change list's editable rows get ``single_line_guard``."""

    def get_form(self, request, obj=None, **kwargs):
        return single_line_guard(super().get_form(request, obj, **kwargs))

    def get_formsets_with_inlines(self, request, obj=None):
        for formset, inline in super().get_formsets_with_inlines(request, obj):
            single_line_guard(formset.form)
            yield formset, inline

    def get_changelist_formset(self, request, **kwargs):
        formset = super().get_changelist_formset(request, **kwargs)
        single_line_guard(formset.form)
        return formset


class AdminSite(admin.AdminSite):
    def register(self, model_or_iterable, admin_class=None, **options):
        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, SingleLineModelAdmin):
            # Same name, module and docstring: the admin's pages and checks name the app's class.
            admin_class = type(
                admin_class.__name__,
                (SingleLineModelAdmin, admin_class),
                {
                    "__module__": admin_class.__module__,
                    "__qualname__": admin_class.__qualname__,
                    "__doc__": admin_class.__doc__,
                },
            )
        super().register(model_or_iterable, admin_class, **options)
