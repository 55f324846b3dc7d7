"""Counters of issues per project, status and value of one other field: the exact totals of
the filtered lists, without counting rows.

``IssueFacetCount`` holds, for each project and status, how many issues have each type, each
priority, each assignee (``""``: none), each label (its id), were created on each day and
last updated on each day (UTC, ``YYYY-MM-DD``), and on PostgreSQL how many hold each word
of their search document (``word``: a lexeme of ``collab.db.fulltext``'s document, up to
``WORD_MAX`` characters), which answers a search for one word, and each pair of words side by
side in it (``pair``: the two lexemes, a space between them, up to ``WORD_MAX`` characters in
all), which answers a phrase of two words. A longer word is counted by its first ``WORD_MAX``
characters (``head``): with the words, it tells a prefix's search which words begin with the
prefix. Triggers on the issue table
and on its label links keep them, in the statement that changes the rows: every write path
(the services, bulk requests, the admin, label renames and deletes, seeding) keeps them exact,
at no extra query.

A change is a new row, never an update: the triggers append what a statement added and took
away (``+1``/``-1`` per value, added up per statement on PostgreSQL, whose statement-level
triggers read the changed rows from their transition tables; per row on SQLite). Writers thus
never wait on each other for a counter, nor deadlock over two. A count is the sum of a key's
rows; ``compact`` (every minute, from beat) folds the keys written since it last ran into one
row each (marked ``folded``), one statement per project, so a sum reads a handful of rows
however many issues there are, and a fold costs what was written, not what is kept.

``rebuild`` recounts a project's counters from its rows (after a repair, or a migration).
"""

from functools import lru_cache

from django.db import connection as default_connection
from django.db import connections, transaction

from collab.db import fulltext

TABLE = "issues_issuefacetcount"
ISSUES = "issues_issue"
LINKS = "issues_issue_labels"
FACETS = ("type", "priority", "assignee", "label", "created", "updated", "word", "pair", "head")
# The longest word counted (the counters' value column); a longer one is counted in the rows,
# and by its head (its first WORD_MAX characters).
WORD_MAX = 64
# A day of a timestamp column, as the counters name it.
_DAY = {
    "postgresql": "to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
    "sqlite": "substr({column}, 1, 10)",
}
_TEXT = {"postgresql": "({value})::text", "sqlite": "CAST({value} AS TEXT)"}
_TRUE = {"postgresql": "true", "sqlite": "1"}


def _issue_facets(vendor: str, row: str) -> list[tuple[str, str]]:
    """(facet, value SQL) of an issue row named ``row``, labels aside."""
    day, text = _DAY[vendor], _TEXT[vendor]
    return [
        ("type", f"{row}.type"),
        ("priority", f"{row}.priority"),
        ("assignee", f"COALESCE({text.format(value=f'{row}.assignee_id')}, '')"),
        ("created", day.format(column=f"{row}.created_at")),
        ("updated", day.format(column=f"{row}.updated_at")),
    ]


def _select(row: str, facet: str, value: str, delta: str, source: str = "") -> str:
    return (
        f"SELECT {row}.project_id AS project_id, {row}.status AS status, '{facet}' AS facet, "
        f"{value} AS value, {delta} AS delta{' FROM ' + source if source else ''}"
    )


def _issue_changes(vendor: str, row: str, delta: int, source: str = "") -> list[str]:
    """(project_id, status, facet, value, delta) of each issue of ``row``, labels aside."""
    return [
        _select(row, facet, value, str(delta), source or "")
        for facet, value in _issue_facets(vendor, row)
    ]


def _link_changes(vendor: str, issue: str, link: str, delta: int, source: str) -> str:
    """(project_id, status, 'label', label id, delta) of each link of ``source``."""
    text = _TEXT[vendor].format(value=f"{link}.label_id")
    return _select(issue, "label", text, str(delta), source)


def _word_changes(row: str, delta: int, source: str, where: str = "true") -> str:
    """PostgreSQL: (project_id, status, 'word', lexeme, delta) of each word of each issue of
    ``source`` (``where`` it holds), once per issue however often it holds it (as a search
    for it counts)."""
    words = (
        f"{source} CROSS JOIN LATERAL unnest(tsvector_to_array({row}.{fulltext.COLUMN})) "
        f"AS w(lexeme) WHERE {where} AND char_length(w.lexeme) <= {WORD_MAX}"
    )
    return _select(row, "word", "w.lexeme", str(delta), words)


