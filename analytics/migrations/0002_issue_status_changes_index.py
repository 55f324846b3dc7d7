from django.db import migrations

# The rollups and the live part of every metrics request look up an issue's status changes
# by time. The history table has no index on time, and the issues app owns it: this partial
# index (status rows only, a small share of the history) is created here instead, by name,
# in SQL that PostgreSQL and SQLite both accept.
INDEX = "analytics_history_status_at"


class Migration(migrations.Migration):
    dependencies = [
        ("analytics", "0001_initial"),
        ("issues", "0001_initial"),
    ]

    operations = [
        migrations.RunSQL(
            sql=(
                f"CREATE INDEX IF NOT EXISTS {INDEX} ON issues_issuehistory (created_at) "
                "WHERE field = 'status'"
            ),
            reverse_sql=f"DROP INDEX IF EXISTS {INDEX}",
        ),
    ]
