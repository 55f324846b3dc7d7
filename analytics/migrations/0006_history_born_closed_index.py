"""An index of the issues created closed: the "created" history rows whose record says
``closed`` (``analytics.stats.BORN_CLOSED``), which every metrics request counts for the
part of the period its rollups do not hold yet.

Without it, PostgreSQL could only find them among every "created" row: once the issues of
that part were more than a few thousand (rollups a day behind, a million-issue project), it
read the whole history table instead (1M issues, a 30-day window: 394 ms for that branch,
then 5.5 ms with the index; 0.2 ms as the live part stays a few minutes long). Few issues are
created closed, so the index is small. Like ``analytics_history_status_at`` it is made here
by name (the issues app owns the table) and compiled by the ORM from the same condition as the
query's, which is what lets the planner use a partial index. It is built concurrently:
writes to a large history go on meanwhile. SQLite gets none: its planner never matches the
values a statement binds (Django binds every one) with a partial index's condition, so the
index would only cost the writes."""

from django.db import migrations, models

INDEX = "analytics_history_born_closed"


def _index() -> models.Index:
    # analytics.stats.BORN_CLOSED, as it stands in this migration
    # (tests/analytics/test_metrics.py checks the two agree).
    condition = models.Q(field="created", new_value__status="closed")
    return models.Index(fields=["issue"], name=INDEX, condition=condition)


def index_make(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [INDEX])
        row = cursor.fetchone()
    if row is not None and row[0]:
        return
    if row is not None:  # an earlier concurrent build that failed left it invalid
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")
    model = apps.get_model("issues", "IssueHistory")
    schema_editor.add_index(model, _index(), concurrently=True)


def index_drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY runs outside a transaction.
    atomic = False

    dependencies = [
        ("analytics", "0005_project_day_comments"),
        ("issues", "0008_facet_heads"),
    ]

    operations = [migrations.RunPython(index_make, index_drop, elidable=True)]
