"""Reads: service accounts, and their keys."""

from django.db.models import QuerySet

from accounts.models import ApiKey, Membership, User
from accounts.roles import user_roles
from collab.api.routers import id_or_none
from projects.models import ProjectMember

from .models import ServiceAccount


def service_account_list(*, workspace_id: int) -> QuerySet[ServiceAccount]:
    """The workspace's service accounts (not deleted), the oldest first."""
    return (
        ServiceAccount.objects.filter(workspace_id=workspace_id, deleted_at__isnull=True)
        .select_related("user")
        .order_by("user_id")
    )


def service_account_get(*, user: User, account_id: int | str) -> ServiceAccount | None:
    """A service account of a workspace ``user`` belongs to (as their credential sees it),
    not deleted; None otherwise (whether it exists or not). The role each route needs is the
    view's to check."""
    pk = id_or_none(account_id)
    if pk is None:
        return None
    return (
        ServiceAccount.objects.filter(
            pk=pk, deleted_at__isnull=True, workspace_id__in=sorted(user_roles(user))
        )
        .select_related("user")
        .first()
    )


def service_accounts_described(accounts: list[ServiceAccount]) -> list[ServiceAccount]:
    """``accounts``, each with ``role`` (in its workspace) and ``project_ids`` (the teams it
    is on, there) set: two queries for them all."""
    ids = [account.pk for account in accounts]
    roles = {
        (user_id, workspace_id): role
        for user_id, workspace_id, role in Membership.objects.filter(user_id__in=ids).values_list(
            "user_id", "workspace_id", "role"
        )
    }
    seats: dict[tuple[int, int], list[int]] = {}
    for user_id, workspace_id, project_id in (
        ProjectMember.objects.filter(user_id__in=ids)
        .order_by("project_id")
        .values_list("user_id", "project__workspace_id", "project_id")
    ):
        seats.setdefault((user_id, workspace_id), []).append(project_id)
    for account in accounts:
        key = (account.pk, account.workspace_id)
        account.role = roles.get(key)
        account.project_ids = seats.get(key, [])
    return accounts


def service_account_keys(*, account: ServiceAccount) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(user_id=account.pk).order_by("-id")
