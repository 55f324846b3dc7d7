"""Per-parent numbering (issue 1, 2, 3 ... of a project; pull request 1, 2, 3 ... of a
repository) without gaps or duplicates under concurrency."""

from django.db import connection


def sequence_next(model, *, parent_field: str, parent_id: int, count: int = 1) -> int:
    """The next number of ``parent_id``'s counter row in ``model`` (its ``last_number``);
    with ``count``, the last of ``count`` consecutive numbers taken at once.

    ``UPDATE ... RETURNING`` inside the caller's transaction: concurrent callers queue on the
    row and each gets the next number; a rollback gives it back. The row is made on first use
    (``ignore_conflicts``, so two first uses at once make one row).
    """
    field = model._meta.get_field(parent_field)
    # Table and column are the model's own, never input; the value goes as a parameter.
    sql = (
        f"UPDATE {model._meta.db_table} SET last_number = last_number + %s "  # noqa: S608
        f"WHERE {field.column} = %s RETURNING last_number"
    )
    for _ in range(2):
        with connection.cursor() as cursor:
            cursor.execute(sql, [count, parent_id])
            row = cursor.fetchone()
        if row is not None:
            return row[0]
        model.objects.bulk_create(
            [model(**{field.attname: parent_id, "last_number": 0})], ignore_conflicts=True
        )
    raise RuntimeError(f"Could not allocate a number in {model.__name__} for {parent_id}.")
