"""The base viewset every app builds on.

``ApiViewSet`` decides, per action, the scope a credential needs and the workspace ability
the caller needs, and gives the helpers that shape responses (201 with ``Location``, the
contract's delete body, pages). The tenancy on top of it (a project resolved once, the role
gate) is the projects app's: ``projects.viewsets``.
"""

from contextlib import AbstractContextManager, ExitStack

from django.db import IntegrityError
from django.http import Http404
from django_filters.filterset import FilterSet
from rest_framework import exceptions as drf
from rest_framework import viewsets
from rest_framework.response import Response

from .exceptions import ValidationFailed, flatten_validation_errors, foreign_key_violation
from .filters import is_id
from .idempotency import (
    IdempotentReplay,
    idempotency_abort,
    idempotency_begin,
    idempotency_finish,
)
from .permissions import default_ability, default_level
from .renderers import Envelope
from .validation import json_type_errors


class ApiViewSet(viewsets.GenericViewSet):
    scope_group = ""
    # Facts the plumbing reads from the routes (collab.api.routes); an ``@action`` may set
    # them for itself: that its answer streams (collab.asgi), and how it is rate limited
    # (collab.api.ratelimit).
    streams = False
    rate_limit: object = None
    filterset_class: type[FilterSet] | None = None
    # Overrides of the defaults (read for GET, write for POST/PUT/PATCH, admin for DELETE).
    action_scopes: dict[str, str] = {}
    action_abilities: dict[str, str] = {}

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        # The router takes up to 19 digits; past 2**63 - 1 no record can have the id, and
        # the database would overflow comparing it.
        if any(isinstance(value, str) and not is_id(value) for value in kwargs.values()):
            raise Http404
        self._idempotency = None
        self._held = ExitStack()
        for lock in self.locks_before_transaction():
            self._held.enter_context(lock)
        if request.method == "POST" and request.user is not None:
            self._idempotency = idempotency_begin(request)

    def locks_before_transaction(self) -> list[AbstractContextManager]:
        """Locks the action's work takes before it writes, taken here before the request's own
        transaction opens (an Idempotency-Key's) and held until it has ended.

        The order is the workers': lock, then transaction. Taken inside the request's
        transaction instead, such a lock would come after SQLite's write lock (taken for the
        whole database at BEGIN IMMEDIATE), while a worker holding the lock waits for that
        write lock: each would wait for the other until the busy timeout."""
        return []

    def handle_exception(self, exc):
        if isinstance(exc, IdempotentReplay):
            record = exc.record
            headers = {"Idempotent-Replayed": "true"}
            if record.location:
                headers["Location"] = record.location
            return Response(Envelope(record.response_body), record.status_code, headers=headers)
        return super().handle_exception(exc)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        claim = getattr(self, "_idempotency", None)
        if claim is not None:
            self._idempotency = None
            try:
                idempotency_finish(claim, response)
            except IntegrityError as exc:
                # The work's commit met a row deleted meanwhile (its checks are deferred to
                # the commit, which comes only now): rolled back, and answered as a view's.
                if foreign_key_violation(exc) is None:
                    raise
                return super().finalize_response(request, self.handle_exception(exc))
        return response

    def dispatch(self, request, *args, **kwargs):
        try:
            return super().dispatch(request, *args, **kwargs)
        finally:
            # An exception no handler answered (a 500) never reached finalize_response: the
            # claimed key's transaction, and the request's work in it, are rolled back.
            claim = getattr(self, "_idempotency", None)
            if claim is not None:
                self._idempotency = None
                idempotency_abort(claim)
            held = getattr(self, "_held", None)
            if held is not None:
                held.close()

    def required_scope(self) -> str | None:
        if self.action is None and not hasattr(self, self.request.method.lower()):
            # No handler for this method: the answer is 405 whatever the credential holds
            # (and "users:admin" for a DELETE on users is no scope anyone can have).
            return None
        if self.action in self.action_scopes:
            return self.action_scopes[self.action]
        if not self.scope_group:
            return None
        return f"{self.scope_group}:{default_level(self.request.method or 'GET')}"

    def required_ability(self) -> str:
        return self.action_abilities.get(self.action) or default_ability(
            self.request.method or "GET"
        )

    def validated(self, serializer_class, *, data=None, partial=False, **context) -> dict:
        payload = self.request.data if data is None else data
        serializer = serializer_class(
            data=payload,
            partial=partial,
            context={"request": self.request, "view": self, **context},
        )
        # DRF coerces (7 becomes "7"); a value of the wrong JSON type is a 422 here.
        type_errors = json_type_errors(serializer, payload)
        if not serializer.is_valid() or type_errors:
            details = flatten_validation_errors(serializer.errors)
            details.update(type_errors)
            raise ValidationFailed(details=details)
        return serializer.validated_data

    def validated_items(self, serializer_class, items, *, partial=False) -> list:
        """``validated`` for each item of a bulk request, with one serializer whose fields are
        built once: per item, its fields (a dict) or its ``ValidationFailed``."""
        checker = serializer_class(partial=partial, context={"request": self.request, "view": self})
        outcomes: list = []
        for item in items:
            if not isinstance(item, dict):
                details = {"non_field_errors": ["Each item must be an object."]}
                outcomes.append(ValidationFailed(details=details))
                continue
            type_errors = json_type_errors(checker, item)
            try:
                fields = checker.run_validation(item)
            except drf.ValidationError as exc:
                details = flatten_validation_errors(exc.detail)
                outcomes.append(ValidationFailed(details={**details, **type_errors}))
                continue
            outcomes.append(ValidationFailed(details=type_errors) if type_errors else dict(fields))
        return outcomes

    def ok(self, data) -> Response:
        return Response(data)

    def created(self, data, location: str) -> Response:
        return Response(data, status=201, headers={"Location": location})

    def deleted(self) -> Response:
        return Response(None, status=200)

    def paginated(self, queryset, serializer_class, **context) -> Response:
        page = self.paginate_queryset(queryset)
        serializer = serializer_class(
            page, many=True, context={"request": self.request, "view": self, **context}
        )
        return self.get_paginated_response(serializer.data)
