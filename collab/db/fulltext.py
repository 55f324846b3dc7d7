"""Full-text search over a table's text columns, on PostgreSQL and on SQLite with one meaning.

A searchable model names its text columns in ``search_fields`` with their weights: ``A`` for
a title, ``B`` for a text (a description, a comment's body); a word in an A field counts more.
``AddSearchDocument`` in the model's migration gives the table its search document:

- PostgreSQL: a stored generated ``tsvector`` column, ``search_document`` (the ``english``
  configuration, each field with its weight), under a GIN index. The
  database keeps it with every write: no query is added to any write.
- SQLite: an FTS5 table, ``<table>_fts`` (the ``porter`` stemmer over ``unicode61``), that
  holds no copy of the text and is kept by triggers on the table, in the writing statement.

A query is what people type into a search box (``parse``): words (``login``), ``"phrases"``,
prefixes (``auth*``) and exclusions (``-flaky``, ``-"known issue"``); every term must match.
Both databases stem English words (``fails`` finds ``failing``); PostgreSQL also drops English
stop words (``the``, ``on``), which alone match nothing there.

Expressions for querysets of a searchable model: ``Matches`` (a condition), ``Score`` (from 0
to 1, higher is better) and ``Highlight`` (a field's text with the matched words between
``MARK_START`` and ``MARK_END``; ``marked_html`` turns it into escaped HTML with ``<mark>``).
A model over several searchable tables (a union view) names them in ``search_sources``:
``{kind: (table, search_fields)}``, with its kind in ``search_kind_field``.
"""

import html
import re
import time
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any

from django.conf import settings
from django.db import connection as default_connection
from django.db import connections
from django.db.migrations.operations.base import Operation
from django.db.models import (
    BooleanField,
    Case,
    Expression,
    F,
    FloatField,
    Min,
    OuterRef,
    Q,
    Subquery,
    TextField,
    Value,
    When,
)
from django.db.models.expressions import Col, OrderBy
from django.db.models.functions import Coalesce
from django.db.models.lookups import Exact, In, Lookup
from django.db.models.sql.where import AND, WhereNode

from collab.db.planner import planned
from collab.db.prepared import Statement

CONFIG = "english"
COLUMN = "search_document"
FTS_SUFFIX = "_fts"
# PostgreSQL with the RUM extension: the index that serves a page of "best match first" in
# rank order (``RankDistance``), beside the GIN index that finds and counts the matches.
RANK_INDEX_SUFFIX = "_search_rank"
RANK_EXTENSION = "rum"
# How long a process trusts what it found out about the rank indexes (made or dropped by
# ``manage.py search_index`` while it runs).
RANK_INDEX_RECHECK_SECONDS = 60.0
TOKENIZER = "porter unicode61 remove_diacritics 2"
# Where a highlight starts and ends: control characters no text is shown with, turned into
# ``<mark>`` tags after the text around them is escaped.
MARK_START, MARK_END = "\x02", "\x03"
# PostgreSQL's headline parser reads ``<...>`` as a tag, ``/a/b`` as a path, ``a@b.c`` as an
# address, and marks no word inside them: these characters are swapped for control characters
# around it, and back before escaping.
_ANGLES = "<>/@.:&"
_ANGLES_HIDDEN = "\x04\x05\x06\x07\x08\x0e\x0f"
WEIGHTS = ("A", "B")
# FTS5's bm25 column weights for them, in the ratio of PostgreSQL's ts_rank defaults (1.0, 0.4).
_BM25_WEIGHTS = {"A": "2.5", "B": "1.0"}
MAX_TERMS = 16
SNIPPET_WORDS = 24
SNIPPET_CHARS = 200
_TERM = re.compile(r'(-?)(?:"([^"]*)"?|(\S+))')
# A word: letters and digits. Everything else separates words, in the text (both databases
# see the same words: PostgreSQL's parser would otherwise keep ``a@b.com`` or a URL whole and
# drop ``<script>`` as a tag, where FTS5 splits them) and in a query.
_WORD = re.compile(r"[^\W_]+")


# Queries ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    words: tuple[str, ...]  # one word, or a phrase's words in order
    prefix: bool = False  # the last word is a prefix (``auth*``)
    excluded: bool = False  # ``-term``: rows with it are left out
    # PostgreSQL: one word given as a lexeme of the documents, matched as it is (not stemmed
    # again: the stem of a stem can differ). Made by the code, never parsed from a query.
    lexeme: bool = False


@dataclass(frozen=True)
class Query:
    terms: tuple[Term, ...]

    @property
    def required(self) -> tuple[Term, ...]:
        return tuple(term for term in self.terms if not term.excluded)

    @property
    def excluded(self) -> tuple[Term, ...]:
        return tuple(term for term in self.terms if term.excluded)

    def __bool__(self) -> bool:
        return bool(self.terms)


def parse(text: str) -> Query:
    """The terms of a search box's text. Punctuation separates words (``log-in`` is the phrase
    ``"log in"``); a term with no word in it is dropped; past ``MAX_TERMS`` terms the rest are
    ignored."""
    terms: list[Term] = []
    for match in _TERM.finditer(text):
        minus, phrase, bare = match.groups()
        raw = phrase if phrase is not None else bare
        words = tuple(word.lower() for word in _WORD.findall(raw))
        if not words:
            continue
        prefix = phrase is None and raw.endswith("*")
        terms.append(Term(words=words, prefix=prefix, excluded=bool(minus)))
        if len(terms) == MAX_TERMS:
            break
    return Query(tuple(terms))


