"""Foreign keys that delete (or clear) their rows in the database, as the models declare.

Django carries out ``on_delete=CASCADE`` and ``SET_NULL`` itself: it SELECTs a row's children,
deletes (or clears) them, then deletes the row, and leaves the database's constraint at NO
ACTION, checked at commit. A child committed by another transaction after the children were
read (a delivery made for a webhook being deleted, a comment on an issue being deleted) is
not among them, and the deletion fails at COMMIT on the foreign key: a 500, on PostgreSQL,
for any parent deleted while a child is written (Django 5.2 has no ``db_on_delete``).

``database_cascades_sync`` gives each such constraint the model's own action, ``ON DELETE
CASCADE`` or ``ON DELETE SET NULL``, so the database takes along, in the parent's own
DELETE, whatever children exist by then; Django's collection stays as it is and simply
finds less left to do. A child written after the parent's DELETE waits on the parent's row
and then fails its own foreign-key check: that writer answers 404 (see
``collab.api.exceptions.foreign_key_violation``).

It runs after every ``migrate`` (``post_migrate``, per app): a migration that re-creates a
constraint (Django drops and adds them when a field changes) is put right in the same run,
and a database already right costs one catalogue query per app. SQLite serialises writers
(``transaction_mode=IMMEDIATE``), so a deletion there always sees every child; its
constraints stay as Django makes them.
"""

import logging
from typing import Any

from django.db import connections, models, transaction

logger = logging.getLogger("collab.db.cascades")

# Django's on_delete -> (pg_constraint.confdeltype, the clause).
_ACTIONS: dict[Any, tuple[str, str]] = {
    models.CASCADE: ("c", "ON DELETE CASCADE"),
    models.SET_NULL: ("n", "ON DELETE SET NULL"),
}


def _wanted(model_list: list[type[models.Model]]) -> dict[tuple[str, str], tuple[str, str]]:
    """(table, column) -> (confdeltype, clause) for every constrained foreign key of these
    models (the auto-created many-to-many tables included) whose on_delete the database can
    carry out."""
    wanted = {}
    for model in model_list:
        if not model._meta.managed or model._meta.proxy:
            continue
        for field in model._meta.local_fields:
            if not field.is_relation or not field.many_to_one and not field.one_to_one:
                continue
            action = _ACTIONS.get(getattr(field.remote_field, "on_delete", None))
            if action is None or not getattr(field, "db_constraint", False):
                continue
            wanted[(model._meta.db_table, field.column)] = action
    return wanted


def database_cascades_sync(
    *, model_list: list[type[models.Model]], using: str = "default"
) -> list[str]:
    """Give the foreign keys of these models the database action their ``on_delete`` names;
    returns the constraints changed. Only on PostgreSQL; a no-op elsewhere."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return []
    wanted = _wanted(model_list)
    if not wanted:
        return []
    tables = sorted({table for table, _column in wanted})
    with connection.cursor() as cursor:
        # Single-column foreign keys of these tables (in the connection's search path), with
        # what they reference and how they are deferred.
        cursor.execute(
            "SELECT c.conname, t.relname, a.attname, c.confdeltype, r.relname, ra.attname, "
            "c.condeferrable, c.condeferred "
            "FROM pg_constraint c "
            "JOIN pg_class t ON t.oid = c.conrelid "
            "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1] "
            "JOIN pg_class r ON r.oid = c.confrelid "
            "JOIN pg_attribute ra ON ra.attrelid = c.confrelid AND ra.attnum = c.confkey[1] "
            "WHERE c.contype = 'f' AND cardinality(c.conkey) = 1 "
            "AND pg_table_is_visible(t.oid) AND t.relname = ANY(%s)",
            [tables],
        )
        found = cursor.fetchall()
    quote = connection.ops.quote_name
    changes = []
    for name, table, column, action, to_table, to_column, deferrable, deferred in found:
        want = wanted.get((table, column))
        if want is None or action == want[0]:
            continue
        timing = (
            (" DEFERRABLE INITIALLY DEFERRED" if deferred else " DEFERRABLE") if deferrable else ""
        )
        changes.append(
            (
                f"{table}.{column}",
                f"ALTER TABLE {quote(table)} DROP CONSTRAINT {quote(name)}, "
                f"ADD CONSTRAINT {quote(name)} FOREIGN KEY ({quote(column)}) "
                f"REFERENCES {quote(to_table)} ({quote(to_column)}) {want[1]}{timing}",
            )
        )
    if changes:
        # All or none: a constraint is never left dropped.
        with transaction.atomic(using=using), connection.cursor() as cursor:
            for _label, statement in changes:
                cursor.execute(statement)
        logger.info("Foreign keys now delete in the database: %s", ", ".join(c for c, _ in changes))
    return [label for label, _statement in changes]


def post_migrate_cascades(*, app_config: Any, using: str = "default", **kwargs: Any) -> None:
    """``post_migrate`` receiver: the app's foreign keys, as ``database_cascades_sync``."""
    database_cascades_sync(
        model_list=list(app_config.get_models(include_auto_created=True)), using=using
    )
