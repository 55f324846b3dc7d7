"""Writes: API keys issued with what they may reach; service accounts."""

import secrets
from collections.abc import Collection
from datetime import datetime

from django.contrib.auth.hashers import is_password_usable
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts import audit
from accounts import services as account_services
from accounts.handles import handle_candidates
from accounts.models import ApiKey, Membership, Role, User, Workspace
from collab.api.exceptions import Conflict, ValidationFailed
from collab.unset import UNSET, Maybe
from events.services import event_record
from projects.models import Project, ProjectMember
from projects.selectors import project_list
from projects.services import project_member_add, project_member_remove

from .models import ServiceAccount
from .records import service_account_record


def projects_seen(*, user: User, project_ids: Collection[int] | None) -> list[int] | None:
    """``project_ids`` (None stays None), each a project ``user`` sees; a 400 on
    ``projects`` naming the others, which are unknown or unseen alike."""
    if project_ids is None:
        return None
    wanted = set(project_ids)
    seen = set(project_list(user=user).filter(pk__in=wanted).values_list("pk", flat=True))
    unseen = sorted(wanted - seen)
    if unseen:
        raise ValidationFailed.field("projects", f"No such projects among yours: {unseen}.")
    return sorted(wanted)


def api_key_issue(
    *,
    user: User,
    name: str,
    scopes: list[str],
    expires_in: str | int | None = None,
    projects: Collection[int] | None = None,
    actor: User | None = None,
) -> tuple[ApiKey, str]:
    """A key of ``user`` and its plaintext (shown once), limited to ``projects`` if given,
    made by ``actor`` (``user`` when not given)."""
    return account_services.api_key_create(
        user=user,
        name=name,
        scopes=scopes,
        expires_in=expires_in,
        projects=projects_seen(user=user, project_ids=projects),
        actor=actor,
    )


# Service accounts ---------------------------------------------------------------------------

# The tiers from the least to the most: a service account's is at most its maker's.
TIERS = [User.Tier.STANDARD, User.Tier.PREMIUM, User.Tier.ENTERPRISE]
# Where a service account's address lives: a domain that never resolves (RFC 2606), so no
# email is ever sent to one, and no person can hold its address.
SERVICE_EMAIL_DOMAIN = "service-accounts.invalid"


def _tier_allowed(tier: str, *, actor: User) -> str:
    if TIERS.index(User.Tier(tier)) > TIERS.index(User.Tier(actor.tier)):
        raise ValidationFailed.field(
            "tier", f"At most your own tier, {actor.tier}, for a service account you manage."
        )
    return tier


def _team_projects(*, workspace: Workspace, actor: User, project_ids: list[int]) -> list[Project]:
    """The projects of ``workspace`` with these ids, each one ``actor`` sees; a 422 on
    ``projects`` naming the others."""
    found = list(project_list(user=actor).filter(workspace=workspace, pk__in=set(project_ids)))
    unseen = sorted(set(project_ids) - {project.pk for project in found})
    if unseen:
        raise ValidationFailed.field(
            "projects", f"No such projects in this workspace among yours: {unseen}."
        )
    return found


def _handle_free(name: str) -> str:
    """The first free handle the name suggests (``CI bot``: ``ci-bot``, ``ci-bot-2`` ...)."""
    for candidate in handle_candidates(f"{name}@{SERVICE_EMAIL_DOMAIN}"):
        if not User.objects.filter(handle=candidate).exists():
            return candidate
    raise AssertionError("unreachable: the candidates never run out")


def service_user_create(
    *,
    name: str,
    tier: str,
    handle: str = "",
    email: str = "",
    password: str = "",
    created_at: datetime | None = None,
) -> User:
    """The user behind a new service account: of kind ``service``, no usable password, an
    address of its own that no mail reaches, ``handle`` if free (else the first free one
    its name suggests). The service account's maker and an import of an archive make them:
    an import keeps the archive's ``email`` where no one here holds it, and its ``password``
    where it is one that no password matches."""
    if not handle or User.objects.filter(handle=handle).exists():
        handle = _handle_free(name)
    if not email.endswith(f"@{SERVICE_EMAIL_DOMAIN}") or User.objects.filter(email=email).exists():
        email = f"{handle}.{secrets.token_hex(6)}@{SERVICE_EMAIL_DOMAIN}"
    user = User(
        email=email,
        handle=handle,
        name=name,
        kind=User.Kind.SERVICE,
        tier=tier,
        created_at=created_at or timezone.now(),
    )
    if password and not is_password_usable(password):
        user.password = password
    else:
        user.set_unusable_password()
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError:
        raise Conflict("Another service account took this handle meanwhile: try again.") from None
    return user