def _head_changes(row: str, delta: int, source: str, where: str = "true") -> str:
    """PostgreSQL: (project_id, status, 'head', its first ``WORD_MAX`` characters, delta) of
    each word longer than ``WORD_MAX`` of each issue of ``source`` (``where`` it holds), once
    per issue and head: with the counted words, every word a prefix of up to ``WORD_MAX``
    characters can find (``issues.selectors.issue_search_total``)."""
    heads = (
        f"{source} CROSS JOIN LATERAL (SELECT DISTINCT left(u.lexeme, {WORD_MAX}) AS lexeme "
        f"FROM unnest(tsvector_to_array({row}.{fulltext.COLUMN})) AS u(lexeme) "
        f"WHERE char_length(u.lexeme) > {WORD_MAX}) AS w WHERE {where}"
    )
    return _select(row, "head", "w.lexeme", str(delta), heads)


# A title and text of fewer characters than this hold fewer words than PostgreSQL's last
# position in a document (16,383: a word takes two characters at least, with the space after
# it), so that each position holds one word and the next word in position order is the one
# that follows it. A longer document may hold several at the last position: its pairs are
# found by joining each position to the next (exact for any document, and three times the
# cost of the other way: 32 us an issue, against 17).
PAIR_ORDERED_CHARS = 32_000


def _pair_changes(row: str, delta: int, source: str, where: str = "true") -> list[str]:
    """PostgreSQL: (project_id, status, 'pair', "lexeme lexeme", delta) of each pair of words
    side by side in the search document of each issue of ``source`` (``where`` it holds): a
    word at a position and one at the next (the stop words between keep their places), as a
    phrase of the two matches them, once per issue however often it holds them."""
    places = f"unnest({row}.{fulltext.COLUMN}) AS u CROSS JOIN unnest(u.positions) AS p(at)"
    followed = (
        "(SELECT u.lexeme, p.at, lead(u.lexeme) OVER w AS next, lead(p.at) OVER w AS next_at "
        f"FROM {places} WINDOW w AS (ORDER BY p.at)) AS x"
    )
    ordered = (
        f"SELECT x.lexeme || ' ' || x.next AS lexeme FROM {followed} WHERE x.next_at = x.at + 1"
    )
    positioned = f"(SELECT u.lexeme, p.at FROM {places})"
    joined = (
        f"SELECT a.lexeme || ' ' || b.lexeme AS lexeme FROM {positioned} AS a "
        f"JOIN {positioned} AS b ON b.at = a.at + 1"
    )
    length = f"char_length({row}.title) + char_length({row}.description)"
    return [
        _select(
            row,
            "pair",
            "w.lexeme",
            str(delta),
            f"{source} CROSS JOIN LATERAL (SELECT DISTINCT lexeme FROM ({pairs}) AS d) AS w "
            f"WHERE {where} AND {length} {compared} {PAIR_ORDERED_CHARS} "
            f"AND char_length(w.lexeme) <= {WORD_MAX}",
        )
        for pairs, compared in ((ordered, "<"), (joined, ">="))
    ]


def _text_changes(row: str, delta: int, source: str, where: str = "true") -> list[str]:
    """PostgreSQL: the word, head and pair counters' changes of each issue of ``source``."""
    return [
        _word_changes(row, delta, source, where),
        _head_changes(row, delta, source, where),
        *_pair_changes(row, delta, source, where),
    ]


# The changes of a statement (or row), added up per counter and appended.
_APPEND = f"""
INSERT INTO {TABLE} (project_id, status, facet, value, count)
SELECT project_id, status, facet, value, SUM(delta) FROM ({{changes}}) AS changes
GROUP BY project_id, status, facet, value HAVING SUM(delta) <> 0
"""


