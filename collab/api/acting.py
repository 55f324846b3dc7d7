"""Who the current request acts as, and through what credential: set by the authentication when
it signs a caller in, read by what records the request's writes (the event log's ``actor``,
history rows), so that every write says who made it and how: a person or a service account,
with a JWT, an API key (its id) or an OAuth app's token (the app's id).

It lives in a context variable the request's middleware opens and closes
(``RequestIdMiddleware``): a write outside a request (a task, a command) acts through nothing.
"""

from contextvars import ContextVar, Token
from typing import Any

from rest_framework import serializers

_acting: ContextVar[dict[str, Any] | None] = ContextVar("collab_acting", default=None)


def acting_open() -> Token:
    """A request begins: no one yet."""
    return _acting.set(None)


def acting_close(token: Token) -> None:
    _acting.reset(token)


def acting_set(
    *, user_id: int, kind: str, credential: str, key_id=None, app_id=None, address: str = ""
) -> None:
    """The caller is signed in: ``user_id`` (of ``kind``, person or service) through
    ``credential`` (``jwt``, ``api_key`` with ``key_id``, ``oauth_app`` with ``app_id``, or
    ``session``: a page's sign-in), from ``address``."""
    _acting.set(
        {
            "user_id": user_id,
            "kind": kind,
            "credential": credential,
            "key_id": key_id,
            "app_id": app_id,
            "address": address,
        }
    )


def acting_address() -> str:
    """The address the signed-in caller's request came from ("" outside a request)."""
    acting = _acting.get()
    return acting["address"] if acting is not None else ""


def actor_described(actor_id: int | None, kind: str | None = None) -> dict[str, Any] | None:
    """What a write by ``actor_id`` records of its actor: its kind and the credential it came
    through, when it is the request's caller; its kind alone (if known) otherwise (a task, a
    command, an operator's action on someone's behalf)."""
    if actor_id is None:
        return None
    acting = _acting.get()
    if acting is not None and acting["user_id"] == actor_id:
        return {
            "kind": acting["kind"],
            "via": {
                "credential": acting["credential"],
                "key_id": acting["key_id"],
                "app_id": acting["app_id"],
            },
        }
    return {"kind": kind, "via": None}


def actor_detail_of(actor) -> dict[str, Any] | None:
    """``actor_described`` for a user (or None): what a history row records of its actor."""
    return actor_described(getattr(actor, "pk", actor), getattr(actor, "kind", None))


# How the API shows it: an event's ``actor``, a history row's.


def actor_payload(actor_id: int | None, detail: dict[str, Any] | None) -> dict[str, Any] | None:
    """``{"id", "kind", "via"}`` of what a row recorded; None for no actor."""
    if actor_id is None:
        return None
    detail = detail or {}
    return {"id": actor_id, "kind": detail.get("kind"), "via": detail.get("via")}


class ActingViaSerializer(serializers.Serializer):
    credential = serializers.ChoiceField(
        choices=[
            ("jwt", "jwt"),
            ("api_key", "api_key"),
            ("oauth_app", "oauth_app"),
            ("session", "session"),
        ],
        help_text="A signed-in user's JWT, an API key, an OAuth app's token, or a page's "
        "signed-in session (the OAuth consent page).",
    )
    key_id = serializers.IntegerField(allow_null=True, help_text="The API key's id.")
    app_id = serializers.IntegerField(allow_null=True, help_text="The OAuth app's id.")


class ActorSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(
        choices=[("person", "person"), ("service", "service")],
        allow_null=True,
        help_text="A person or a service account (null: not known, in events of old).",
    )
    via = ActingViaSerializer(
        allow_null=True,
        help_text="The credential it acted through; null for what the service did on its "
        "behalf (a task, a command, an operator).",
    )
