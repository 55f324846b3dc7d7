"""Reads to a replica, when one is configured (``DATABASE_REPLICA_URL``).

Only reads made while serving a request go to the replica, and only those that cannot notice
its lag:

- not inside a transaction on the primary (it must see its own uncommitted rows);
- not after the request wrote anything (a client that just created an issue lists it next):
  the first write pins the rest of the request to the primary;
- not of the records that decide who may do what, or that are followed by id: accounts
  (users, keys, memberships, the logout denylist: a revoked key stops at once), the request
  state kept for the API (idempotency keys, rate-limit counters), and the event log and its
  consumers (the stream and the deliveries read it forward and would take lag for gaps).

Tasks, commands and the stream's hub read the primary: they run right after the commit that
queued them. Writes, migrations and relations always use the primary.
"""

import threading

from django.db import connections

PRIMARY = "default"
REPLICA = "replica"
PRIMARY_ONLY_APPS = frozenset({"accounts", "events", "idempotency", "ratelimits", "notifications"})

_state = threading.local()


def pin_to_primary() -> None:
    _state.pinned = True


class PrimaryReplicaRouter:
    def db_for_read(self, model, **hints):
        if (
            not getattr(_state, "in_request", False)
            or getattr(_state, "pinned", False)
            or model._meta.app_label in PRIMARY_ONLY_APPS
            or connections[PRIMARY].in_atomic_block
        ):
            return PRIMARY
        return REPLICA

    def db_for_write(self, model, **hints):
        pin_to_primary()
        return PRIMARY

    def allow_relation(self, obj1, obj2, **hints):
        return True

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == PRIMARY


class ReplicaPinMiddleware:
    """Marks the thread as serving a request, unpinned, for the router; clears it after."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        _state.in_request, _state.pinned = True, False
        try:
            return self.get_response(request)
        finally:
            _state.in_request, _state.pinned = False, False
