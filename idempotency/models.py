"""Where the API keeps the answers of POSTs made with an ``Idempotency-Key`` header.

The logic is the API plumbing's (``collab.api.idempotency``), which reaches this model by the
``IDEMPOTENCY_KEY_MODEL`` setting, as Django reaches the user model by ``AUTH_USER_MODEL``.
"""

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone


class IdempotencyKey(models.Model):
    """A POST made with an ``Idempotency-Key`` header, kept 24 hours to replay its answer.

    ``status_code`` stays null while the first request is still running.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    location = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        # The table predates this app (it began in accounts); the name stays, no data moved.
        db_table = "accounts_idempotencykey"
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_unique"),
        ]

    def __str__(self):
        return self.key