def _quoted_lexeme(lexeme: str) -> str:
    """A lexeme as ``to_tsquery`` reads one, as it is (quoted, its quotes and backslashes
    escaped)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _tsquery(query: Query) -> tuple[str, list[Any]]:
    """PostgreSQL: the query as one ``tsquery`` expression, with its parameters."""
    parts, params = [], []
    for term in query.terms:
        if term.lexeme:
            sql = "to_tsquery('simple', %s)"
            params.append(_quoted_lexeme(term.words[0]))
        elif term.prefix:
            *head, last = term.words
            # Only word characters are quoted: nothing in them can end the quoted lexeme.
            lexemes = [f"'{word}'" for word in head] + [f"'{last}':*"]
            sql = f"to_tsquery('{CONFIG}', %s)"
            params.append(" <-> ".join(lexemes))
        elif len(term.words) > 1:
            sql = f"phraseto_tsquery('{CONFIG}', %s)"
            params.append(" ".join(term.words))
        else:
            sql = f"plainto_tsquery('{CONFIG}', %s)"
            params.append(term.words[0])
        parts.append(f"!!{sql}" if term.excluded else sql)
    return "(" + " && ".join(parts) + ")", params


def _fts_terms(terms: tuple[Term, ...]) -> list[str]:
    """SQLite: terms as FTS5 query strings, each a quoted phrase (a prefix marked ``*``)."""
    return [f'"{" ".join(term.words)}"' + ("*" if term.prefix else "") for term in terms]


def _fts_match(query: Query) -> str:
    """SQLite: the FTS5 MATCH string of the required terms, exclusions as ``NOT``. Every word
    is quoted (only word characters in it), so nothing a user types is FTS5 syntax."""
    required = " AND ".join(_fts_terms(query.required))
    for excluded in _fts_terms(query.excluded):
        required += f" NOT {excluded}"
    return required


# Expressions --------------------------------------------------------------------------------


def _sources(model) -> dict[str, tuple[str, dict[str, str]]]:
    sources = getattr(model, "search_sources", None)
    if sources:
        return sources
    return {"": (model._meta.db_table, dict(model.search_fields))}


class _SearchExpression(Expression):
    """An expression over the base table of the query it is compiled in (its own alias there,
    so it holds in subqueries too)."""

    def __init__(self, query: Query, output_field):
        super().__init__(output_field=output_field)
        self.query = query

    def __repr__(self) -> str:  # what a cursor's fingerprint reads: the query, not the object
        return f"{self.__class__.__name__}({self.query!r})"

    def _table(self, compiler) -> str:
        return compiler.quote_name_unless_alias(compiler.query.get_initial_alias())

    def _column(self, compiler, name: str) -> str:
        return f"{self._table(compiler)}.{compiler.connection.ops.quote_name(name)}"

    def _per_source(self, compiler, build) -> tuple[str, list[Any]]:
        """SQLite: ``build(fts_table, fields, id_sql)`` for the table, or for each table of a
        union view, chosen by the row's kind."""
        model = compiler.query.model
        sources = _sources(model)
        if "" in sources:
            table, fields = sources[""]
            return build(table + FTS_SUFFIX, fields, self._column(compiler, model._meta.pk.column))
        kind = self._column(compiler, model.search_kind_field)
        object_id = self._column(compiler, model.search_object_field)
        cases, params = [], []
        for name, (table, fields) in sources.items():
            sql, more = build(table + FTS_SUFFIX, fields, object_id)
            cases.append(f"WHEN %s THEN {sql}")
            params += [name, *more]
        return f"(CASE {kind} {' '.join(cases)} END)", params

    def as_sql(self, compiler, connection):  # pragma: no cover - every vendor is named
        raise NotImplementedError(f"Full-text search is not available on {connection.vendor}.")


class Matches(_SearchExpression):
    """Rows whose document matches the query: a condition for ``filter()``."""

    conditional = True

    def __init__(self, query: Query):
        super().__init__(query, BooleanField())

    def as_postgresql(self, compiler, connection):
        sql, params = _tsquery(self.query)
        return f"{self._column(compiler, COLUMN)} @@ {sql}", params

    def as_sqlite(self, compiler, connection):
        if not self.query.required:
            # Exclusions alone: every row but those with any of them.
            match = " OR ".join(_fts_terms(self.query.excluded))
            negate = "NOT "
        else:
            match, negate = _fts_match(self.query), ""

        def build(fts, fields, id_sql):
            return f"{id_sql} {negate}IN (SELECT rowid FROM {fts} WHERE {fts} MATCH %s)", [match]

        return self._per_source(compiler, build)


class AnyLexeme(Expression):
    """PostgreSQL: rows whose document holds any of ``lexemes`` (as the documents hold them,
    not stemmed again) or a lexeme beginning with any of ``prefixes``, and not ``but_not``
    (a lexeme): a condition, read through the full-text index in the postings of those
    lexemes alone (where a prefix's own reads every lexeme's that begins with it)."""

    conditional = True
    output_field = BooleanField()

    def __init__(self, lexemes: list[str], prefixes: list[str], *, but_not: str | None = None):
        super().__init__()
        self.lexemes, self.prefixes, self.but_not = list(lexemes), list(prefixes), but_not

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.lexemes!r}, {self.prefixes!r}, {self.but_not!r})"

    def as_postgresql(self, compiler, connection):
        table = compiler.quote_name_unless_alias(compiler.query.get_initial_alias())
        found = [_quoted_lexeme(lexeme) for lexeme in self.lexemes]
        found += [_quoted_lexeme(prefix) + ":*" for prefix in self.prefixes]
        query = "(" + " | ".join(found) + ")"
        if self.but_not is not None:
            query += " & !" + _quoted_lexeme(self.but_not)
        return f"{table}.{connection.ops.quote_name(COLUMN)} @@ to_tsquery('simple', %s)", [query]


class Rechecked(Matches):
    """``Matches``, checked row by row on rows found otherwise: on PostgreSQL a condition no
    index serves (``IS TRUE``), so that the planner does not AND the rows found by their keys
    with every posting of a word read from the full-text index."""

    def as_postgresql(self, compiler, connection):
        sql, params = super().as_postgresql(compiler, connection)
        return f"({sql}) IS TRUE", params


def _score_sql(query: Query, document: str) -> tuple[str, list[Any]]:
    """PostgreSQL: the SQL (and its parameters) of ``Score`` for the search document
    ``document`` (a column's SQL)."""
    # The required terms alone: the exclusions leave rows out, they do not rank the rest
    # (ts_rank gives every row of ``a & !b`` the same 1e-20).
    sql, params = _tsquery(Query(query.required) if query.required else query)
    # Normalisation 32: rank / (rank + 1), into [0, 1).
    return f"ts_rank({document}, {sql}, 32)::float8", params


class Score(_SearchExpression):
    """How well a matching row matches, from 0 to 1 (higher is better; a title's words weigh
    more than a description's). Only meaningful on rows ``Matches`` kept."""

    def __init__(self, query: Query):
        super().__init__(query, FloatField())

    def as_postgresql(self, compiler, connection):
        return _score_sql(self.query, self._column(compiler, COLUMN))

    def as_sqlite(self, compiler, connection):
        if not self.query.required:
            return "0.0", []
        match = _fts_match(self.query)

        def build(fts, fields, id_sql):
            weights = ", ".join(_BM25_WEIGHTS[weight] for weight in fields.values())
            # bm25 is negative, lower is better: turned into s / (s + 1) as on PostgreSQL.
            best = f"(-bm25({fts}, {weights}))"
            # Every match scored in one pass of the index, looked up by rowid: ``LIMIT -1``
            # keeps SQLite from folding the inner query into the outer one, which would run
            # the MATCH again for each row (2-3 ms a row for a prefix such as ``a*``: 11 s
            # for 5,000 issues, against 10 ms for the one pass).
            sql = (
                f"(SELECT score FROM (SELECT rowid AS hit, {best} / ({best} + 1.0) AS score "
                f"FROM {fts} WHERE {fts} MATCH %s LIMIT -1) WHERE hit = {id_sql})"
            )
            return sql, [match]

        sql, params = self._per_source(compiler, build)
        return f"COALESCE({sql}, 0.0)", params


class RankDistance(_SearchExpression):
    """PostgreSQL with the rank index: how far a matching row is from the query, lower is
    better (RUM's ``<=>``: the inverse of its cover-density score, ``RankScore``). Ordered
    by it, a page is read from the index in that order: no match outside the page is
    ranked, and no row read from the table."""

    # Its ties come in the index's order, which no keyset condition restates: a list ordered
    # by it alone is paged, by number and by cursor, by offset (collab.api.pagination).
    walked_by_offset = True

    def __init__(self, query: Query):
        super().__init__(query, FloatField())

    def as_postgresql(self, compiler, connection):
        sql, params = _tsquery(self.query)
        return f"({self._column(compiler, COLUMN)} <=> {sql})", params


