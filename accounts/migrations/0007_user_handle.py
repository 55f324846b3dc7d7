"""Users gain a unique handle: added empty, filled from each email's local part (numbered
where taken), then made unique."""

import django.core.validators
from django.db import migrations, models

from accounts.handles import HANDLE_PATTERN, HANDLE_RULE, handle_candidates


def fill_handles(apps, schema_editor):
    User = apps.get_model("accounts", "User")
    taken: set[str] = set()
    for user in User.objects.order_by("id").only("id", "email").iterator():
        handle = next(c for c in handle_candidates(user.email) if c not in taken)
        taken.add(handle)
        User.objects.filter(pk=user.pk).update(handle=handle)


class Migration(migrations.Migration):
    dependencies = [("accounts", "0006_state_moves_to_idempotency_and_ratelimits")]

    operations = [
        migrations.AddField(
            model_name="user",
            name="handle",
            field=models.CharField(blank=True, default="", max_length=39),
            preserve_default=False,
        ),
        migrations.RunPython(fill_handles, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="user",
            name="handle",
            field=models.CharField(
                blank=True,
                max_length=39,
                unique=True,
                validators=[django.core.validators.RegexValidator(HANDLE_PATTERN, HANDLE_RULE)],
            ),
        ),
    ]
