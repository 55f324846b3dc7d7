"""Where rate-limit windows are counted when there is no Redis.

The counting is the API plumbing's (``collab.api.counters``), which reaches this model by the
``RATE_LIMIT_COUNTER_MODEL`` setting.
"""

from django.db import models


class RateLimitCounter(models.Model):
    """A rate-limit window kept in the database when there is no Redis (the embedded default).

    One row per counted thing (``user:7``, ``addr:203.0.113.9``, a sign-in email...), reused
    from window to window: ``collab.api.counters`` starts, counts and restarts it with a single
    ``INSERT ... ON CONFLICT DO UPDATE ... RETURNING``, so every process counts exactly.
    """

    key = models.CharField(max_length=200, primary_key=True)
    hits = models.PositiveIntegerField(default=0)
    # Unix seconds at which the window ends; a window that has ended is restarted by its
    # next hit, and rows whose window ended long ago are purged by a periodic task.
    reset_at = models.BigIntegerField(db_index=True)

    class Meta:
        # The table predates this app (it began in accounts); the name stays, no data moved.
        db_table = "accounts_ratelimitcounter"

    def __str__(self):
        return f"{self.key}: {self.hits} until {self.reset_at}"