class RankScore(_SearchExpression):
    """``Score`` where the rank indexes order the rows: RUM's score, from 0 to 1, in the
    order ``RankDistance`` gives (a title's words weigh more, and so do the query's words
    close together)."""

    def __init__(self, query: Query):
        super().__init__(query, FloatField())

    def as_postgresql(self, compiler, connection):
        sql, params = _tsquery(self.query)
        return f"rum_ts_score({self._column(compiler, COLUMN)}, {sql}, 32)::float8", params


class Highlight(_SearchExpression):
    """The text of ``field`` with the query's words marked. ``snippet``: a text longer than
    ``SNIPPET_CHARS`` is cut to its best passages (about ``SNIPPET_WORDS`` words, fragments
    joined with " … "); a shorter one is shown whole."""

    def __init__(self, query: Query, field: str, *, snippet: bool = False):
        super().__init__(query, TextField())
        self.text_field, self.snippet = field, snippet

    def _text(self, compiler) -> str:
        return f"COALESCE({self._column(compiler, self.text_field)}, '')"

    def _whole_or_passages(self, text: str, whole: str, passages: str) -> str:
        if not self.snippet:
            return whole
        return f"(CASE WHEN LENGTH({text}) <= {SNIPPET_CHARS} THEN {whole} ELSE {passages} END)"

    def as_postgresql(self, compiler, connection):
        text = self._text(compiler)
        if not self.query.required:
            return text, []
        sql, params = _tsquery(Query(self.query.required))
        marks = f"StartSel={MARK_START}, StopSel={MARK_END}, "
        passages = (
            f"MaxWords={SNIPPET_WORDS}, MinWords={SNIPPET_WORDS // 2}, MaxFragments=2, "
            'FragmentDelimiter=" … "'
        )
        headline = f"ts_headline('{CONFIG}', translate({text}, %s, %s), {sql}, %s)"
        hidden = [_ANGLES, _ANGLES_HIDDEN, *params]
        if not self.snippet:
            return headline, [*hidden, marks + "HighlightAll=true"]
        return (
            self._whole_or_passages(text, headline, headline),
            [*hidden, marks + "HighlightAll=true", *hidden, marks + passages],
        )

    def as_sqlite(self, compiler, connection):
        text = self._text(compiler)
        if not self.query.required:
            return text, []
        match = _fts_match(self.query)
        field = self.text_field

        def build(fts, fields, id_sql):
            names = list(fields)
            index = names.index(field) if field in names else len(names) - 1
            whole = f"highlight({fts}, {index}, '{MARK_START}', '{MARK_END}')"
            passages = (
                f"snippet({fts}, {index}, '{MARK_START}', '{MARK_END}', ' … ', {SNIPPET_WORDS})"
            )
            marked = self._whole_or_passages(text, whole, passages)
            sql = f"(SELECT {marked} FROM {fts} WHERE {fts} MATCH %s AND rowid = {id_sql})"
            return sql, [match]

        sql, params = self._per_source(compiler, build)
        return f"COALESCE({sql}, {text})", params


def marked_after_the_cut(alias: str) -> bool:
    """Whether a page's query may carry a ``Highlight`` for its rows: PostgreSQL puts off an
    output column as costly as ``ts_headline`` until after the sort and the LIMIT, so it marks
    the page's rows alone; SQLite would mark every match before the page is cut (a second
    per row for ``a*`` over 5,000 issues), so its marks are read for the page afterwards."""
    return connections[alias].vendor == "postgresql"


class AmongIds(Expression):
    """``field`` is one of the ids ``subquery`` gives: a condition. On PostgreSQL the ids are
    read once into an array (``= ANY(ARRAY(...))``): an ``IN`` would be planned as a join,
    which loses the order the rank index reads the rows in."""

    conditional = True
    output_field = BooleanField()

    def __init__(self, field: str, subquery) -> None:
        super().__init__()
        self.ids_of, self.subquery = F(field), Subquery(subquery)

    def get_source_expressions(self):
        return [self.ids_of, self.subquery]

    def set_source_expressions(self, exprs):
        self.ids_of, self.subquery = exprs

    def as_sql(self, compiler, connection):
        field_sql, field_params = compiler.compile(self.ids_of)
        sub_sql, sub_params = compiler.compile(self.subquery)
        return f"{field_sql} IN {sub_sql}", [*field_params, *sub_params]

    def as_postgresql(self, compiler, connection):
        field_sql, field_params = compiler.compile(self.ids_of)
        sub_sql, sub_params = compiler.compile(self.subquery)
        return f"{field_sql} = ANY(ARRAY{sub_sql})", [*field_params, *sub_params]


# Memory for the count's bitmap of matches: with PostgreSQL's default (4 MB), a prefix found
# in 170,000 issues made it lossy (whole pages, every row of them read again: 510,000 for
# none, 330 ms); with this it stays exact (70 ms to 100 ms, the index alone).
COUNT_WORK_MEM = "16MB"


def count_by_index(queryset) -> int:
    """``queryset.count()``, on PostgreSQL read through the full-text index whatever the
    planner estimates: for the counts whose query is known to match few rows although its
    terms are common (``bill:* & !bill``: the issues holding another word that begins with
    "bill"), which it estimates term by term and would answer by reading every row (a
    sequential scan of a million issues, 170 ms, for none)."""
    with planned(queryset.db, enable_seqscan=False, work_mem=COUNT_WORK_MEM):
        return queryset.count()


def count(queryset) -> int:
    """``queryset.count()``; for rows ordered best first by ``CandidateScore``, its ``count``,
    which finds the candidates in the same statement."""
    terms = queryset.query.order_by
    expression = getattr(terms[0], "expression", None) if terms else None
    if isinstance(expression, CandidateScore):
        return expression.count(queryset)
    return queryset.count()


def search(queryset, text: str):
    """``queryset`` narrowed to the rows matching ``text`` (none when it holds no word)."""
    query = parse(text)
    if not query:  # nothing a word could match: punctuation alone
        return queryset.none()
    return queryset.filter(Matches(query))


# The window "best first" looks for its candidates in first, in rows of the scope per
# candidate (CandidateScore._candidates): at 30, a query matching 3.3% of the rows finds its
# candidates in it. (At 20, a word in exactly 5% of the rows, as the benchmark seeds them,
# was found 498 times in the newest 10,000 rows: one seeding away from the slower path.) The
# walk stops at the N-th match: a wider window costs only where too few match.
WINDOW_PER_CANDIDATE = 30
# The most projects whose windows are merged (a branch of the window's union each); past
# that, the planner chooses alone.
WINDOW_MOST_SCOPES = 32
# The fewest matches for which the window is worth its walk, where the total is known: with
# fewer, they are found through the full-text index at once, which reads each match (a pair of
# words in 0.6% of a million issues: 6,000 matches read in 61 ms, where the window walked
# 20,000 rows for too few of them first, and then read them: 140 ms). A number of matches, not
# a multiple of the candidates: what reading them all costs does not depend on how many are
# ranked.
WINDOW_LEAST_MATCHES = 10_000


