"""Helpers shared by the operator commands (the leading underscore keeps Django from
listing this module as a command).

Every command turns bad input into ``CommandError``: Django prints its message on standard
error and exits with status 1, without a traceback.
"""

from django.core.management.base import CommandError

from accounts.models import User
from collab.api.exceptions import ApiError


def user_by_email(email: str) -> User:
    normalized = User.objects.normalize_email((email or "").strip()).lower()
    user = User.objects.filter(email=normalized).first()
    if user is None:
        raise CommandError(f"No user has the email address '{email}'.")
    return user


def command_error(exc: ApiError, options: dict[str, str] | None = None) -> CommandError:
    """A service's typed error as a message for the terminal.

    ``options`` names the command-line option behind a service field
    (``{"expiresIn": "--expires-in"}``), so the message points at what the operator typed.
    """
    if not exc.details:
        return CommandError(exc.message)
    lines = []
    for field, messages in exc.details.items():
        text = " ".join(messages) if isinstance(messages, list) else str(messages)
        lines.append(f"{(options or {}).get(field, '--' + field)}: {text}")
    return CommandError("\n".join(lines))


def split_list(value: str) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]
