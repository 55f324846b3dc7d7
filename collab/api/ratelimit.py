"""Request limits (docs/guide/rate-limits.md): who is counted, against which limit, and the headers.

- A request with valid credentials counts against its **account** (``user:<id>``), whatever
  the credential (a JWT or any of the user's API keys), at the limit of the account's tier
  (``RATE_LIMITS``). The tier is read from the user row loaded by this very request, so a
  change made with ``set_tier`` or in the admin applies from the next request.
- Any other request (no credentials, a bad or expired key or token) counts against its
  **client address** (``addr:<address>``, an IPv6 address by its /64) at the small
  ``RATE_LIMIT_ANONYMOUS`` limit: a flood of 401s costs one counter hit each, then 429s.
  The sign-in endpoints (their views declare ``rate_limit = SIGN_IN``) are the way to get
  credentials, so they do not spend that budget; failed logins have their own, stricter
  protection (``accounts.login_protection``).
- The status endpoint (``rate_limit = STATUS``) with valid credentials reads the account's
  window without counting.
- A view may give its requests a budget of their own (``rate_limit = OwnBudget(...)``), per
  value of one of its URL's arguments: push notifications, per repository.
- The schema and its docs (``rate_limit = EXEMPT``) are not counted and carry no headers.

Which is which the views declare, as DRF's ``throttle_scope`` is declared, and the middleware
reads it from their routes (``collab.api.routes``): no app's URL is written here.
- A ``304 Not Modified`` (``collab.api.conditional``) is given back once answered: its headers
  show the budget as it stood before it.

A window starts with the first counted request and lasts ``RATE_LIMIT_WINDOW_SECONDS`` (an
hour); ``X-RateLimit-Reset`` is its end, in Unix seconds, the same on every response of the
window. A request once the limit is reached answers 429 ``RATE_LIMITED`` with ``Retry-After``
and is not counted. Counting is atomic in Redis or in the database (``collab.api.counters``).

The middleware runs before routing, so every answer under ``/v1/`` carries the headers, 404s
of unknown routes, 413s and 415s included. It authenticates the request itself to know whom
to count, with DRF's configured authenticators (``accounts.authentication.BearerAuthentication``
keeps its result on the request, so the view does not authenticate twice).
"""

import ipaddress
import logging
from dataclasses import dataclass, replace

from django.conf import settings

from . import counters, routes
from .metrics import RATE_LIMIT_REFUSALS
from .middleware import API_PREFIX, credential_user, json_error

logger = logging.getLogger("collab.ratelimit")

# What a view declares as its ``rate_limit`` (none: counted against the caller).
SIGN_IN = "sign_in"  # the way to get credentials: free without them
STATUS = "status"  # reads the account's window: free with credentials
EXEMPT = "exempt"  # public and static (the API's own documentation): not counted, no headers


@dataclass(frozen=True)
class OwnBudget:
    """A view's requests counted per value of one of its URL's arguments, against a limit of
    their own, instead of the caller's: push notifications are signed, not Bearer-
    authenticated, and come from a git server whose address many repositories share (GitHub's
    hook addresses, say), so each repository gets its own budget instead of the address's."""

    counter: str  # the counters' prefix: "push" counts "push:<value>"
    argument: str  # the URL's argument whose value is counted
    limit_setting: str  # the setting that holds the limit per window
    what: str  # the requests, as the 429's message names them


@dataclass(frozen=True)
class Identity:
    """What a request is counted against."""

    counter: str  # "user:7" or "addr:203.0.113.9"
    limit: int
    tier: str | None = None  # the account's tier; None for a client address
    what: str | None = None  # the requests of a view's own budget (``OwnBudget.what``)

    @property
    def is_account(self) -> bool:
        return self.tier is not None


@dataclass(frozen=True)
class Usage:
    """An identity's window as the headers and ``GET /v1/rate_limit`` show it."""

    identity: Identity
    used: int
    reset: int
    allowed: bool = True

    @property
    def limit(self) -> int:
        return self.identity.limit

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)

    def headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Used": str(self.used),
            "X-RateLimit-Reset": str(self.reset),
        }


def tier_limit(tier: str) -> int:
    limits = settings.RATE_LIMITS
    return limits.get(tier, limits["standard"])


def account_identity(user) -> Identity:
    return Identity(counter=f"user:{user.pk}", limit=tier_limit(user.tier), tier=user.tier)


