"""The ``search_hit`` view (search.models): dropped before every ``migrate`` and made again
after it, by the app's migrate signals.

A view over the searchable tables would stop the migrations that change them: SQLite rebuilds a
table to alter a column (and refuses to while a view names it), PostgreSQL refuses to retype a
column a view reads. Dropped first, no migration ever sees it.
"""

from django.db import connections

VIEW = "search_hit"
TABLES = ("issues_issue", "gitintegration_pullrequest", "comments_comment")

# The view's columns, in order, for each kind; on PostgreSQL each source adds its document.
ISSUES = """
SELECT i.id * 4 + 1 AS id, 'issue' AS type, i.id AS object_id, i.project_id, i.title,
       i.description AS body, i.id AS issue_id, NULL AS pull_request_id, i.created_at,
       i.updated_at{document_i}
FROM issues_issue i
"""
PULLS = """
SELECT p.id * 4 + 2, 'pull_request', p.id, r.project_id, p.title, p.description, NULL, p.id,
       p.created_at, p.updated_at{document_p}
FROM gitintegration_pullrequest p JOIN gitintegration_repository r ON r.id = p.repository_id
"""
COMMENTS = """
SELECT c.id * 4 + 3, 'comment', c.id, c.project_id, COALESCE(ci.title, cp.title, ''), c.body,
       c.issue_id, c.pull_request_id, c.created_at, c.updated_at{document_c}
FROM comments_comment c
LEFT JOIN issues_issue ci ON ci.id = c.issue_id
LEFT JOIN gitintegration_pullrequest cp ON cp.id = c.pull_request_id
"""


def view_sql(vendor: str) -> str:
    if vendor == "postgresql":
        documents = {f"document_{alias}": f", {alias}.search_document" for alias in ("i", "p", "c")}
        # Typed once in the first branch: the NULLs of the others follow it.
        issues = ISSUES.replace("NULL AS pull_request_id", "NULL::bigint AS pull_request_id")
        issues = issues.replace("'issue' AS type", "'issue'::varchar(16) AS type")
    else:
        documents = {f"document_{alias}": "" for alias in ("i", "p", "c")}
        issues = ISSUES
    branches = [part.format(**documents) for part in (issues, PULLS, COMMENTS)]
    return f"CREATE VIEW {VIEW} AS " + " UNION ALL ".join(branches)


def drop_view(using: str) -> None:
    with connections[using].cursor() as cursor:
        cursor.execute(f"DROP VIEW IF EXISTS {VIEW}")


def create_view(using: str) -> bool:
    """Make the view, unless a table it reads is missing (a migration rolled back); whether it
    was made."""
    connection = connections[using]
    with connection.cursor() as cursor:
        if not set(TABLES) <= set(connection.introspection.table_names(cursor)):
            return False
        cursor.execute(f"DROP VIEW IF EXISTS {VIEW}")
        cursor.execute(view_sql(connection.vendor))
    return True
