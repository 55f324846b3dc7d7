"""Reads: the event log as a caller may see it, webhooks and their deliveries."""

from collections.abc import Collection

from django.db.models import Q, QuerySet

from accounts.models import Membership, User
from accounts.roles import project_limit, user_roles
from events.models import Event
from projects.models import Project
from projects.selectors import project_visibility_q, visible_project_ids

from .models import Delivery, Webhook


def visible_scope(*, user: User) -> tuple[set[int], set[int]]:
    """The projects whose events the user may see, and the workspaces whose project-less
    events (workspace membership, for example) they may see."""
    project_ids = set(
        Project.objects.filter(project_visibility_q(user)).values_list("pk", flat=True)
    )
    return project_ids, workspace_records_seen(user)


def workspace_records_seen(user: User) -> set[int]:
    """The workspaces whose own records (project-less events, workspace webhooks) the user
    may see: their workspaces, none with a credential limited to projects."""
    return set() if project_limit(user) is not None else set(user_roles(user))


def visible_scopes(*, user_ids: Collection[int]) -> dict[int, tuple[set[int], set[int]]]:
    """``visible_scope`` of many people at once, in four queries whatever their number."""
    projects = visible_project_ids(user_ids=user_ids)
    workspaces: dict[int, set[int]] = {user_id: set() for user_id in projects}
    for user_id, workspace_id in Membership.objects.filter(user_id__in=projects).values_list(
        "user_id", "workspace_id"
    ):
        workspaces[user_id].add(workspace_id)
    return {user_id: (projects[user_id], workspaces[user_id]) for user_id in projects}


def event_visibility_q(*, project_ids: set[int], workspace_ids: set[int]) -> Q:
    return Q(project_id__in=project_ids) | Q(
        project_id__isnull=True, workspace_id__in=workspace_ids
    )


def event_list(*, user: User) -> QuerySet[Event]:
    project_ids, workspace_ids = visible_scope(user=user)
    return Event.objects.filter(
        event_visibility_q(project_ids=project_ids, workspace_ids=workspace_ids)
    )


def types_q(patterns: list[str]) -> Q:
    """SQL for ``kind_matches``: exact kinds, ``family.*`` prefixes, or everything."""
    if "*" in patterns:
        return Q()
    condition = Q(pk__in=[])
    for pattern in patterns:
        if pattern.endswith(".*"):
            condition |= Q(type__startswith=pattern[:-1])
        else:
            condition |= Q(type=pattern)
    return condition


def webhook_list(*, project: Project) -> QuerySet[Webhook]:
    return Webhook.objects.filter(project=project).order_by("id")


def workspace_webhook_list(*, workspace_id: int) -> QuerySet[Webhook]:
    """The workspace's own webhooks (not its projects')."""
    return Webhook.objects.filter(workspace_id=workspace_id, project__isnull=True).order_by("id")


def webhook_get(*, user: User, webhook_id: int | str) -> Webhook | None:
    """A webhook of a project the user sees, or of a workspace they belong to (the role each
    needs is the view's to check)."""
    seen = Q(project__in=Project.objects.filter(project_visibility_q(user))) | Q(
        project__isnull=True, workspace_id__in=sorted(workspace_records_seen(user))
    )
    return Webhook.objects.filter(seen).select_related("project").filter(pk=webhook_id).first()


def delivery_list(*, webhook: Webhook) -> QuerySet[Delivery]:
    return Delivery.objects.filter(webhook=webhook).select_related("event").order_by("-id")


def delivery_get(*, webhook: Webhook, delivery_id: int | str) -> Delivery | None:
    return (
        Delivery.objects.filter(webhook=webhook, pk=delivery_id)
        .select_related("event", "webhook__project")
        .prefetch_related("attempt_log")
        .first()
    )
