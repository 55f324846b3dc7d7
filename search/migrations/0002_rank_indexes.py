"""PostgreSQL with the RUM extension and SEARCH_RANK_INDEX on: a rank index on each searchable
table's search document, built concurrently (writes go on meanwhile), so that a page of "best
match first" is read in rank order from it (collab.db.fulltext). With the setting off (the
default), nothing is built: the indexes would cost every write and serve no read. Where the
extension's package is missing, or the migrating user may not install it, nothing is built
either: ``manage.py search_index`` builds them later, and search ranks as before meanwhile."""

import logging

from django.conf import settings
from django.db import migrations

from collab.db import fulltext
from search.schema import TABLES

logger = logging.getLogger("collab.search")


def rank_indexes_make(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql" or not settings.SEARCH_RANK_INDEX:
        return
    for table in TABLES:
        outcome = fulltext.rank_index_make(connection, table)
        logger.info("Rank index of %s: %s", table, outcome)


def rank_indexes_drop(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    for table in TABLES:
        fulltext.rank_index_drop(connection, table)


class Migration(migrations.Migration):
    # CREATE INDEX CONCURRENTLY runs outside a transaction.
    atomic = False

    dependencies = [
        ("search", "0001_initial"),
        ("comments", "0002_search_document"),
        ("gitintegration", "0004_search_document"),
        ("issues", "0003_search_document"),
    ]

    operations = [
        migrations.RunPython(rank_indexes_make, rank_indexes_drop, elidable=True),
    ]