# The planner's cost of a page read out of order, for the statements that find the newest
# candidates: its default (4, a disk's seek) makes a sort of a project's every row look
# cheaper than walking its (project, created_at) index newest first, and it sorted all 38,000
# rows of a project for its newest 15,000 (31 ms of a workspace's window, where the walk
# takes 4). The rows searched are the recent ones, in memory: 1.1 is the usual figure for an
# SSD or a cached table (the window of a word across the benchmark's workspace: 37 ms to 13;
# the fallback's statement: 22 ms to 12).
WALKED = {"random_page_cost": "1.1"}


class _Document(Expression):
    """The search document of the base table of the query it is compiled in."""

    def __init__(self):
        super().__init__(output_field=TextField())

    def as_sql(self, compiler, connection):
        table = compiler.quote_name_unless_alias(compiler.query.get_initial_alias())
        return f"{table}.{connection.ops.quote_name(COLUMN)}", []


def _conjuncts(node):
    """The WhereNodes of ``node``'s conditions joined by AND, ``node`` first (none under an OR
    or a NOT: those do not narrow every row)."""
    if node.connector != AND or node.negated:
        return
    yield node
    for child in node.children:
        if isinstance(child, WhereNode):
            yield from _conjuncts(child)


def _unmatched(queryset):
    """``queryset`` without the ``Matches`` conditions it was narrowed by (those among its
    conditions joined by AND), or None when it has none there."""
    scope = queryset.all()
    found = False
    for node in _conjuncts(scope.query.where):
        kept = [
            child
            for child in node.children
            if not (isinstance(child, Lookup) and isinstance(child.lhs, Matches))
        ]
        found = found or len(kept) < len(node.children)
        node.children = kept
    return scope if found else None


def _scope_values(queryset, field: str) -> list[Any] | None:
    """The values of ``field`` that ``queryset`` is narrowed to, from a plain ``field =
    value`` or ``field IN (values)`` among its conditions joined by AND (the fewest where
    there are several), or None: not narrowed so, or to more than ``WINDOW_MOST_SCOPES``."""
    found: list[Any] | None = None
    for node in _conjuncts(queryset.query.where):
        for child in node.children:
            if not (
                isinstance(child, Exact | In)
                and isinstance(child.lhs, Col)
                and child.lhs.target.column == field
                and not hasattr(child.rhs, "resolve_expression")
            ):
                continue
            values = [child.rhs] if isinstance(child, Exact) else list(child.rhs)
            if found is None or len(values) < len(found):
                found = values
    return found if found is not None and len(found) <= WINDOW_MOST_SCOPES else None


def _scope_of(among) -> tuple[Any, str, list[Any]] | None:
    """PostgreSQL, where ``among`` is narrowed by a match, and to values of its model's
    ``search_scope_field`` (one project, or up to ``WINDOW_MOST_SCOPES``): ``among`` without
    its match, the field, and those values. None elsewhere."""
    field = getattr(among.model, "search_scope_field", None)
    if connections[among.db].vendor != "postgresql" or field is None:
        return None
    unmatched = _unmatched(among)
    values = None if unmatched is None else _scope_values(unmatched, field)
    return (unmatched, field, values) if values else None


def _holding(unmatched, field: str, values: list[Any]) -> list[Any]:
    """Those of ``values`` (of ``field``, a foreign key) whose scope holds any row of
    ``unmatched``, found in one statement planned once: an index probe per value and table.
    A window then plans a branch for each of those alone (across the benchmark's workspace
    of 20 projects, 3 hold rows: the window's planning took 22 ms for the 20, 4 for the 3)."""
    scope_model = unmatched.model._meta.get_field(field).related_model
    if scope_model is None:
        return values
    first = unmatched.filter(**{field: OuterRef("pk")}).order_by().values(field)[:1]
    held = (
        scope_model._base_manager.filter(pk__in=values)
        .order_by()
        .annotate(first_row=Subquery(first))
        .filter(first_row__isnull=False)
        .values_list("pk", flat=True)
    )
    # Probes of an index: a scan of a table holding one project's rows alone is no cheaper.
    with planned(unmatched.db, enable_seqscan=False):
        found = set(held)
    return [value for value in values if value in found]


# Stands for a scope's value in the SQL of one branch, compiled once and then given each value.
_SCOPE_VALUE = -7_330_000_000


def _newest_merged(branch, values: list[Any], rows: int) -> tuple[str, list[Any]]:
    """The SQL (and its parameters) of the newest ``rows`` rows of ``branch(value)`` for every
    one of ``values`` together, each branch a queryset ordered newest first and cut at
    ``rows``: one is itself; several are the branches of a union that PostgreSQL merges in
    created_at order (a Merge Append, which reads each branch only as far as the merge
    needs). The branch is compiled once, for a stand-in value (``prepared.Statement``):
    compiling each branch of /v1/search's view took 2 ms, 40 ms per request across a
    workspace of 20 projects."""
    statement = Statement(branch(_SCOPE_VALUE), {"scope": _SCOPE_VALUE})
    branches = [f"({statement.sql})"] * len(values)
    params = [param for value in values for param in statement.params_for({"scope": value})]
    if len(branches) == 1:
        return branches[0], params
    merged = " UNION ALL ".join(branches)
    return f"SELECT u.* FROM ({merged}) u ORDER BY u.created_at DESC LIMIT %s", [*params, rows]


def _row_key(model) -> tuple[str | None, str]:
    """The columns that find one row of ``model`` through an index: its kind and object id
    in a view over several tables (``search_sources``); no kind and its primary key
    otherwise."""
    if getattr(model, "search_sources", None):
        return model.search_kind_field, model.search_object_field
    return None, model._meta.pk.column


class _AnyOf(Expression):
    """PostgreSQL: ``field`` is one of ``values``, given as one array (``= ANY(%s)``): a
    thousand ids as a thousand parameters cost more to bind than to look up."""

    conditional = True
    output_field = BooleanField()

    def __init__(self, field: str, values: list[Any]) -> None:
        super().__init__()
        self.ids_of, self.values = F(field), list(values)

    def get_source_expressions(self):
        return [self.ids_of]

    def set_source_expressions(self, exprs):
        [self.ids_of] = exprs

    def as_postgresql(self, compiler, connection):
        sql, params = compiler.compile(self.ids_of)
        return f"{sql} = ANY(%s)", [*params, self.values]


def _keyed(model, keys: dict[Any, list[Any]]) -> Q:
    """The rows of ``model`` whose ``_row_key`` is among ``keys`` (ids by kind: for a view,
    each of its tables then reads its own by their primary key)."""
    kind_field, id_field = _row_key(model)
    found = Q(pk__in=[])
    for kind, ids in keys.items():
        among = Q(_AnyOf(id_field, ids))
        found |= among if kind_field is None else Q(**{kind_field: kind}) & among
    return found


