"""Webhooks of a workspace, first step: every webhook names its workspace (its project's). The
column becomes required in 0008, in a transaction of its own: on PostgreSQL, the rows' foreign
key checks are still pending in this one, and an ALTER TABLE would wait on them."""

import django.db.models.deletion
from django.db import migrations, models


def workspace_of_project(apps, schema_editor):
    Webhook = apps.get_model("notifications", "Webhook")
    Project = apps.get_model("projects", "Project")
    Webhook.objects.update(
        workspace_id=models.Subquery(
            Project.objects.filter(pk=models.OuterRef("project_id")).values("workspace_id")[:1]
        )
    )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("projects", "0001_initial"),
        ("notifications", "0006_redelivery_goes_with_its_delivery"),
    ]

    operations = [
        migrations.AddField(
            model_name="webhook",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="webhooks",
                to="accounts.workspace",
            ),
        ),
        migrations.RunPython(workspace_of_project, migrations.RunPython.noop, elidable=True),
    ]
