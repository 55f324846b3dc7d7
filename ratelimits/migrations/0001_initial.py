"""RateLimitCounter moves from accounts to this app. Its table keeps its name and no row moves:
the model changes owner in Django's state only, and its content type follows."""

from django.db import migrations, models

APP, MODEL = "ratelimits", "ratelimitcounter"


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
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="RateLimitCounter",
                    fields=[
                        (
                            "key",
                            models.CharField(max_length=200, primary_key=True, serialize=False),
                        ),
                        ("hits", models.PositiveIntegerField(default=0)),
                        ("reset_at", models.BigIntegerField(db_index=True)),
                    ],
                    options={"db_table": "accounts_ratelimitcounter"},
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_move, content_types_back),
    ]
