"""The JSON of projects: shown by ``ProjectSerializer`` (one source for the API, the schema and
the events' payloads), built here for the services."""

from typing import Any

from accounts.models import User

from .models import Project
from .serializers import ProjectSerializer


def project_record(project: Project) -> dict[str, Any]:
    """A project as the API shows it (``team_count`` set on it by the caller)."""
    return dict(ProjectSerializer(project).data)


def member_event_data(project: Project, user: User) -> dict[str, Any]:
    """``data`` of the ``member.added`` and ``member.removed`` events."""
    return {
        "project": {"id": project.pk, "name": project.name},
        "user": {"id": user.pk, "email": user.email, "name": user.name},
    }
