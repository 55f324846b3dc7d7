"""Webhooks of a workspace, second step: the workspace is required, and a webhook without a
project receives all of the workspace's events."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("notifications", "0007_workspace_webhooks"),
    ]

    operations = [
        migrations.AlterField(
            model_name="webhook",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="webhooks",
                to="accounts.workspace",
            ),
        ),
        migrations.AlterField(
            model_name="webhook",
            name="project",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="webhooks",
                to="projects.project",
            ),
        ),
        migrations.AddIndex(
            model_name="webhook",
            index=models.Index(
                condition=models.Q(("project__isnull", True)),
                fields=["workspace", "is_active"],
                name="webhook_of_workspace",
            ),
        ),
    ]
