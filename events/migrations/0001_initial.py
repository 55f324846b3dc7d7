"""The event log moves from notifications to its own app. Its tables keep their names and no
row moves: the models change owner in Django's state only, and their content types follow."""

import django.utils.timezone
from django.db import migrations, models


def content_types_move(apps, schema_editor):
    # On a fresh database the content types do not exist yet (they are made after migrating).
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(
        app_label="notifications", model__in=["event", "eventlogstate"]
    ).update(app_label="events")


def content_types_back(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.filter(app_label="events", model__in=["event", "eventlogstate"]).update(
        app_label="notifications"
    )


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("notifications", "0002_webhooks"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="EventLogState",
                    fields=[
                        (
                            "id",
                            models.PositiveSmallIntegerField(
                                default=1, primary_key=True, serialize=False
                            ),
                        ),
                        ("purged_through_id", models.BigIntegerField(default=0)),
                    ],
                    options={"db_table": "notifications_eventlogstate"},
                ),
                migrations.CreateModel(
                    name="Event",
                    fields=[
                        ("id", models.BigAutoField(primary_key=True, serialize=False)),
                        ("type", models.CharField(max_length=64)),
                        ("workspace_id", models.BigIntegerField(db_index=True)),
                        ("project_id", models.BigIntegerField(blank=True, null=True)),
                        ("actor_id", models.BigIntegerField(blank=True, null=True)),
                        ("data", models.JSONField(default=dict)),
                        ("changes", models.JSONField(blank=True, null=True)),
                        (
                            "created_at",
                            models.DateTimeField(default=django.utils.timezone.now),
                        ),
                        ("dispatched_at", models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        "db_table": "notifications_event",
                        "ordering": ["id"],
                        "indexes": [
                            models.Index(
                                fields=["project_id", "id"], name="notificatio_project_9e9e86_idx"
                            ),
                            models.Index(fields=["type", "id"], name="notificatio_type_61c244_idx"),
                            models.Index(
                                condition=models.Q(("dispatched_at__isnull", True)),
                                fields=["id"],
                                name="event_undispatched",
                            ),
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_move, content_types_back),
    ]
