import random

from celery import shared_task

from . import emails

# Tries of an invitation's email before it is marked failed, and the first wait between
# them (doubled each time, with jitter, at most an hour): about 30 s, 1, 2, 4, 8 minutes.
INVITATION_EMAIL_RETRIES = 5
INVITATION_EMAIL_BACKOFF_SECONDS = 30


@shared_task(bind=True, max_retries=INVITATION_EMAIL_RETRIES)
def invitation_send_email(self, *, invitation_id: int, token: str) -> None:
    retries = self.request.retries
    again = emails.invitation_email_send(
        invitation_id=invitation_id, token=token, last_attempt=retries >= self.max_retries
    )
    if again:
        delay = min(INVITATION_EMAIL_BACKOFF_SECONDS * 2**retries, 3600)
        raise self.retry(countdown=delay + random.uniform(0, delay / 2))  # noqa: S311  # jitter


@shared_task
def invitations_email_sweep() -> int:
    """Send again the invitation emails a killed worker left unsent (from beat)."""
    from .services import invitations_email_sweep as sweep

    return sweep()


@shared_task
def denied_tokens_purge() -> int:
    """Drop logout denylist rows whose tokens have all expired: their own ``exp`` refuses them
    now (Redis expires its copies itself)."""
    from .token_denylist import denylist_purge

    return denylist_purge()