def client_address(request) -> str:
    """The caller's address: ``REMOTE_ADDR``, or with ``RATE_LIMIT_TRUSTED_PROXIES`` = n, the
    address the outermost of the n trusted proxies saw (n-th from the right in
    ``X-Forwarded-For``). Entries further left were written by the client and prove nothing.
    """
    address = request.META.get("REMOTE_ADDR") or ""
    hops = settings.RATE_LIMIT_TRUSTED_PROXIES
    if hops > 0:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        chain = [part.strip() for part in forwarded.split(",") if part.strip()]
        if chain:
            address = chain[-min(hops, len(chain))]
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address[:64] or "unknown"
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        # One subscriber gets a whole /64: counting single addresses would let it rotate.
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


def address_identity(request) -> Identity:
    return Identity(counter=f"addr:{client_address(request)}", limit=settings.RATE_LIMIT_ANONYMOUS)


def request_identity(request, *, declared: object = None, arguments=None) -> Identity:
    """The account behind valid credentials, or else the client address (or, for a view with
    a budget of its own, the value of its URL's argument: a push notification's repository).
    ``declared`` and ``arguments``: the view's ``rate_limit`` and its route's arguments."""
    if isinstance(declared, OwnBudget):
        value = (arguments or {})[declared.argument]
        return Identity(
            counter=f"{declared.counter}:{value}",
            limit=getattr(settings, declared.limit_setting),
            what=declared.what,
        )
    user = credential_user(request)
    if user is not None:
        return account_identity(user)
    return address_identity(request)


def _usage(identity: Identity, window: counters.Window) -> Usage:
    return Usage(
        identity=identity,
        used=min(window.hits, identity.limit),
        reset=window.reset,
        allowed=window.counted,
    )


def rate_limit_hit(identity: Identity) -> Usage | None:
    """Count one request; ``None`` when the counter store is down (the request is served)."""
    window = counters.counter_hit(
        identity.counter, limit=identity.limit, window=settings.RATE_LIMIT_WINDOW_SECONDS
    )
    return None if window is None else _usage(identity, window)


def rate_limit_peek(identity: Identity) -> Usage | None:
    """The identity's window without counting; ``None`` when the counter store is down."""
    at = counters.now()
    states = counters.counter_peek([identity.counter], at=at)
    if states is None:
        return None
    window = states[0] or counters.Window.fresh(settings.RATE_LIMIT_WINDOW_SECONDS, at)
    return _usage(identity, window)


def _refusal(usage: Usage):
    retry_after = counters.Window(usage.used, usage.reset).retry_after(counters.now())
    identity = usage.identity
    if identity.is_account:
        message = (
            f"Rate limit exceeded: {identity.limit} requests per hour on the {identity.tier} "
            f"tier. Try again in {retry_after} seconds."
        )
    elif identity.what is not None:
        message = (
            f"Rate limit exceeded for {identity.what} ({identity.limit} "
            f"per hour). Try again in {retry_after} seconds."
        )
    else:
        message = (
            f"Rate limit exceeded for requests without valid credentials from this address "
            f"({identity.limit} per hour). Sign in, or try again in {retry_after} seconds."
        )
    details: dict[str, int | str | None] = {
        "limit": identity.limit,
        "reset": usage.reset,
        "retry_after": retry_after,
    }
    if identity.is_account:
        details["tier"] = identity.tier
    return json_error(429, "RATE_LIMITED", message, details, Retry_After=str(retry_after))


class RateLimitMiddleware:
    """Counts every request under ``/v1/``, refuses those over the limit, adds the headers."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not settings.RATE_LIMIT_ENABLED or not request.path.startswith(API_PREFIX):
            return self.get_response(request)
        declared, arguments = routes.route_fact(
            request.path_info, "rate_limit", getattr(request, "urlconf", None)
        )
        if declared == EXEMPT:
            return self.get_response(request)
        identity = request_identity(request, declared=declared, arguments=arguments)
        free = declared == (STATUS if identity.is_account else SIGN_IN)
        # Free requests read the window (for the headers) without counting or being refused.
        usage = rate_limit_peek(identity) if free else rate_limit_hit(identity)
        request.rate_limit = usage
        if usage is not None and not free and not usage.allowed:
            RATE_LIMIT_REFUSALS.labels(identity.tier or "anonymous").inc()
            response = _refusal(usage)
        else:
            response = self.get_response(request)
            if usage is not None and not free and response.status_code == 304:
                # "Not modified" is free, as on GitHub: the hit is given back.
                counters.counter_refund(identity.counter, reset=usage.reset)
                usage = replace(usage, used=max(0, usage.used - 1))
        if usage is not None:
            for name, value in usage.headers().items():
                response[name] = value
        return response