def _scope_window(scope, query: Query, rows: int, n: int) -> tuple[str, list[Any]]:
    """The SQL (and its parameters) of the newest ``n`` matches of ``query`` among the newest
    ``rows`` rows of ``scope`` (what ``_scope_of`` gives: the rows without their match,
    narrowed to values of a field), as ``_newest_keys`` gives them. The newest rows are read
    newest first through the (scope, created_at) index, each project's merged with the
    others' in order: ``rows`` rows in all, not ``rows`` per project."""
    unmatched, field, values = scope
    columns = _key_columns(unmatched.model)
    # Each row's primary key too, where it is not among its keys (a view's): the ordering's
    # last term after the score (``CandidateScore._narrowed``).
    pk = unmatched.model._meta.pk.attname
    ordered = [*columns, pk] if pk not in columns else columns

    def newest(value):
        rows_of = unmatched.filter(**{field: value}).order_by("-created_at")
        return rows_of.values("created_at", *ordered, document=_Document())[:rows]

    window, params = _newest_merged(newest, values, rows)
    match, more = _tsquery(query)
    score_sql, score_params = _score_sql(query, "w.document")
    quote = connections[unmatched.db].ops.quote_name
    scored = (f"{score_sql} AS score, w.{quote(pk)} AS tie", score_params)
    return _newest_keys(unmatched, window, params, f"w.document @@ {match}", more, n, scored=scored)


def _key_columns(model) -> list[str]:
    return [name for name in _row_key(model) if name is not None]


def _newest_keys(
    queryset,
    rows_sql: str,
    params: list[Any],
    condition: str,
    more: list[Any],
    n: int,
    *,
    counted: bool = False,
    scored: tuple[str, list[Any]] | None = None,
) -> tuple[str, list[Any]]:
    """The SQL (and its parameters) of the newest ``n`` of the rows ``rows_sql`` gives (rows
    of ``queryset``'s model: their created_at and ``_row_key`` columns), those meeting
    ``condition`` (over ``w``; its parameters in ``more``): a row per kind of row (one where
    the model has no kinds), each with how many were found, the created_at of the oldest of
    them, the kind, and the ids (``_row_key``) of that kind's rows newer than the oldest
    (NULL for none). ``counted``: each row ends with how many rows ``rows_sql`` gives, read
    once for both. ``scored``: the SQL (and parameters) of each row's score and primary key
    over ``w`` (``score`` and ``tie``), given after the ids, aligned with them
    (``_ranked_newer``)."""
    kind_field, id_field = _row_key(queryset.model)
    quote = connections[queryset.db].ops.quote_name
    kind = "NULL" if kind_field is None else f"m.{quote(kind_field)}"
    selected = ", ".join(
        f"w.{quote(column)}" for column in ("created_at", *_key_columns(queryset.model))
    )
    rows, read, total = f"({rows_sql})", "", ""
    score_sql, score_params = scored or ("", [])
    if scored:
        selected += f", {score_sql}"
    if counted:
        rows, read, total = "a", f"a AS MATERIALIZED ({rows_sql}), ", ", e.total"
    # The ids of the rows newer than the oldest (and their scores and keys, with ``scored``).
    arrays = ", ".join(
        f"array_agg(m.{column}) FILTER (WHERE m.created_at IS NOT NULL)"
        for column in (quote(id_field), *(("score", "tie") if scored else ()))
    )
    sql = (
        f"WITH {read}m AS MATERIALIZED (SELECT {selected} FROM {rows} w "
        f"WHERE {condition} ORDER BY w.created_at DESC LIMIT %s), "
        "e AS (SELECT COUNT(*) AS found, MIN(created_at) AS oldest"
        f"{', (SELECT COUNT(*) FROM a) AS total' if counted else ''} FROM m) "
        f"SELECT e.found, e.oldest, {kind}, "
        f"{arrays}{total} "
        "FROM e LEFT JOIN m ON m.created_at > e.oldest "
        f"GROUP BY e.found, e.oldest{'' if kind_field is None else ', ' + kind}{total}"
    )
    if counted:  # the rows are read (in ``a``) before they are scored (in ``m``)
        return sql, [*params, *score_params, *more, n]
    return sql, [*score_params, *params, *more, n]


def _ranked_newer(kinds: list[tuple]) -> list[tuple[float, Any, Any, Any]]:
    """From the rows of ``_newest_keys`` with ``scored``: each row newer than the oldest as
    (score, primary key, kind, id), in "best first" order (the score, then the primary key,
    both descending)."""
    found = [
        (score, tie, kind, key)
        for _found, _oldest, kind, ids, scores, ties, *_total in kinds
        if ids
        for key, score, tie in zip(ids, scores, ties, strict=True)
    ]
    return sorted(found, key=lambda entry: (entry[0], entry[1]), reverse=True)


def _oldest_and_newer(kinds: list[tuple]) -> tuple[Any, dict[Any, list]]:
    """From the rows of ``_newest_keys``: the oldest created_at, and the ids by kind."""
    return kinds[0][1], {kind: ids for _found, _oldest, kind, ids, *_total in kinds if ids}


class OldestOf(Subquery):
    """The least ``created_at`` of the rows of a sliced ``values("created_at")`` queryset."""

    template = '(SELECT MIN(newest."created_at") FROM (%(subquery)s) newest)'


