"""The planner's parameters for one statement, where the code knows its query better than the
statistics do."""

from contextlib import contextmanager

from django.db import connections


@contextmanager
def planned(using: str, **parameters: bool | str):
    """On PostgreSQL, the planner's parameters in ``parameters`` (``enable_seqscan=False``: no
    sequential scan; ``work_mem="16MB"``) set for each statement run inside, where the query
    is known better than its statistics tell. Each statement carries them in its own query
    string (``SET LOCAL`` before it, back to the default after it: one round trip, and
    nothing left to the transaction or to the pooled connection). Elsewhere, nothing. The
    names and values are the code's own, never a request's."""
    connection = connections[using]
    if connection.vendor != "postgresql" or not parameters:
        yield
        return

    def shown(value: bool | str) -> str:
        if isinstance(value, bool):
            return "on" if value else "off"
        return "'" + value.replace("'", "''") + "'"

    before = "; ".join(f"SET LOCAL {name} = {shown(value)}" for name, value in parameters.items())
    after = "; ".join(f"SET LOCAL {name} TO DEFAULT" for name in parameters)

    def wrapped(execute, sql, params, many, context):
        if many:
            return execute(sql, params, many, context)
        result = execute(f"{before}; {sql}; {after}", params, many, context)
        cursor = context["cursor"].cursor
        for _name in parameters:
            cursor.nextset()  # past each SET's result, to the statement's
        return result

    with connection.execute_wrapper(wrapped):
        yield
