"""Reads of exports. Who may read them (a workspace's owners and admins) is the view's gate."""

from django.db.models import QuerySet

from .models import Export


def export_list(*, workspace_id: int) -> QuerySet[Export]:
    """A workspace's exports, the newest first."""
    return Export.objects.filter(workspace_id=workspace_id).order_by("-id")


def export_get(*, workspace_id: int, export_id: int | str) -> Export | None:
    """One export of the workspace (None: no such export there)."""
    return Export.objects.filter(workspace_id=workspace_id, pk=export_id).first()
