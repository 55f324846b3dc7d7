from django.db.models import QuerySet
from django.http import Http404

from .models import ApiKey, Invitation, Membership, User, Workspace
from .roles import require_ability, require_unlimited, user_roles


def workspace_list(*, user: User) -> QuerySet[Workspace]:
    return Workspace.objects.filter(pk__in=list(user_roles(user))).order_by("id")


def workspace_get(*, user: User, workspace_id: int | str | None) -> Workspace | None:
    try:
        pk = int(workspace_id)  # type: ignore[arg-type]  # None: the TypeError below
    except (TypeError, ValueError):
        return None
    if pk not in user_roles(user):
        return None
    return Workspace.objects.filter(pk=pk).first()


def workspace_require(
    *, user: User, workspace_id: int | str | None, ability: str, unlimited_to: str = ""
) -> Workspace:
    """The workspace a route names, for a caller whose role allows ``ability`` in it: a 404
    when the caller is not a member (as if it did not exist), a 403 when the role falls short.
    ``unlimited_to``: what the route does that a credential limited to projects may not (its
    workspace's own records), refused with a 403 too."""
    workspace = workspace_get(user=user, workspace_id=workspace_id)
    if workspace is None:
        raise Http404
    require_ability(user, workspace.pk, ability)
    if unlimited_to:
        require_unlimited(user, unlimited_to)
    return workspace


def default_workspace_id(*, user: User) -> int | None:
    """The caller's first workspace: the oldest membership."""
    return (
        Membership.objects.filter(user=user)
        .order_by("created_at", "id")
        .values_list("workspace_id", flat=True)
        .first()
    )


def member_list(*, workspace_id: int) -> QuerySet[Membership]:
    return (
        Membership.objects.filter(workspace_id=workspace_id)
        .select_related("user")
        .order_by("user_id")
    )


def api_key_list(*, user: User) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(user=user).order_by("-id")


def invitation_list(*, workspace_id: int) -> QuerySet[Invitation]:
    return (
        Invitation.objects.filter(workspace_id=workspace_id)
        .prefetch_related("projects")
        .order_by("-id")
    )
