from django.conf import settings
from django.db import models
from django.utils import timezone


class ServiceAccount(models.Model):
    """A workspace's identity for a program (a CI pipeline, a chat bot, a sync job): a user of
    kind ``service``, whose id it shares, that signs in with the keys its workspace's owners
    and admins make for it, never with a password. Deleted, it keeps its row (what it did
    keeps its name), its keys revoked and its seats given up."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="service_account",
    )
    workspace = models.ForeignKey(
        "accounts.Workspace", on_delete=models.CASCADE, related_name="service_accounts"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    deleted_at = models.DateTimeField(null=True, blank=True)
    # Read for it by integrations.selectors.service_accounts_described.
    role: str | None
    project_ids: list[int]

    class Meta:
        ordering = ["user_id"]

    def __str__(self):
        return self.user.name or self.user.handle

    @property
    def id(self) -> int:
        return self.user_id
