"""The end of a transactional test (``django_db(transaction=True)``), quick on PostgreSQL.

Django empties the database after each such test with ``flush``: one ``TRUNCATE`` of every
table, then ``post_migrate`` to write the content types and permissions back. ``TRUNCATE``
gives each of the ~50 tables and their indexes new files, which took 0.2 to 1 s a test, and
over 300 tests do it. After a test the tables hold a few rows: ``DELETE`` empties them in a
few milliseconds. The content types and permissions (what ``migrate`` writes, which no test
changes) stay, so ``post_migrate`` has nothing to write back.

The foreign keys are deferred to the commit (Django makes them ``DEFERRABLE INITIALLY
DEFERRED``), so the tables empty in any order. A trigger may write a row into a table already
emptied (the issue facet counters do, on an issue's delete): the tables are read again and
emptied until none holds a row.
"""

from django.db import connections, transaction
from django.test import TransactionTestCase

# Written by migrate, never by a test: kept, so post_migrate need not run after each test.
CATALOG = frozenset({"django_content_type", "auth_permission"})
PASSES = 4
_tables: dict[str, list[str]] = {}


def _tables_of(connection) -> list[str]:
    if connection.alias not in _tables:
        names = connection.introspection.django_table_names(only_existing=True, include_views=False)
        _tables[connection.alias] = sorted(set(names) - CATALOG)
    return _tables[connection.alias]


def empty_tables(alias: str) -> None:
    """Every table but the catalog emptied, in one transaction."""
    connection = connections[alias]
    quote = connection.ops.quote_name
    tables = _tables_of(connection)
    with transaction.atomic(using=alias), connection.cursor() as cursor:
        for _ in range(PASSES):
            for table in tables:
                cursor.execute(f"DELETE FROM {quote(table)}")
            probes = " UNION ALL ".join(
                f"SELECT {index} WHERE EXISTS (SELECT 1 FROM {quote(table)})"
                for index, table in enumerate(tables)
            )
            cursor.execute(probes)
            tables = [tables[index] for (index,) in cursor.fetchall()]
            if not tables:
                return
    raise RuntimeError(f"tables still hold rows after {PASSES} passes: {tables}")


_django_fixture_teardown = TransactionTestCase._fixture_teardown


def _fixture_teardown(self: TransactionTestCase) -> None:
    aliases = self._databases_names(include_mirrors=False)
    quick = (
        self.available_apps is None
        and not self.serialized_rollback
        and all(connections[alias].vendor == "postgresql" for alias in aliases)
    )
    if not quick:
        _django_fixture_teardown(self)
        return
    for alias in aliases:
        empty_tables(alias)


def install() -> None:
    TransactionTestCase._fixture_teardown = _fixture_teardown  # type: ignore[method-assign]


def uninstall() -> None:
    TransactionTestCase._fixture_teardown = _django_fixture_teardown  # type: ignore[method-assign]
