from django.db import migrations, models

# The view itself is made after every migrate and dropped before (search.schema): a view
# over the searchable tables would stop migrations that rebuild or retype them.


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("comments", "0002_search_document"),
        ("gitintegration", "0004_search_document"),
        ("issues", "0003_search_document"),
        ("projects", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="SearchHit",
            fields=[
                ("id", models.BigIntegerField(primary_key=True, serialize=False)),
                (
                    "type",
                    models.CharField(
                        choices=[
                            ("issue", "Issue"),
                            ("pull_request", "Pull Request"),
                            ("comment", "Comment"),
                        ],
                        max_length=16,
                    ),
                ),
                ("object_id", models.BigIntegerField()),
                (
                    "project",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=models.deletion.DO_NOTHING,
                        related_name="+",
                        to="projects.project",
                    ),
                ),
                ("title", models.CharField(max_length=500)),
                ("body", models.TextField()),
                ("issue_id", models.BigIntegerField(null=True)),
                ("pull_request_id", models.BigIntegerField(null=True)),
                ("created_at", models.DateTimeField()),
                ("updated_at", models.DateTimeField()),
            ],
            options={"db_table": "search_hit", "ordering": ["-id"], "managed": False},
        ),
    ]
