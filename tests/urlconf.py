"""The URL conf as the route sweeps walk it: every named route outside the admin, with its
full pattern (the prefixes of the includes joined), so a route added later is swept too."""

from collections.abc import Iterator

from django.urls import URLPattern, URLResolver, get_resolver


def named_routes(patterns=None, prefix: str = "") -> Iterator[tuple[URLPattern, str]]:
    """``(pattern, full regex)`` for each named route, in the URL conf's order."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            if str(pattern.pattern).startswith("admin/"):
                continue
            yield from named_routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield pattern, prefix + str(pattern.pattern)
