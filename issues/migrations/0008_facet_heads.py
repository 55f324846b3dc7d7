from django.db import migrations

from issues import facets


def install(apps, schema_editor):
    """The triggers as they are now (counting the heads of words longer than the counters
    hold, on PostgreSQL), and the heads of every issue's words counted."""
    connection = schema_editor.connection
    facets.triggers_create(connection)
    facets.text_recount(connection, "head")


class Migration(migrations.Migration):
    # Backwards, nothing is undone: the triggers go on counting heads, which the code of
    # before ignores; forwards again, they are recounted from the rows.

    dependencies = [
        ("issues", "0007_facet_pairs"),
    ]

    operations = [
        migrations.RunPython(install, migrations.RunPython.noop),
    ]
