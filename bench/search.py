"""What search's rank indexes (RUM, collab.db.fulltext) cost on the bench's database: the WAL
written per 1,000 issue creates with the issues' rank index and without it, and the time the
index takes to build again, concurrently, over every issue of the database (what the
migration or ``manage.py search_index`` takes on a big table). Run before the servers start:
the machine is the measurement's alone. Where the database has no rank index (the default,
``SEARCH_RANK_INDEX`` off) but RUM can be installed, the index is built for the measurement and
dropped after it, so that the rest of the run measures the database as it was. Without RUM, it
says so and measures nothing.
"""

import time

TABLE = "issues_issue"


def measure_rank_index(*, project_id: int, creates: int = 1000) -> dict:
    from django.db import connection

    from collab.db import fulltext

    if connection.vendor != "postgresql":
        return {"rank_index": False}
    kept = fulltext.rank_index_built([TABLE])
    if not kept:
        made = fulltext.rank_index_make(connection, TABLE)
        if made != "made":  # no extension, or not allowed to install it
            return {"rank_index": False, "outcome": made}
    try:
        with_index = _wal_of_creates(project_id, "with", creates) * 1000 // creates
        fulltext.rank_index_drop(connection, TABLE)
        try:
            without_index = _wal_of_creates(project_id, "without", creates) * 1000 // creates
        finally:
            began = time.perf_counter()
            outcome = fulltext.rank_index_make(connection, TABLE)
            build_seconds = round(time.perf_counter() - began, 1)
        rank_size, gin_size, rows = _sizes(connection)
    finally:
        if not kept:
            fulltext.rank_index_drop(connection, TABLE)
    return {
        "rank_index": outcome == "made",
        "present_before": kept,
        "wal_bytes_per_1000_creates_with_index": with_index,
        "wal_bytes_per_1000_creates_without_index": without_index,
        "wal_with/without": round(with_index / without_index, 2),
        "rank_index_build_seconds": build_seconds,
        "rank_index_rows": rows,
        "rank_index_mib": round(rank_size / 2**20, 1),
        "gin_index_mib": round(gin_size / 2**20, 1),
    }


def _sizes(connection) -> tuple[int, int, int]:
    """The rank index's size and the GIN index's, in bytes, and the rows of the table."""
    from collab.db import fulltext

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {TABLE}")  # noqa: S608 - a constant
        rows = cursor.fetchone()[0]
        cursor.execute(
            "SELECT pg_relation_size(%s), pg_relation_size(%s)",
            [fulltext.rank_index_name(TABLE), f"{TABLE}_search"],
        )
        rank_size, gin_size = cursor.fetchone()
    return rank_size, gin_size, rows


def _wal_of_creates(project_id: int, label: str, creates: int) -> int:
    """WAL bytes written while ``creates`` issues are created through the service, one
    transaction each, as the API makes them (their text like the seeded issues')."""
    from django.db import connection

    from accounts.models import User
    from issues.seeding import SENTENCES
    from issues.services import issue_create
    from projects.models import Project

    project = Project.objects.get(pk=project_id)
    owner = User.objects.get(pk=project.created_by_id)
    with connection.cursor() as cursor:
        cursor.execute("CHECKPOINT")  # full-page images start afresh for both runs
        cursor.execute("SELECT pg_current_wal_insert_lsn()")
        start = cursor.fetchone()[0]
    for n in range(creates):
        issue_create(
            project=project,
            actor=owner,
            title=f"WAL {label} {n}: the export dialog crashes when the name has an emoji",
            description=" ".join(SENTENCES[n % len(SENTENCES) :][:3]),
        )
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)", [start])
        return int(cursor.fetchone()[0])