class CandidateScore(Expression):
    """``Score`` for the newest ``candidates`` rows of ``among`` (by ``created_at``), -1 for
    every older row: what "best first" ranks, so that ranking costs the same whatever the
    query matches (``a*`` matches nearly everything). The newest rows come out best first,
    then the older ones newest first (the ordering's next term). With at most
    ``every_up_to`` rows (or ``candidates``, if more), every row is ranked: reading so few
    costs less than walking the newest rows for candidates (``bands``).

    A list ordered by it first is read band by band (``bands``, collab.api.pagination): the
    candidates ranked, then the older rows in the ordering's next terms. Each band is a query
    of its own that reads no row of the other, so a page costs the candidates' ranking, not
    a sort of every match (the ordering as one expression would read each match's row to
    sort it: 50,000 rows for a word in 5% of a million issues)."""

    def __init__(self, query: Query, *, among, candidates: int, every_up_to: int = 0):
        super().__init__(output_field=FloatField())
        self.query, self.candidates, self.among = query, candidates, among
        self.every_up_to = max(candidates, every_up_to)
        # What ``_candidates`` gives, when ``count`` found it already.
        self.counted: tuple[Any, dict[Any, list] | None] | None = None
        # The candidates newer than the oldest, best first (score, primary key, kind, id),
        # when the window found them.
        self.ranking: list[tuple[float, Any, Any, Any]] | None = None
        self.newest = among.order_by("-created_at").values_list("created_at", flat=True)
        # The created_at of the N-th newest row: the oldest of the newest N (all of them with
        # fewer rows). Read by a LIMIT, not an OFFSET: the same plan as any first page.
        oldest = OldestOf(self.newest[:candidates])
        self.ranked = Case(
            When(created_at__gte=Coalesce(oldest, F("created_at")), then=Score(query)),
            default=Value(-1.0),
            output_field=FloatField(),
        )

    @cached_property
    def scope(self) -> tuple[Any, str, list[Any]] | None:
        """``_scope_of(among)``: the scope whose newest rows the window walks, if any."""
        return _scope_of(self.among)

    def bands(self, queryset, rest: list, *, total: int | None = None) -> list[tuple]:
        """``queryset`` ordered by this expression, then by ``rest``, as its bands in order,
        each with its own ordering: the candidates best first (their score is at least 0),
        then the older rows (-1 each) by ``rest`` alone (none with fewer rows than
        ``candidates``). ``total``: how many rows ``queryset`` holds, when known. Where the
        window scored the candidates and ``rest`` is ``["-id"]`` (so that the score and the key
        make the whole ordering), their band comes with a third element, ``narrow(count,
        after=None)``: the band narrowed to a queryset that holds its first ``count`` rows
        (``_narrowed``), for the pages to read instead of the whole band.

        With at most ``every_up_to`` rows, every one is ranked: nothing more is read, and
        where counting them found their keys (``count``: the newest ``candidates``, so with
        at most that many rows), they are read by key (two words in a project of 10,000
        issues, 55 matches: the full-text index holds every project's postings, and reading
        the pair's again took 5 ms of a 20 ms request). Otherwise the
        oldest created_at of the newest N rows is read first, in a query of its own, so that
        the planner, given it as a value, reads the candidates through the index on
        created_at (as a subquery, it read every match of a word in a third of a million
        issues: 245 ms, against a few). How the newest N are found is the planner's choice:
        forcing it by the total (the full-text index up to 25 times N matches, the created_at
        index past that) made things worse where a word common in the database is rare in a
        small project, and in the union of /v1/search."""
        score = OrderBy(Score(self.query), descending=True)
        every_one = total is not None and total <= self.every_up_to
        # Counted, the keys found are the newest ``candidates``': the page reads every match
        # by them where they are all, and through the full-text index otherwise.
        by_keys = self.counted is not None and total is not None and total <= self.candidates
        if every_one and not by_keys:
            return [(queryset, [score, *rest]), (queryset.none(), rest)]
        windowed = total is None or total > WINDOW_LEAST_MATCHES
        oldest, newer = self._candidates(windowed=windowed)
        if oldest is None:  # no row at all
            return [(queryset, [score, *rest]), (queryset.none(), rest)]
        unmatched = None if newer is None else _unmatched(queryset)
        if newer is None or unmatched is None:
            ranked = queryset.filter(created_at__gte=oldest)
        else:
            ranked = self._ranked(unmatched, newer, oldest)
        # Every match among the keys the count found: none older.
        older = queryset.none() if every_one else queryset.filter(created_at__lt=oldest)
        if self.ranking is not None and unmatched is not None and rest == ["-id"]:
            # Ranked as the window found them (the score, then the key: the whole ordering),
            # a page reads the keys it holds alone.
            narrow = partial(self._narrowed, unmatched, oldest, ranked)
            return [(ranked, [score, *rest], narrow), (older, rest)]
        return [(ranked, [score, *rest]), (older, rest)]

    def _ranked(self, unmatched, newer: dict[Any, list], oldest) -> Any:
        """The candidates the window found, by their keys (an index lookup each, the match
        checked on each row), and the matches as old as the oldest of them (the window may not
        have read them all): the rows newer than it are all in the window. Read through the
        full-text index instead, a word in 5% of a million issues took 9 ms of a 12 ms page
        to find every posting of it, for the thousand candidates."""
        return unmatched.filter(
            (_keyed(unmatched.model, newer) & Q(Rechecked(self.query)))
            | (Q(created_at=oldest) & Q(Matches(self.query)))
        )

    def _narrowed(self, unmatched, oldest, whole, count: int, after: list | None = None) -> Any:
        """The candidates' band ordered by score then ``-id``, narrowed to what holds its
        first ``count`` rows (after a cursor's row, whose sort values are ``after``): those
        of the window's ranking, and the matches as old as the oldest (ranked by the page:
        the window may not have read them all). A page reads the keys of its own rows, not
        every candidate's (a word at a million issues: 20 where there were 500). ``whole``:
        the band, for sort values that are not a score and a key."""
        ranking = self.ranking or []
        if after is not None:
            score, tie = after[0], after[1]
            if not isinstance(score, int | float) or not isinstance(tie, int):
                return whole
            ranking = [entry for entry in ranking if (entry[0], entry[1]) < (score, tie)]
        keys: dict[Any, list] = {}
        for _score, _tie, kind, key in ranking[:count]:
            keys.setdefault(kind, []).append(key)
        return self._ranked(unmatched, keys, oldest)

    def count(self, queryset) -> int:
        """``queryset.count()`` (``among``'s rows, ordered by this expression): in a scope
        (``_scope_of``), its newest N rows found by the same statement, and kept for
        ``_candidates``. For a total no counter answers, the rows are read to count them; to
        read them again for the newest N cost as much (two words in 0.6% of a million issues:
        counted in 12 ms, then their newest 500 found in 20 ms more; both at once, 13 to 16 ms)."""
        scope = self.scope
        if scope is None:
            return queryset.count()
        rows = queryset.order_by().values("created_at", *_key_columns(self.among.model))
        sql, params = rows.query.get_compiler(queryset.db).as_sql()
        statement = _newest_keys(
            self.among, sql, list(params), "TRUE", [], self.candidates, counted=True
        )
        with connections[queryset.db].cursor() as cursor:
            cursor.execute(*statement)
            kinds = cursor.fetchall()
        self.counted = _oldest_and_newer(kinds)
        return int(kinds[0][-1])

    def _candidates(self, *, windowed: bool = True) -> tuple[Any, dict[Any, list] | None]:
        """The created_at of the N-th newest row of ``among`` (the oldest of all, with fewer),
        None with none; and, in a scope (``_scope_of``), the ids (``_row_key``) of the rows
        newer than it, by kind (None otherwise).

        On PostgreSQL, where ``among`` is narrowed to values of its model's
        ``search_scope_field`` (a project, or a workspace's projects), and ``windowed``, the
        newest WINDOW_PER_CANDIDATE x N rows of that scope are read first, newest first
        through its (scope, created_at) index, and the matches among them kept: when N match,
        the N-th is the answer, found in a walk of bounded length (a phrase in 5% of a million
        issues: 11 ms, where its planner read every match, 280 ms to 350 ms). With fewer,
        each project's newest N matches are found as the planner chooses for that project
        (few matches: through the full-text index), and merged, in a second statement. (As
        one statement, a COALESCE of both, its planning cost as much as its run: across a
        workspace of 20 projects, 47 ms of 80 for forty branches over /v1/search's view,
        where the window alone has twenty.) Not ``windowed`` (a total known to be at most
        WINDOW_LEAST_MATCHES), the newest N matches of the scope together, in one statement.
        Either way with the keys of the candidates newer than the N-th. Elsewhere (every
        project the caller sees), the planner chooses alone, and no keys come back. Found
        already when the rows were counted (``count``)."""
        if self.counted is not None:
            return self.counted
        n = self.candidates
        scope = self.scope
        if scope is None:
            return self.newest[:n].aggregate(oldest=Min("created_at"))["oldest"], None
        if windowed and len(scope[2]) > 1:
            # A branch of the window (and of its fallback) for each scope holding rows.
            unmatched, field, values = scope
            scope = (unmatched, field, _holding(unmatched, field, values))
            if not scope[2]:
                return None, {}
        # The window, and the fallback after it, walk the newest rows: costed as in memory
        # (WALKED). Not windowed, the matches are found as the planner chooses at the same
        # costs: few, through the full-text index; many in a small project, by walking its
        # newest rows (a word in a third of 10,000 issues: its newest 500 in 0.7 ms, where
        # at the default costs every row of the project was read and sorted, 4.2 ms).
        with connections[self.among.db].cursor() as cursor, planned(self.among.db, **WALKED):
            if windowed:
                cursor.execute(*_scope_window(scope, self.query, WINDOW_PER_CANDIDATE * n, n))
                kinds = cursor.fetchall()
                if kinds[0][0] == n:
                    self.ranking = _ranked_newer(kinds)
                    return _oldest_and_newer(kinds)
            # The newest N matches, with their keys, as the window gives them: the page then
            # reads its candidates by key, not through the full-text index again (a pair of
            # words in 0.6% of a million issues: their every match read twice, 13 ms each).
            _unmatched_rows, field, values = scope
            columns = _key_columns(self.among.model)

            def newest(among):
                return among.order_by("-created_at").values("created_at", *columns)[:n]

            if windowed:
                # Many matches, too few of them among the newest rows: each project's newest
                # N, merged, each found as the planner chooses for that project (for several
                # at once, it chose one plan for them all).
                rows, params = _newest_merged(
                    lambda value: newest(self.among.filter(**{field: value})), values, n
                )
            else:
                # At most WINDOW_LEAST_MATCHES matches: the scope's newest N of them in one
                # statement (across a workspace's 20 projects, 4 ms, where twenty branches
                # took 23 ms, most of it to plan them).
                rows, more = newest(self.among).query.get_compiler(self.among.db).as_sql()
                params = list(more)
            cursor.execute(*_newest_keys(self.among, rows, params, "TRUE", [], n))
            return _oldest_and_newer(cursor.fetchall())

    def __repr__(self) -> str:  # a cursor's fingerprint: stable from one request to the next
        return f"{self.__class__.__name__}({self.query!r}, {self.candidates}, {self.every_up_to})"

    def resolve_expression(self, *args, **kwargs):
        return self.ranked.resolve_expression(*args, **kwargs)


