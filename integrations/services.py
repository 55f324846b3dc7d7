"""Writes: API keys issued with what they may reach."""

from collections.abc import Collection

from accounts import services as account_services
from accounts.models import ApiKey, User
from collab.api.exceptions import ValidationFailed
from projects.selectors import project_list


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
) -> tuple[ApiKey, str]:
    """A key of ``user`` and its plaintext (shown once), limited to ``projects`` if given."""
    return account_services.api_key_create(
        user=user,
        name=name,
        scopes=scopes,
        expires_in=expires_in,
        projects=projects_seen(user=user, project_ids=projects),
    )
