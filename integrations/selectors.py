"""Reads: service accounts and their keys, OAuth apps and the users' authorizations."""

from django.db.models import F, QuerySet

from accounts.models import ApiKey, AppAuthorization, AuditEntry, Membership, OAuthApp, User
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


# OAuth apps ---------------------------------------------------------------------------------


def oauth_app_list(*, workspace_id: int) -> QuerySet[OAuthApp]:
    """The workspace's apps, the oldest first."""
    return (
        OAuthApp.objects.filter(workspace_id=workspace_id)
        .select_related("application")
        .order_by("application_id")
    )


def oauth_app_get(*, user: User, app_id: int | str) -> OAuthApp | None:
    """An app of a workspace ``user`` belongs to; None otherwise (whether it exists or not).
    The role each route needs is the view's to check."""
    pk = id_or_none(app_id)
    if pk is None:
        return None
    return (
        OAuthApp.objects.filter(pk=pk, workspace_id__in=sorted(user_roles(user)))
        .select_related("application")
        .first()
    )


def oauth_app_by_client(*, client_id: str) -> OAuthApp | None:
    return (
        OAuthApp.objects.filter(application__client_id=client_id)
        .select_related("application", "workspace")
        .first()
    )


def app_authorization_list(*, user: User) -> QuerySet[AppAuthorization]:
    """The apps ``user`` authorised, the latest first."""
    return AppAuthorization.objects.filter(user=user).order_by("-updated_at", "-id")


def app_authorization_get(*, user: User, authorization_id: int | str) -> AppAuthorization | None:
    pk = id_or_none(authorization_id)
    if pk is None:
        return None
    return AppAuthorization.objects.filter(user=user, pk=pk).first()


def app_authorizations_described(
    authorizations: list[AppAuthorization],
) -> list[AppAuthorization]:
    """``authorizations``, each with ``app_described`` (the app's id, name, client id and
    workspace) set: one query for them all."""
    apps = {
        row["application_id"]: row
        for row in OAuthApp.objects.filter(
            pk__in={authorization.application_id for authorization in authorizations}
        ).values(
            "application_id",
            "workspace_id",
            name=F("application__name"),
            client_id=F("application__client_id"),
        )
    }
    for authorization in authorizations:
        app = apps.get(authorization.application_id)
        authorization.app_described = {  # type: ignore[attr-defined]
            "id": authorization.application_id,
            "name": app["name"] if app else "",
            "client_id": app["client_id"] if app else "",
            "workspace_id": app["workspace_id"] if app else None,
        }
    return authorizations


# The audit log ------------------------------------------------------------------------------


def audit_log(*, workspace_id: int) -> QuerySet[AuditEntry]:
    """The workspace's audit entries, the newest first."""
    return AuditEntry.objects.filter(workspace_id=workspace_id).order_by("-id")
