"""IdempotencyKey moves from accounts to this app. Its table keeps its name and no row moves:
the model changes owner in Django's state only, and its content type follows."""

import django.core.serializers.json
import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

APP, MODEL = "idempotency", "idempotencykey"


def content_types_move(apps, schema_editor):
    # On a fresh database the content types do not exist yet (they are made after migrating).
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label="accounts", model=MODEL).update(app_label=APP)


def content_types_back(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label=APP, model=MODEL).update(app_label="accounts")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("accounts", "0005_denied_token"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="IdempotencyKey",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("key", models.CharField(max_length=255)),
                        ("request_hash", models.CharField(max_length=64)),
                        ("status_code", models.PositiveSmallIntegerField(blank=True, null=True)),
                        (
                            "response_body",
                            models.JSONField(
                                blank=True,
                                encoder=django.core.serializers.json.DjangoJSONEncoder,
                                null=True,
                            ),
                        ),
                        ("location", models.CharField(blank=True, default="", max_length=500)),
                        (
                            "created_at",
                            models.DateTimeField(
                                db_index=True, default=django.utils.timezone.now
                            ),
                        ),
                        (
                            "user",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "accounts_idempotencykey",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("user", "key"), name="idempotency_key_unique"
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_move, content_types_back),
    ]
