"""The URL conf as the route sweeps walk it: every named route of the API (outside the admin's
pages and the OAuth authorization server's, which answer as OAuth says; tests/integrations/
test_oauth.py sweeps those), with its full pattern (the prefixes of the includes joined), so a
route added later is swept too."""

from collections.abc import Iterator

from django.urls import URLPattern, URLResolver, get_resolver

# The admin's pages, and the OAuth authorization server (its pages, its endpoints, its metadata).
NOT_THE_API = ("admin/", "oauth/", ".well-known/")


def named_routes(patterns=None, prefix: str = "") -> Iterator[tuple[URLPattern, str]]:
    """``(pattern, full regex)`` for each named route, in the URL conf's order."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            if str(pattern.pattern).startswith(NOT_THE_API):
                continue
            yield from named_routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern) and pattern.name:
            if str(pattern.pattern).startswith(NOT_THE_API):
                continue
            yield pattern, prefix + str(pattern.pattern)


# Routes only a JWT may use: keys are made, listed and revoked with a sign-in, never with a key
# (a leaked key cannot mint its successor), and so are a user's authorizations of apps; an
# app's registration (which makes a client secret) too.
_JWT_ONLY_PREFIXES = ("api-key", "service-account-key", "authorization-")
_JWT_ONLY_POSTS = ("workspace-oauth-app-list",)


def needs_jwt(name: str, method: str = "GET") -> bool:
    """Whether the route of this name takes a JWT alone for ``method`` (an API key gets a
    403)."""
    return name.startswith(_JWT_ONLY_PREFIXES) or (method == "POST" and name in _JWT_ONLY_POSTS)


def path_needs_jwt(path: str) -> bool:
    """``needs_jwt`` for a write's path of the schema (``/v1/service-accounts/{id}/keys``)."""
    return (
        path.startswith(("/v1/api-keys", "/v1/users/me/authorizations"))
        or (path.startswith("/v1/service-accounts/") and "/keys" in path)
        or (path.startswith("/v1/workspaces/") and path.endswith("/oauth-apps"))
    )
