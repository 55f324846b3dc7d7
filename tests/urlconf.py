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


# Routes only a JWT may use: keys are made, listed and revoked with a sign-in, never with a key
# (a leaked key cannot mint its successor).
_JWT_ONLY_PREFIXES = ("api-key", "service-account-key")


def needs_jwt(name: str) -> bool:
    """Whether the route of this name takes a JWT alone (an API key gets a 403)."""
    return name.startswith(_JWT_ONLY_PREFIXES)


def path_needs_jwt(path: str) -> bool:
    """``needs_jwt`` for a path of the schema (``/v1/service-accounts/{id}/keys``)."""
    return path.startswith("/v1/api-keys") or (
        path.startswith("/v1/service-accounts/") and "/keys" in path
    )
