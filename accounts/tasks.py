from celery import shared_task
from django.conf import settings
from django.core.mail import send_mail

from .models import Invitation


@shared_task(autoretry_for=(OSError,), retry_backoff=True, max_retries=5)
def invitation_send_email(*, invitation_id: int, token: str) -> None:
    invitation = (
        Invitation.objects.select_related("workspace", "invited_by")
        .filter(pk=invitation_id, status=Invitation.Status.PENDING)
        .first()
    )
    if invitation is None:
        return
    inviter = invitation.invited_by
    who = (inviter.name or inviter.email) if inviter else "Someone"
    link = f"{settings.PUBLIC_BASE_URL}/accept-invitation?token={token}"
    send_mail(
        subject=f"{who} invited you to {invitation.workspace.name} on Collab",
        message=(
            f"{who} invited you to join the workspace {invitation.workspace.name} "
            f"as {invitation.role}.\n\n"
            f"Accept with this token before {invitation.expires_at:%Y-%m-%d %H:%M} UTC:\n\n"
            f"    {token}\n\n"
            f'POST /v1/invitations/accept with {{"token", "name", "password"}}, '
            f"or open {link}\n"
        ),
        from_email=None,
        recipient_list=[invitation.email],
    )


@shared_task
def denied_tokens_purge() -> int:
    """Drop logout denylist rows whose tokens have all expired: their own ``exp`` refuses them
    now (Redis expires its copies itself)."""
    from .token_denylist import denylist_purge

    return denylist_purge()
