"""The audit log of credentials: what the services record of keys, apps' tokens and service
accounts, per workspace, for its owners and admins. Each entry names its actor and the
credential it acted through (collab.api.acting), and the address the request came from."""

from collections.abc import Iterable
from typing import Any

from collab.api.acting import acting_address, actor_detail_of

from .models import ApiKey, AppAuthorization, AuditEntry, Membership, User

# How many addresses a key (or an app's authorization) remembers; one used from a forgotten
# address is recorded again.
ADDRESSES_KEPT = 20

AUDIT_KINDS: dict[str, str] = {
    "api_key.created": "an API key made (a person's, or a service account's)",
    "api_key.revoked": "an API key revoked (by its owner, a manager, or its account's deletion)",
    "api_key.used_from_new_address": "an API key used for the first time from an address",
    "app.created": "an OAuth app registered",
    "app.updated": "an OAuth app's registration changed",
    "app.deleted": "an OAuth app deleted (its tokens stopped)",
    "app.authorized": "a person allowed an OAuth app",
    "app.revoked": "a person revoked an OAuth app",
    "app_token.used_from_new_address": "an OAuth app's token used for a person for the first "
    "time from an address",
    "service_account.created": "a service account made",
    "service_account.updated": "a service account changed",
    "service_account.deleted": "a service account deleted (its keys revoked)",
}


def audit_record(
    *,
    type: str,
    workspace_ids: Iterable[int],
    actor: User | int | None,
    subject: dict[str, Any],
    address: str = "",
) -> None:
    """One entry of ``type`` in the audit log of each workspace."""
    if type not in AUDIT_KINDS:
        raise ValueError(f"not an audit kind: {type}")
    actor_id = actor.pk if isinstance(actor, User) else actor
    detail = actor_detail_of(actor)
    entries = [
        AuditEntry(
            workspace_id=workspace_id,
            type=type,
            actor_id=actor_id,
            actor_detail=detail,
            subject=subject,
            address=address or acting_address(),
        )
        for workspace_id in sorted(set(workspace_ids))
    ]
    AuditEntry.objects.bulk_create(entries)


def key_workspaces(api_key: ApiKey) -> list[int]:
    """The workspaces whose audit log records a key: its owner's (a service account's is its
    own workspace's)."""
    return list(
        Membership.objects.filter(user_id=api_key.user_id).values_list("workspace_id", flat=True)
    )


def key_subject(api_key: ApiKey) -> dict[str, Any]:
    """A key as the audit log names it: never the key."""
    return {
        "api_key": {
            "id": api_key.pk,
            "name": api_key.name,
            "prefix": api_key.prefix,
            "user_id": api_key.user_id,
            "scopes": list(api_key.scopes),
            "projects": api_key.projects,
        }
    }


def key_audit(type: str, api_key: ApiKey, *, actor: User | int | None) -> None:
    audit_record(
        type=type, workspace_ids=key_workspaces(api_key), actor=actor, subject=key_subject(api_key)
    )


def address_noted(addresses: list[str], address: str) -> list[str] | None:
    """The addresses with ``address`` added, or None when it is among them already."""
    if not address or address in addresses:
        return None
    return [*addresses, address][-ADDRESSES_KEPT:]


def authorization_address_note(
    authorization_id: int, addresses: list[str], address: str, *, user: User, subject: dict
) -> None:
    """An app's token used from ``address`` for ``user``: a new one is written down, and
    audited in the app's workspace (``subject`` names the app)."""
    noted = address_noted(addresses, address)
    if noted is None:
        return
    AppAuthorization.objects.filter(pk=authorization_id).update(addresses=noted)
    audit_record(
        type="app_token.used_from_new_address",
        workspace_ids=[subject["workspace_id"]],
        actor=user,
        subject={"authorization": subject},
    )
