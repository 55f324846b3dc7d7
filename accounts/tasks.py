from celery import shared_task

from . import emails

# Tries of an invitation's email before it is marked failed, the first wait between them
# (doubled each time, with full jitter, at most Celery's retry_backoff_max of 600 s).
INVITATION_EMAIL_RETRIES = 5
INVITATION_EMAIL_BACKOFF_SECONDS = 30


class EmailNotSentYet(Exception):
    """A transient failure to send (the mail server unreachable, a 4xx): tried again later."""


@shared_task(
    bind=True,
    autoretry_for=(EmailNotSentYet,),
    retry_backoff=INVITATION_EMAIL_BACKOFF_SECONDS,
    max_retries=INVITATION_EMAIL_RETRIES,
)
def invitation_send_email(self, *, invitation_id: int, token: str | None = None) -> None:
    # The id alone: the token is made again from the invitation. ``token`` only in messages
    # queued before (a secret in a task's arguments is logged by Celery and kept by the broker).
    again = emails.invitation_email_send(
        invitation_id=invitation_id,
        token=token,
        last_attempt=self.request.retries >= self.max_retries,
    )
    if again:
        raise EmailNotSentYet(f"Invitation {invitation_id}: its email will be tried again.")


@shared_task
def invitations_email_sweep() -> int:
    """Send again the invitation emails a killed worker left unsent (from beat)."""
    return emails.invitations_email_sweep()


@shared_task
def denied_tokens_purge() -> int:
    """Drop logout denylist rows whose tokens have all expired: their own ``exp`` refuses them
    now (Redis expires its copies itself)."""
    from .token_denylist import denylist_purge

    return denylist_purge()
