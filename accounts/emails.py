"""Invitation emails: sent by a task (``accounts.tasks.invitation_send_email``), their outcome
kept on the invitation, so an email that cannot be sent is retried or shown as failed, never
lost without a trace. The task takes the invitation's id and makes its token again
(``accounts.invitation_tokens``): no token rides in the broker or in a task's arguments."""

import hmac
import logging
import smtplib
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.core.mail import BadHeaderError, send_mail
from django.db.models import F
from django.utils import timezone

from .invitation_tokens import token_issue, token_recover
from .keys import hash_key
from .models import Invitation

logger = logging.getLogger("collab.auth")
# Invitations whose lost email one sweep sends again, at most.
INVITATION_SWEEP_BATCH = 500


def _invitation_email_failed(*, invitation: Invitation, error: Exception) -> None:
    reason = f"{error.__class__.__name__}: {error}"[:500]
    Invitation.objects.filter(pk=invitation.pk).update(
        email_status=Invitation.EmailStatus.FAILED,
        email_error=reason,
        email_attempts=F("email_attempts") + 1,
    )
    logger.error(
        "Invitation %s: its email to %s cannot be sent (%s); marked failed.",
        invitation.pk,
        invitation.email,
        error.__class__.__name__,
    )


def _is_permanent(error: Exception) -> bool:
    """An error a later attempt would meet again: a header Django refuses (a line break in a
    name), or an SMTP server's 5xx (recipient refused, message rejected)."""
    if isinstance(error, (BadHeaderError, ValueError, UnicodeError, smtplib.SMTPRecipientsRefused)):
        return True
    return isinstance(error, smtplib.SMTPResponseException) and error.smtp_code >= 500


def invitation_email_send(
    *, invitation_id: int, last_attempt: bool, token: str | None = None
) -> bool:
    """Send an invitation's email and record the outcome on the invitation (``email_status``
    ``sent`` or ``failed`` with ``email_error``). Answers whether to try again later: only for
    a transient error (the SMTP server unreachable, a 4xx) before the ``last_attempt``.

    The token is made again from the invitation (``token`` is given only by the messages
    queued before tasks carried the id alone). An email sent already, or given up on, is not
    sent again: a task run twice, or one thought lost that turns up after the sweep sent its
    email, sends nothing."""
    invitation = (
        Invitation.objects.select_related("workspace", "invited_by")
        .filter(
            pk=invitation_id,
            status=Invitation.Status.PENDING,
            email_status=Invitation.EmailStatus.QUEUED,
        )
        .first()
    )
    if invitation is None:
        return False
    if token is not None:
        # A token the sweep has since replaced no longer opens the invitation: not sent.
        if not hmac.compare_digest(hash_key(token), invitation.token_hash):
            return False
    else:
        token = token_recover(nonce=invitation.token_nonce, token_hash=invitation.token_hash)
        if token is None:
            token = _token_reissue(invitation)
            if token is None:
                return False
    inviter = invitation.invited_by
    who = (inviter.name or inviter.email) if inviter else "Someone"
    link = f"{settings.PUBLIC_BASE_URL}/accept-invitation?token={token}"
    try:
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
    except Exception as error:
        if not isinstance(error, OSError) and not _is_permanent(error):
            raise  # a bug, not a delivery problem: the worker logs it as such
        if _is_permanent(error) or last_attempt:
            _invitation_email_failed(invitation=invitation, error=error)
            return False
        Invitation.objects.filter(pk=invitation.pk).update(
            email_error=f"{error.__class__.__name__}: {error}"[:500],
            email_attempts=F("email_attempts") + 1,
        )
        logger.warning(
            "Invitation %s: sending its email failed (%s); it will be tried again.",
            invitation.pk,
            error.__class__.__name__,
        )
        return True
    Invitation.objects.filter(pk=invitation.pk).update(
        email_status=Invitation.EmailStatus.SENT,
        email_error="",
        email_attempts=F("email_attempts") + 1,
    )
    return False


def _token_reissue(invitation: Invitation) -> str | None:
    """A new token for an invitation whose own cannot be made again (made before tokens were
    made from a nonce, or under a SECRET_KEY no longer kept among SECRET_KEY_FALLBACKS); None
    when another task replaced it meanwhile (that one sends it)."""
    nonce, token = token_issue()
    taken = Invitation.objects.filter(pk=invitation.pk, token_hash=invitation.token_hash).update(
        token_nonce=nonce, token_hash=hash_key(token)
    )
    if not taken:
        return None
    logger.warning(
        "Invitation %s: its token could not be made again; a new one is sent.", invitation.pk
    )
    return token


def invitations_email_sweep() -> int:
    """Send again the invitation emails nobody is sending: pending invitations whose email is
    still ``queued`` INVITATION_EMAIL_SWEEP_GRACE_SECONDS after it was handed to the worker
    (longer than its retries take), because the worker holding it was killed. Each gets a new
    token, taken with a conditional UPDATE: two sweeps never both send, and the old token no
    longer opens the invitation. Returns how many were queued."""
    send = current_app.tasks["accounts.tasks.invitation_send_email"]
    now = timezone.now()
    cut = now - timedelta(seconds=settings.INVITATION_EMAIL_SWEEP_GRACE_SECONDS)
    stuck = Invitation.objects.filter(
        status=Invitation.Status.PENDING,
        email_status=Invitation.EmailStatus.QUEUED,
        email_queued_at__lt=cut,
        expires_at__gt=now,
    ).values_list("pk", "email_queued_at")[:INVITATION_SWEEP_BATCH]
    queued = 0
    for invitation_id, queued_at in stuck:
        nonce, token = token_issue()
        taken = Invitation.objects.filter(
            pk=invitation_id, email_queued_at=queued_at, email_status=Invitation.EmailStatus.QUEUED
        ).update(token_nonce=nonce, token_hash=hash_key(token), email_queued_at=now)
        if taken:
            logger.warning(
                "Invitation %s: its email was never sent; sending it again.", invitation_id
            )
            send.delay(invitation_id=invitation_id)
            queued += 1
    return queued
