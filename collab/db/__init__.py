"""The database plumbing every app uses, and nothing else: full-text search documents
(``fulltext``), writes sent together (``writebatch``), per-parent numbers (``sequences``),
queries and unions compiled once (``prepared``, ``unions``), the primary/replica router
(``routers``), foreign keys that delete in the database (``cascades``) and a deadline on each
statement (``querycost``).

It names no app and sits below ``collab.api``: HTTP knows the database, not the other way round.
"""
