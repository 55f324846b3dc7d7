"""Facts the views declare about their routes (how they are rate limited, that they stream),
read by the plumbing from the URL conf, so that no app's URL is written down below the apps.

A fact is a view attribute, as DRF's ``throttle_scope`` is: on the view (class or function),
or for one action of a viewset as a keyword of its ``@action`` (DRF hands those to the view;
the base viewset declares their defaults). The routes that declare a fact are found once per
URL conf, in Django's own table of full patterns (the one ``reverse`` reads); a path is then
matched against those few patterns alone. Resolving a path against every route costs 0.2 to
0.6 ms here, and Django's handler resolves each request once already, after the middleware.
"""

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from django.urls import URLResolver, get_resolver


def view_fact(callback: Callable[..., Any], name: str) -> Any:
    """``name`` as the view behind this route's callback declares it (None if it does not)."""
    initkwargs = getattr(callback, "initkwargs", None) or {}
    if name in initkwargs:
        return initkwargs[name]
    view = getattr(callback, "cls", None) or getattr(callback, "view_class", None) or callback
    return getattr(view, name, None)


@lru_cache(maxsize=32)
def _declared(name: str, resolver: URLResolver) -> tuple[tuple[re.Pattern[str], Any], ...]:
    """The full pattern of every route whose view declares ``name``, with what it declares.
    Keyed by the resolver itself: a URL conf changed or reloaded is a new resolver."""
    found = []
    for key, entries in resolver.reverse_dict.lists():
        if not callable(key):
            continue  # the table holds each route under its name too
        value = view_fact(key, name)
        if value is None or value is False:
            continue
        for _bits, pattern, _defaults, _converters in entries:
            found.append((re.compile(pattern), value))
    return tuple(found)


def route_fact(path: str, name: str, urlconf: str | None = None) -> tuple[Any, dict[str, str]]:
    """``name`` as the view routed at ``path`` declares it (None if not), with the route's
    arguments as they appear in the path."""
    # The root resolver's own pattern is the leading "/"; the table's patterns follow it.
    relative = path[1:] if path.startswith("/") else path
    for pattern, value in _declared(name, get_resolver(urlconf)):
        match = pattern.match(relative)
        if match is not None:
            return value, match.groupdict()
    return None, {}


class DeclaredPaths:
    """The paths whose views declare ``name``, as a container: ``path in DeclaredPaths(...)``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and route_fact(path, self.name)[0] is not None