def _ranked_by_index(query: Query, among) -> bool:
    """Whether "best first" over ``among`` reads from the rank indexes (``rank_index_ready``)."""
    # A phrase is not: RUM's ordered scan ranks it otherwise than its own score does for the
    # row (the page's order flipped between runs of the same query).
    return (
        among is not None
        and bool(query.required)
        and all(len(term.words) == 1 for term in query.required)
        and rank_index_ready(
            [table for table, _fields in _sources(among.model).values()],
            connection=connections[among.db],
        )
    )


def best_first(text: str, *, among=None) -> OrderBy | None:
    """The ordering term "best match of ``text`` first"; None when it holds no word.

    On PostgreSQL with the rank indexes (``rank_index_ready``), every match is ranked and the
    page is read from the index in rank order (``RankDistance``). Otherwise, with ``among``
    (the rows being ordered, filtered), only its newest ``settings.SEARCH_RANK_CANDIDATES``
    rows are ranked (``CandidateScore``), or every one where there are at most
    ``settings.SEARCH_RANK_EVERY_UP_TO``."""
    query = parse(text)
    if not query:
        return None
    if _ranked_by_index(query, among):
        return OrderBy(RankDistance(query))
    candidates = getattr(settings, "SEARCH_RANK_CANDIDATES", 0)
    if among is None or candidates <= 0:
        return OrderBy(Score(query), descending=True)
    every_up_to = getattr(settings, "SEARCH_RANK_EVERY_UP_TO", 0)
    best = CandidateScore(query, among=among, candidates=candidates, every_up_to=every_up_to)
    return OrderBy(best, descending=True)


def tie_broken(terms: list, tie_breaker: str) -> list:
    """``terms`` of an ordering, then ``tie_breaker`` (``"-id"``), unless the rank index alone
    orders them: a further term would make PostgreSQL rank every match again to sort them,
    where the index gives its ties in an order of its own, the same from one page to the
    next."""
    [only] = terms if len(terms) == 1 else [None]
    if isinstance(only, OrderBy) and isinstance(only.expression, RankDistance):
        return terms
    return [*terms, tie_breaker]


def score(text: str, *, among) -> Expression:
    """The score to show beside rows of ``among`` ranked by ``best_first``: on the same
    scale as its order (``RankScore`` from the rank indexes, ``Score`` otherwise)."""
    query = parse(text)
    return RankScore(query) if _ranked_by_index(query, among) else Score(query)


# Rank indexes (PostgreSQL, RUM) -------------------------------------------------------------

_rank_ready: dict[tuple[str, ...], tuple[float, bool]] = {}


def rank_index_name(table: str) -> str:
    return table + RANK_INDEX_SUFFIX


def rank_index_ready(tables: list[str], *, connection=None) -> bool:
    """Whether "best first" reads from the rank indexes: ``SEARCH_RANK_INDEX`` is on, and
    every one of ``tables`` has its index (``rank_index_built``)."""
    if not getattr(settings, "SEARCH_RANK_INDEX", False):
        return False
    return rank_index_built(tables, connection=connection)


def rank_index_built(tables: list[str], *, connection=None) -> bool:
    """Whether every one of ``tables`` has its rank index, built and valid (PostgreSQL with
    the RUM extension). Asked of the database once a minute per process at most."""
    connection = connection or default_connection
    if connection.vendor != "postgresql":
        return False
    key = (connection.alias, *sorted(tables))
    now = time.monotonic()
    known = _rank_ready.get(key)
    if known is not None and now - known[0] < RANK_INDEX_RECHECK_SECONDS:
        return known[1]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = ANY(%s) AND i.indisvalid AND i.indisready",
            [[rank_index_name(table) for table in key[1:]]],
        )
        ready = cursor.fetchone()[0] == len(key) - 1
    _rank_ready[key] = (now, ready)
    return ready


def rank_index_forget() -> None:
    """Ask the database again next time (after the indexes were made or dropped)."""
    _rank_ready.clear()


def rank_extension_state(connection) -> str:
    """``installed``, ``available`` (its package is there, ``CREATE EXTENSION`` not run) or
    ``missing``, for the database of ``connection`` (PostgreSQL)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT installed_version IS NOT NULL FROM pg_available_extensions WHERE name = %s",
            [RANK_EXTENSION],
        )
        row = cursor.fetchone()
    if row is None:
        return "missing"
    return "installed" if row[0] else "available"


def rank_index_state(connection, table: str) -> tuple[bool, int] | None:
    """``table``'s rank index: whether it is valid, and its size in bytes; None without one."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indisvalid, pg_relation_size(c.oid) FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = %s",
            [rank_index_name(table)],
        )
        row = cursor.fetchone()
    return None if row is None else (bool(row[0]), int(row[1]))