def _postgresql() -> list[str]:
    pg = "postgresql"
    inserted = _issue_changes(pg, "n", 1, "new_rows n")
    deleted = _issue_changes(pg, "o", -1, "old_rows o")
    # A changed status moves the issue's labels along (the links as they are now).
    moved = "old_rows o JOIN new_rows n ON n.id = o.id AND n.status <> o.status"
    relabelled = [
        _link_changes(pg, "o", "l", -1, f"{moved} JOIN {LINKS} l ON l.issue_id = o.id"),
        _link_changes(pg, "n", "l", 1, f"{moved} JOIN {LINKS} l ON l.issue_id = n.id"),
    ]
    # Its words move only when its status, project or text does: most updates touch none.
    document = fulltext.COLUMN
    rewritten = (
        f"old_rows o JOIN new_rows n ON n.id = o.id AND (n.status, n.project_id, n.{document}) "
        f"IS DISTINCT FROM (o.status, o.project_id, o.{document})"
    )
    reworded = [*_text_changes("o", -1, rewritten), *_text_changes("n", 1, rewritten)]
    functions = {
        "issues_facets_insert": [*inserted, *_text_changes("n", 1, "new_rows n")],
        "issues_facets_update": deleted + inserted + relabelled + reworded,
        "issues_facets_delete": [*deleted, *_text_changes("o", -1, "old_rows o")],
        "issues_facets_link_insert": [
            _link_changes(pg, "i", "l", 1, f"new_links l JOIN {ISSUES} i ON i.id = l.issue_id")
        ],
        "issues_facets_link_delete": [
            _link_changes(pg, "i", "l", -1, f"old_links l JOIN {ISSUES} i ON i.id = l.issue_id")
        ],
    }
    statements = [
        f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN {_APPEND.format(changes=' UNION ALL '.join(selects))}; RETURN NULL; END $$"
        for name, selects in functions.items()
    ]
    for name, table, event, referencing in _PG_TRIGGERS:
        statements.append(f"DROP TRIGGER IF EXISTS {name} ON {table}")
        statements.append(
            f"CREATE TRIGGER {name} AFTER {event} ON {table} REFERENCING {referencing} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {name}()"
        )
    return statements