@transaction.atomic
def service_account_create(
    *,
    workspace: Workspace,
    actor: User,
    name: str,
    role: str = Role.DEVELOPER,
    projects: list[int] | None = None,
    tier: str = User.Tier.STANDARD,
) -> ServiceAccount:
    """A service account of ``workspace`` with ``role`` there, on the teams of ``projects``
    (ids of the workspace's projects ``actor`` sees), at ``tier`` (at most ``actor``'s)."""
    teams = _team_projects(workspace=workspace, actor=actor, project_ids=projects or [])
    _tier_allowed(tier, actor=actor)
    user = service_user_create(name=name, tier=tier)
    account = ServiceAccount.objects.create(user=user, workspace=workspace, created_by=actor)
    account_services.membership_add(workspace=workspace, user=user, role=role, actor=actor)
    for project in teams:
        project_member_add(project=project, user=user, actor=actor)
    _service_account_event("service_account.created", account, actor=actor)
    return account


@transaction.atomic
def service_account_update(
    *,
    account: ServiceAccount,
    actor: User,
    name: Maybe[str] = UNSET,
    role: Maybe[str] = UNSET,
    projects: Maybe[list[int]] = UNSET,
    tier: Maybe[str] = UNSET,
) -> ServiceAccount:
    """Change what was given: its name, its role, the teams it is on (``projects``, the whole
    set), its tier."""
    user = account.user
    changed: list[str] = []
    if tier is not UNSET and tier != user.tier:
        user.tier = _tier_allowed(tier, actor=actor)
        changed.append("tier")
    if name is not UNSET and name != user.name:
        user.name = name
        changed.append("name")
    if changed:
        user.save(update_fields=changed)
    if role is not UNSET:
        membership = Membership.objects.get(workspace=account.workspace, user=user)
        if membership.role != role:
            account_services.membership_update(membership=membership, role=role, actor=actor)
            changed.append("role")
    if projects is not UNSET:
        wanted = {
            project.pk: project
            for project in _team_projects(
                workspace=account.workspace, actor=actor, project_ids=projects
            )
        }
        seats = ProjectMember.objects.filter(user=user, project__workspace=account.workspace)
        held = {seat.project_id: seat for seat in seats.select_related("project", "user")}
        for project_id in wanted.keys() - held.keys():
            project_member_add(project=wanted[project_id], user=user, actor=actor)
        for project_id in held.keys() - wanted.keys():
            project_member_remove(member=held[project_id], actor=actor)
        if held.keys() != wanted.keys():
            changed.append("projects")
    if changed:
        _service_account_event("service_account.updated", account, actor=actor)
    return account


@transaction.atomic
def service_account_delete(*, account: ServiceAccount, actor: User) -> None:
    """Its keys revoked at once, its seats given up; its row kept, so that what it did
    keeps its name."""
    locked = ServiceAccount.objects.select_for_update().get(pk=account.pk)
    if locked.deleted_at is not None:
        return
    now = timezone.now()
    revoked = list(ApiKey.objects.filter(user_id=account.pk, revoked_at__isnull=True))
    ApiKey.objects.filter(pk__in=[key.pk for key in revoked]).update(revoked_at=now)
    for api_key in revoked:
        audit.key_audit("api_key.revoked", api_key, actor=actor)
    for membership in Membership.objects.filter(user_id=account.pk):
        account_services.membership_remove(membership=membership, actor=actor)
    User.objects.filter(pk=account.pk).update(status=User.Status.SUSPENDED)
    ServiceAccount.objects.filter(pk=account.pk).update(deleted_at=now)
    account.deleted_at = now
    account.user.status = User.Status.SUSPENDED
    _service_account_event("service_account.deleted", account, actor=actor)


def service_account_key_issue(
    *,
    account: ServiceAccount,
    name: str,
    scopes: list[str],
    expires_in: str | int | None = None,
    projects: Collection[int] | None = None,
    actor: User | None = None,
) -> tuple[ApiKey, str]:
    """A key of the service account (``api_key_issue``: limited to projects it sees), made
    by ``actor``."""
    return api_key_issue(
        user=account.user,
        name=name,
        scopes=scopes,
        expires_in=expires_in,
        projects=projects,
        actor=actor,
    )


def _service_account_event(kind: str, account: ServiceAccount, *, actor: User) -> None:
    """Its event, and its entry in the workspace's audit log."""
    record = {"service_account": service_account_record(account)}
    event_record(type=kind, workspace_id=account.workspace_id, actor=actor, data=record)
    audit.audit_record(type=kind, workspace_ids=[account.workspace_id], actor=actor, subject=record)
