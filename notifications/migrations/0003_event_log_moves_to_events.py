"""The event log's models now belong to the events app (events/migrations/0001_initial.py):
state only, the tables and the delivery's foreign key stay as they are."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("events", "0001_initial"),
        ("notifications", "0002_webhooks"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="delivery",
                    name="event",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="deliveries",
                        to="events.event",
                    ),
                ),
                migrations.DeleteModel(name="EventLogState"),
                migrations.DeleteModel(name="Event"),
            ],
            database_operations=[],
        ),
    ]
