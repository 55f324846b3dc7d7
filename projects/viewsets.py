"""The tenancy every project-bound view stands on.

``ProjectAccessViewSet`` checks the caller's role in a project's workspace (and refuses
writes to an archived project). ``ProjectScopedViewSet`` resolves the project named in the
URL once, through the one visibility selector: a project the caller may not see is a 404,
whatever the route.
"""

from typing import cast

from django.http import Http404
from rest_framework.permissions import SAFE_METHODS

from accounts.models import User
from accounts.roles import require_ability
from collab.api.exceptions import Conflict
from collab.api.permissions import READ
from collab.api.viewsets import ApiViewSet

from . import selectors as project_selectors
from .models import Project


class ProjectAccessViewSet(ApiViewSet):
    """A viewset whose records belong to a project it finds itself (an issue by its id): the
    role gate goes through that project's workspace."""

    @property
    def actor(self) -> User:
        """The user making the change: authentication let no anonymous request this far."""
        return cast(User, self.request.user)

    def check_project_ability(self, project: Project, ability: str) -> None:
        require_ability(self.request.user, project.workspace_id, ability)
        # An archived project is read-only: reading what needs more than READ (its webhooks,
        # say) still answers, only writes are refused.
        if ability != READ and project.is_archived and self.request.method not in SAFE_METHODS:
            raise Conflict(
                "This project is archived and read-only.",
                details={"project_status": project.status},
            )


class ProjectScopedViewSet(ProjectAccessViewSet):
    """A viewset whose routes live under one project (``project_lookup_kwarg`` in the URL)."""

    project_lookup_kwarg = "project_id"
    # Whether the resolved project carries ``team_count`` (for views that show the project).
    project_with_team_count = False
    # Or a ``projects.selectors.ProjectLookup`` of the view's own, to read values the view
    # needs on every request in the project's own query.
    project_lookup: project_selectors.ProjectLookup | None = None

    def get_project(self, *, ability: str | None = None) -> Project:
        cached = getattr(self, "_project", None)
        if cached is None:
            raw = self.kwargs.get(self.project_lookup_kwarg)
            if self.project_lookup is not None:
                cached = self.project_lookup.get(user=self.actor, project_id=raw)
            else:
                cached = project_selectors.project_get(
                    user=self.actor,
                    project_id=raw,
                    with_team_count=self.project_with_team_count,
                )
            if cached is None:
                raise Http404
            self._project = cached
        self.check_project_ability(cached, ability or self.required_ability())
        return cached