def rank_index_make(connection, table: str, *, concurrently: bool = True) -> str:
    """Build ``table``'s rank index on PostgreSQL, concurrently (writes go on meanwhile),
    installing the RUM extension first when its package is there. Returns what happened:
    ``made``, ``present``, ``no extension`` (the package is missing: nothing to do), or
    ``not allowed`` (``CREATE EXTENSION rum`` needs a superuser: run it once as one).
    Concurrently, it must run outside a transaction."""
    from django.db import DatabaseError

    quote = connection.ops.quote_name
    state = rank_extension_state(connection)
    if state == "missing":
        return "no extension"
    if state == "available":
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"CREATE EXTENSION IF NOT EXISTS {RANK_EXTENSION}")
        except DatabaseError:
            return "not allowed"
    name = rank_index_name(table)
    index = rank_index_state(connection, table)
    if index is not None and index[0]:
        return "present"
    with connection.cursor() as cursor:
        how = "CONCURRENTLY " if concurrently else ""
        if index is not None:  # an earlier concurrent build that failed leaves it invalid
            cursor.execute(f"DROP INDEX {how}IF EXISTS {quote(name)}")
        cursor.execute(
            f"CREATE INDEX {how}{quote(name)} ON {quote(table)} "
            f"USING {RANK_EXTENSION} ({quote(COLUMN)} rum_tsvector_ops)"
        )
    rank_index_forget()
    return "made"


def rank_index_drop(connection, table: str) -> bool:
    """Drop ``table``'s rank index (concurrently); whether there was one."""
    name = rank_index_name(table)
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_class WHERE relname = %s AND relkind = 'i'", [name])
        present = cursor.fetchone() is not None
        cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {connection.ops.quote_name(name)}")
    rank_index_forget()
    return present


def marked_html(text: str | None) -> str:
    """A highlighted text as HTML: everything escaped, the marks as ``<mark>`` tags."""
    text = (text or "").translate(str.maketrans(_ANGLES_HIDDEN, _ANGLES))
    escaped = html.escape(text, quote=False)
    return escaped.replace(MARK_START, "<mark>").replace(MARK_END, "</mark>")


# Migrations ---------------------------------------------------------------------------------


def _document_sql(columns: dict[str, str], quote) -> str:
    parts = [
        f"setweight(to_tsvector('{CONFIG}'::regconfig, "
        f"regexp_replace(COALESCE({quote(column)}, ''), '[^[:alnum:]]+', ' ', 'g')), "
        f"'{weight}')"
        for column, weight in columns.items()
    ]
    return " || ".join(parts)


def sqlite_statements(table: str, columns: list[str], pk: str, quote) -> list[str]:
    """SQLite: the FTS5 table over ``table`` and the triggers that keep it, idempotent."""
    fts = quote(table + FTS_SUFFIX)
    names = ", ".join(quote(column) for column in columns)
    new = ", ".join(f"new.{quote(column)}" for column in columns)
    old = ", ".join(f"old.{quote(column)}" for column in columns)
    delete = f"INSERT INTO {fts} ({fts}, rowid, {names}) VALUES ('delete', old.{quote(pk)}, {old});"
    insert = f"INSERT INTO {fts} (rowid, {names}) VALUES (new.{quote(pk)}, {new});"
    trigger = quote(table + FTS_SUFFIX + "_{}")
    table_q = quote(table)
    return [
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5({names}, content={table_q}, "
        f"content_rowid={quote(pk)}, tokenize='{TOKENIZER}')",
        f"CREATE TRIGGER IF NOT EXISTS {trigger.format('insert')} AFTER INSERT ON {table_q} "
        f"BEGIN {insert} END",
        f"CREATE TRIGGER IF NOT EXISTS {trigger.format('delete')} AFTER DELETE ON {table_q} "
        f"BEGIN {delete} END",
        f"CREATE TRIGGER IF NOT EXISTS {trigger.format('update')} AFTER UPDATE OF {names} "
        f"ON {table_q} BEGIN {delete} {insert} END",
    ]


def sqlite_triggers(table: str) -> list[str]:
    return [f"{table}{FTS_SUFFIX}_{event}" for event in ("insert", "delete", "update")]


def sqlite_ensure(connection, table: str, columns: list[str], pk: str) -> bool:
    """SQLite: (re)create the FTS table and triggers of ``table`` where any is missing (a
    migration that rebuilt the table drops its triggers), rebuilding the index then. Whether
    anything was missing."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name FROM sqlite_master WHERE tbl_name = %s AND type = 'trigger'", [table]
        )
        present = {row[0] for row in cursor.fetchall()}
        if set(sqlite_triggers(table)) <= present:
            return False
        for statement in sqlite_statements(table, columns, pk, connection.ops.quote_name):
            cursor.execute(statement)
        fts = connection.ops.quote_name(table + FTS_SUFFIX)
        cursor.execute(f"INSERT INTO {fts} ({fts}) VALUES ('rebuild')")
    return True


class AddSearchDocument(Operation):
    """Gives a model's table its search document (see the module's text); reversible."""

    reduces_to_sql = False
    reversible = True

    def __init__(self, model_name: str, fields: dict[str, str]):
        if not fields or not set(fields.values()) <= set(WEIGHTS):
            raise ValueError(f"Search fields need a weight of {WEIGHTS}: {fields!r}")
        self.model_name, self.fields = model_name, dict(fields)

    def deconstruct(self):
        return self.__class__.__name__, [self.model_name, self.fields], {}

    def state_forwards(self, app_label, state):
        pass  # the models do not know the column: nothing Django writes or reads by name

    def describe(self):
        return f"Add a search document to {self.model_name} over {', '.join(self.fields)}"

    def _model(self, app_label, state):
        model = state.apps.get_model(app_label, self.model_name)
        columns = {model._meta.get_field(name).column: w for name, w in self.fields.items()}
        return model._meta.db_table, columns, model._meta.pk.column

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        table, columns, pk = self._model(app_label, to_state)
        quote = schema_editor.quote_name
        vendor = schema_editor.connection.vendor
        if vendor == "postgresql":
            schema_editor.execute(
                f"ALTER TABLE {quote(table)} ADD COLUMN {quote(COLUMN)} tsvector "
                f"GENERATED ALWAYS AS ({_document_sql(columns, quote)}) STORED"
            )
            schema_editor.execute(
                f"CREATE INDEX {quote(table + '_search')} ON {quote(table)} "
                f"USING gin ({quote(COLUMN)})"
            )
        elif vendor == "sqlite":
            sqlite_ensure(schema_editor.connection, table, list(columns), pk)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        table, columns, pk = self._model(app_label, from_state)
        quote = schema_editor.quote_name
        vendor = schema_editor.connection.vendor
        if vendor == "postgresql":
            schema_editor.execute(f"ALTER TABLE {quote(table)} DROP COLUMN {quote(COLUMN)}")
        elif vendor == "sqlite":
            for trigger in sqlite_triggers(table):
                schema_editor.execute(f"DROP TRIGGER IF EXISTS {quote(trigger)}")
            schema_editor.execute(f"DROP TABLE IF EXISTS {quote(table + FTS_SUFFIX)}")


def ensure_sqlite_documents(models, *, using=None) -> list[str]:
    """After migrations on SQLite: the tables of ``models`` whose FTS triggers had to be made
    again (a later migration that rebuilt a table drops them), their index rebuilt."""
    from django.db import connections

    connection = connections[using] if using else default_connection
    if connection.vendor != "sqlite":
        return []
    repaired = []
    for model in models:
        table = model._meta.db_table
        columns = [model._meta.get_field(name).column for name in model.search_fields]
        if sqlite_ensure(connection, table, columns, model._meta.pk.column):
            repaired.append(table)
    return repaired
