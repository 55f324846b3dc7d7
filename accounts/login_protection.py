"""Failed sign-ins are slowed, then refused for a while (429 ``RATE_LIMITED``, ``Retry-After``).

Failures are counted per email (whether or not an account has it, so the answers say nothing
about which emails exist) and per client address, in a window of
``LOGIN_FAILURE_WINDOW_SECONDS`` opened by the first failure:

- from ``LOGIN_SLOWDOWN_AFTER`` failures for an email, the next attempt for it must wait
  1 s, then 2 s, 4 s ... after each further failure;
- at ``LOGIN_FAILURES_PER_EMAIL`` failures the email, and at ``LOGIN_FAILURES_PER_ADDRESS``
  the address, is refused for ``LOGIN_LOCKOUT_SECONDS``.

A refused attempt is answered before the password is checked, so it teaches nothing and costs
no password hash. A successful sign-in clears the email's failures (not the address's: one
account of an attacker's own must not reset the count of its guesses at others).

The counters are the rate limiter's (``collab.api.counters``): exact across processes, and
failing open when their store is down.
"""

import hashlib

from django.conf import settings

from collab.api import counters
from collab.api.exceptions import RateLimited

_NO_LIMIT = 2**31 - 1


def _email_names(email: str) -> tuple[str, str, str]:
    # Hashed: an email (personal data, any length) does not belong in a key name.
    digest = hashlib.sha256(email.strip().lower().encode()).hexdigest()[:32]
    return f"login:fail:email:{digest}", f"login:wait:email:{digest}", f"login:lock:email:{digest}"


def _address_names(address: str) -> tuple[str, str]:
    return f"login:fail:addr:{address}", f"login:lock:addr:{address}"


def login_check(*, email: str, address: str | None) -> None:
    """Raise ``RateLimited`` when this email or address may not try to sign in yet."""
    _, wait, lock = _email_names(email)
    names = [wait, lock]
    if address:
        names.append(_address_names(address)[1])
    at = counters.now()
    states = counters.counter_peek(names, at=at)
    if not states:
        return
    reasons = {
        wait: "Sign-ins for this email are slowed after repeated failures.",
        lock: "Too many failed sign-ins for this email.",
    }
    waits = [
        (state.retry_after(at), reasons.get(name, "Too many failed sign-ins from this address."))
        for name, state in zip(names, states, strict=True)
        if state is not None
    ]
    if waits:
        retry_after, reason = max(waits)
        raise _refusal(reason, retry_after)


def login_failure_record(*, email: str, address: str | None) -> None:
    """Count a failed sign-in, and slow down or lock out the email or address it reaches."""
    window = settings.LOGIN_FAILURE_WINDOW_SECONDS
    lockout = settings.LOGIN_LOCKOUT_SECONDS
    failures, wait, lock = _email_names(email)
    counted = counters.counter_hit(failures, limit=_NO_LIMIT, window=window)
    if counted is not None:
        if counted.hits >= settings.LOGIN_FAILURES_PER_EMAIL:
            counters.counter_hit(lock, limit=1, window=lockout)
        elif counted.hits >= settings.LOGIN_SLOWDOWN_AFTER:
            delay = 2 ** (counted.hits - settings.LOGIN_SLOWDOWN_AFTER)
            counters.counter_hit(wait, limit=1, window=min(delay, lockout))
    if address:
        failures, lock = _address_names(address)
        counted = counters.counter_hit(failures, limit=_NO_LIMIT, window=window)
        if counted is not None and counted.hits >= settings.LOGIN_FAILURES_PER_ADDRESS:
            counters.counter_hit(lock, limit=1, window=lockout)


def login_failures_clear(*, email: str) -> None:
    counters.counter_clear(list(_email_names(email)))


def _refusal(reason: str, retry_after: int) -> RateLimited:
    error = RateLimited(
        f"{reason} Try again in {retry_after} seconds.",
        details={"retry_after": retry_after},
    )
    error.retry_after = retry_after
    return error
