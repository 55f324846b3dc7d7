"""IdempotencyKey and RateLimitCounter now belong to the idempotency and ratelimits apps:
state only, their tables stay as they are."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0005_denied_token"),
        ("idempotency", "0001_initial"),
        ("ratelimits", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(model_name="idempotencykey", name="user"),
                migrations.DeleteModel(name="RateLimitCounter"),
                migrations.DeleteModel(name="IdempotencyKey"),
            ],
            database_operations=[],
        ),
    ]
