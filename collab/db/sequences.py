"""Per-parent numbering (issue 1, 2, 3 ... of a project; pull request 1, 2, 3 ... of a
repository) without gaps or duplicates under concurrency."""

from typing import Any

from django.db import connection
from django.db.models import Model


def sequence_next(model, *, parent_field: str, parent_id: int, count: int = 1) -> int:
    """The next number of ``parent_id``'s counter row in ``model`` (its ``last_number``);
    with ``count``, the last of ``count`` consecutive numbers taken at once.

    ``UPDATE ... RETURNING`` inside the caller's transaction: concurrent callers queue on the
    row and each gets the next number; a rollback gives it back. The row is made on first use
    (``ignore_conflicts``, so two first uses at once make one row).
    """
    return _advance(model, parent_field, parent_id, count, id_of=None)[0]


def sequence_next_with_id(
    model, *, parent_field: str, parent_id: int, id_of: type[Model]
) -> tuple[int, int | None]:
    """``sequence_next`` and, on PostgreSQL, the next primary key of ``id_of``'s table, drawn
    in the same statement: the caller can write the new row and every row that refers to it
    without waiting for the insert to say its key. Elsewhere the key is None (the insert
    gives it)."""
    if connection.vendor != "postgresql":
        return sequence_next(model, parent_field=parent_field, parent_id=parent_id), None
    number, key = _advance(model, parent_field, parent_id, 1, id_of=id_of)
    return number, key


def _advance(
    model, parent_field: str, parent_id: int, count: int, *, id_of: type[Model] | None
) -> tuple[int, int | None]:
    field = model._meta.get_field(parent_field)
    returning = "last_number"
    params: list[Any] = [count, parent_id]
    if id_of is not None:
        # The table's own sequence (serial or identity), named from the catalogue in the
        # statement itself.
        returning += ", nextval(pg_get_serial_sequence(%s, %s))"
        params += [id_of._meta.db_table, id_of._meta.pk.column]
    # Table and column are the model's own, never input; the values go as parameters.
    sql = (
        f"UPDATE {model._meta.db_table} SET last_number = last_number + %s "  # noqa: S608
        f"WHERE {field.column} = %s RETURNING {returning}"
    )
    for _ in range(2):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            row = cursor.fetchone()
        if row is not None:
            return row[0], (row[1] if id_of is not None else None)
        model.objects.bulk_create(
            [model(**{field.attname: parent_id, "last_number": 0})], ignore_conflicts=True
        )
    raise RuntimeError(f"Could not allocate a number in {model.__name__} for {parent_id}.")


def sequence_take(model, *, parent_field: str, parent_id: int, wanted: int) -> int:
    """``wanted`` when it is above every number ``parent_id``'s counter handed out, else the
    next number (a record brought in from elsewhere keeps its number where that reuses none,
    not even a deleted record's); the counter moves to the number returned.

    The same conditional ``UPDATE ... RETURNING`` as ``sequence_next``, so it queues with
    concurrent callers on the row and a rollback gives the number back.
    """
    field = model._meta.get_field(parent_field)
    # Table and column are the model's own, never input; the values go as parameters.
    sql = (
        f"UPDATE {model._meta.db_table} SET last_number = CASE "  # noqa: S608
        "WHEN last_number < %s THEN %s ELSE last_number + 1 END "
        f"WHERE {field.column} = %s RETURNING last_number"
    )
    params: list[Any] = [wanted, wanted, parent_id]
    for _ in range(2):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            row = cursor.fetchone()
        if row is not None:
            return int(row[0])
        model.objects.bulk_create(
            [model(**{field.attname: parent_id, "last_number": 0})], ignore_conflicts=True
        )
    raise RuntimeError(f"Could not allocate a number in {model.__name__} for {parent_id}.")