_PG_TRIGGERS = [
    ("issues_facets_insert", ISSUES, "INSERT", "NEW TABLE AS new_rows"),
    ("issues_facets_update", ISSUES, "UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
    ("issues_facets_delete", ISSUES, "DELETE", "OLD TABLE AS old_rows"),
    ("issues_facets_link_insert", LINKS, "INSERT", "NEW TABLE AS new_links"),
    ("issues_facets_link_delete", LINKS, "DELETE", "OLD TABLE AS old_links"),
]


def _sqlite_apply(selects: list[str], where: str = "true") -> str:
    changes = f"SELECT * FROM ({' UNION ALL '.join(selects)}) WHERE {where}"
    return _APPEND.format(changes=changes).strip() + ";"


def _sqlite() -> list[str]:
    sq = "sqlite"
    moved = "old.status <> new.status"
    bodies = {
        ("issues_facets_insert", ISSUES, "INSERT"): _sqlite_apply(_issue_changes(sq, "new", 1)),
        ("issues_facets_update", ISSUES, "UPDATE"): _sqlite_apply(
            _issue_changes(sq, "old", -1) + _issue_changes(sq, "new", 1)
        )
        + _sqlite_apply(
            [
                _link_changes(sq, "old", "l", -1, f"{LINKS} l WHERE l.issue_id = old.id"),
                _link_changes(sq, "new", "l", 1, f"{LINKS} l WHERE l.issue_id = new.id"),
            ],
            where=moved,
        ),
        ("issues_facets_delete", ISSUES, "DELETE"): _sqlite_apply(_issue_changes(sq, "old", -1)),
        ("issues_facets_link_insert", LINKS, "INSERT"): _sqlite_apply(
            [_link_changes(sq, "i", "new", 1, f"{ISSUES} i WHERE i.id = new.issue_id")]
        ),
        ("issues_facets_link_delete", LINKS, "DELETE"): _sqlite_apply(
            [_link_changes(sq, "i", "old", -1, f"{ISSUES} i WHERE i.id = old.issue_id")]
        ),
    }
    statements = []
    for (name, table, event), body in bodies.items():
        statements.append(f"DROP TRIGGER IF EXISTS {name}")
        statements.append(f"CREATE TRIGGER {name} AFTER {event} ON {table} BEGIN {body} END")
    return statements


def trigger_statements(vendor: str) -> list[str]:
    """The statements that (re)make the triggers; none on another database."""
    makers = {"postgresql": _postgresql, "sqlite": _sqlite}
    return makers[vendor]() if vendor in makers else []


def drop_statements(vendor: str) -> list[str]:
    if vendor == "postgresql":
        return [f"DROP TRIGGER IF EXISTS {name} ON {table}" for name, table, *_ in _PG_TRIGGERS] + [
            f"DROP FUNCTION IF EXISTS {name}()" for name, *_ in _PG_TRIGGERS
        ]
    if vendor == "sqlite":
        return [f"DROP TRIGGER IF EXISTS {name}" for name, *_ in _PG_TRIGGERS]
    return []


def rebuild(project_id: int, *, using: str | None = None) -> None:
    """Recount the project's counters from its rows (in the caller's transaction)."""
    connection = connections[using] if using else default_connection
    vendor = connection.vendor
    selects = _issue_changes(vendor, "i", 1, f"{ISSUES} i WHERE i.project_id = %s")
    selects.append(
        _link_changes(
            vendor,
            "i",
            "l",
            1,
            f"{ISSUES} i JOIN {LINKS} l ON l.issue_id = i.id WHERE i.project_id = %s",
        )
    )
    if vendor == "postgresql":
        selects.extend(_text_changes("i", 1, f"{ISSUES} i", where="i.project_id = %s"))
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {TABLE} WHERE project_id = %s", [project_id])
        _counted(cursor, vendor, selects, [project_id] * len(selects))


def _counted(cursor, vendor: str, selects: list[str], params: list) -> None:
    """The changes of ``selects`` added up per counter and written as folded rows."""
    cursor.execute(
        f"INSERT INTO {TABLE} (project_id, status, facet, value, count, folded) "
        f"SELECT project_id, status, facet, value, SUM(delta), {_TRUE[vendor]} "
        f"FROM ({' UNION ALL '.join(selects)}) AS changes "
        "GROUP BY project_id, status, facet, value",
        params,
    )


def text_recount(connection, facet: str) -> None:
    """PostgreSQL: the counters of ``facet`` (``pair`` or ``head``) of every project recounted
    from the rows (after the triggers began keeping them, in the same transaction: their lock
    on the issues holds writes off until it commits, so none is counted twice or missed)."""
    if connection.vendor != "postgresql":
        return
    source = f"{ISSUES} i"
    selects = {
        "head": lambda: [_head_changes("i", 1, source)],
        "pair": lambda: _pair_changes("i", 1, source),
    }[facet]()
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {TABLE} WHERE facet = %s", [facet])
        _counted(cursor, connection.vendor, selects, [])


def project_deleted(sender, instance, using, **kwargs) -> None:
    """``post_delete`` of a project, in its deletion's transaction: its counters go too (the
    triggers wrote to them as its issues were deleted)."""
    with connections[using].cursor() as cursor:
        cursor.execute(f"DELETE FROM {TABLE} WHERE project_id = %s", [instance.pk])


def _triggers_present(connection) -> set[str]:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
        else:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        return {row[0] for row in cursor.fetchall()}


def triggers_create(connection) -> None:
    """(Re)make the triggers, counting nothing."""
    with connection.cursor() as cursor:
        for statement in trigger_statements(connection.vendor):
            cursor.execute(statement)


def triggers_drop(connection) -> None:
    with connection.cursor() as cursor:
        for statement in drop_statements(connection.vendor):
            cursor.execute(statement)


def triggers_install(connection) -> None:
    """(Re)make the triggers and recount every project's counters."""
    triggers_create(connection)
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT project_id FROM issues_issue")
        project_ids = [row[0] for row in cursor.fetchall()]
        cursor.execute(f"DELETE FROM {TABLE}")
    for project_id in project_ids:
        rebuild(project_id, using=connection.alias)


def triggers_ensure(sender, using="default", **kwargs) -> None:
    """``post_migrate``: the triggers back where a migration dropped them, counters recounted
    then (nothing to do when they are all there)."""
    connection = connections[using]
    if connection.vendor not in ("postgresql", "sqlite"):
        return
    tables = set(connection.introspection.table_names())
    if not {TABLE, ISSUES, LINKS} <= tables:
        return  # migrated backwards past the counters
    if {name for name, *_ in _PG_TRIGGERS} <= _triggers_present(connection):
        return
    triggers_install(connection)


def _unfolded(cursor) -> list[int]:
    """Projects with counters written since the last fold."""
    cursor.execute(f"SELECT DISTINCT project_id FROM {TABLE} WHERE NOT folded")
    return [row[0] for row in cursor.fetchall()]


# A project's keys written since the last fold: their rows, deleted and returned.
_FOLDED_KEYS = f"""
DELETE FROM {TABLE} WHERE project_id = %s AND (status, facet, value) IN (
    SELECT status, facet, value FROM {TABLE} WHERE project_id = %s AND NOT folded
)
RETURNING status, facet, value, count
"""
_FOLD = f"""
WITH gone AS ({_FOLDED_KEYS})
INSERT INTO {TABLE} (project_id, status, facet, value, count, folded)
SELECT %s, status, facet, value, SUM(count), true FROM gone
GROUP BY status, facet, value HAVING SUM(count) <> 0
"""


def compact(*, using: str = "default") -> int:
    """Fold each key written since the last fold into one row (dropping the keys at zero);
    how many projects had any. Exact under concurrent writes: on PostgreSQL one statement
    deletes the rows it sums; on SQLite the transaction holds the database's one write lock
    throughout."""
    connection = connections[using]
    with transaction.atomic(using=using), connection.cursor() as cursor:
        if connection.vendor == "sqlite":  # the write lock first: no append in between
            cursor.execute(f"DELETE FROM {TABLE} WHERE count = 0")
        else:
            # Rows are appended faster than statistics follow: a planner that thinks a project
            # has a handful of rows joins its keys by nested loop, in time squared (12 s for
            # 20,000 rows, against 0.1 s by hash).
            cursor.execute("SET LOCAL enable_nestloop = off")
        project_ids = _unfolded(cursor)
        for project_id in project_ids:
            if connection.vendor == "postgresql":
                cursor.execute(_FOLD, [project_id] * 3)
                continue
            cursor.execute(_FOLDED_KEYS, [project_id] * 2)
            sums: dict[tuple, int] = {}
            for *key, count in cursor.fetchall():
                sums[tuple(key)] = sums.get(tuple(key), 0) + count
            cursor.executemany(
                f"INSERT INTO {TABLE} (project_id, status, facet, value, count, folded) "
                "VALUES (%s, %s, %s, %s, %s, 1)",
                [(project_id, *key, count) for key, count in sums.items() if count],
            )
    return len(project_ids)


def query_counter(text: str, *, using: str = "default") -> tuple[str, str] | None:
    """The counter (facet and value) that holds the total of the search ``text`` when it is a
    single term, not an exclusion, that ``term_counter`` answers; None otherwise."""
    query = fulltext.parse(text)
    if len(query.terms) != 1 or query.terms[0].excluded:
        return None
    return term_counter(query.terms[0], using=using)


def term_counter(term: fulltext.Term, *, using: str = "default") -> tuple[str, str] | None:
    """The counter (facet and value) of the issues that ``term`` (a term of a search, taken
    as required) matches, on PostgreSQL: a plain word's (``word``), a phrase's of two words
    that stand side by side once stop words are dropped (``pair``); None for any other term
    (a prefix, a longer phrase, a stop word: the rows are counted then)."""
    if connections[using].vendor != "postgresql" or term.prefix:
        return None
    if len(term.words) == 1:
        word = _lexeme(term.words[0], using)
        return None if word is None else ("word", word)
    pair = _pair(term.words, using)
    return None if pair is None else ("pair", pair)


def lexeme(word: str, *, using: str = "default") -> str | None:
    """The lexeme of ``word`` as the search documents hold it (the database's stemmer, so
    asked once per word and process); None unless it is exactly one countable lexeme (a stop
    word has none; on another database than PostgreSQL, none either)."""
    return _lexeme(word, using) if connections[using].vendor == "postgresql" else None


@lru_cache(maxsize=4096)
def _lexeme(word: str, using: str) -> str | None:
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT tsvector_to_array(to_tsvector('{fulltext.CONFIG}', %s))", [word])
        lexemes = cursor.fetchone()[0]
    if len(lexemes) != 1 or len(lexemes[0]) > WORD_MAX:
        return None
    return lexemes[0]


@lru_cache(maxsize=4096)
def _pair(words: tuple[str, ...], using: str) -> str | None:
    """The pair counter's value for the phrase of ``words`` (as ``_pair_changes`` writes it:
    its two lexemes, a space between them), asked of the database once per phrase and
    process; None unless the phrase is two lexemes at consecutive positions (a stop word
    between them leaves a gap, which the phrase requires: ``"dark the mode"``)."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT array_agg(u.lexeme ORDER BY p.at), array_agg(p.at ORDER BY p.at) "
            f"FROM unnest(to_tsvector('{fulltext.CONFIG}', %s)) AS u "
            "CROSS JOIN unnest(u.positions) AS p(at)",
            [" ".join(words)],
        )
        lexemes, places = cursor.fetchone()
    if not lexemes or len(lexemes) != 2 or places[1] != places[0] + 1:
        return None
    pair = " ".join(lexemes)
    return pair if len(pair) <= WORD_MAX else None
