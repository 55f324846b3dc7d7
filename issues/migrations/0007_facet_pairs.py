from django.db import migrations

from issues import facets


def install(apps, schema_editor):
    """The triggers as they are now (counting pairs of words on PostgreSQL too), and the
    pairs of every issue counted."""
    connection = schema_editor.connection
    facets.triggers_create(connection)
    facets.text_recount(connection, "pair")


class Migration(migrations.Migration):
    # Backwards, nothing is undone: the triggers go on counting pairs, which the code of
    # before ignores; forwards again, they are recounted from the rows.

    dependencies = [
        ("issues", "0006_history_actor_detail"),
    ]

    operations = [
        migrations.RunPython(install, migrations.RunPython.noop),
    ]
