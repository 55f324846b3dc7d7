"""Reads for issues and labels.

Lists go through ``.values()`` and one batched label query per page: a page of 50 issues
costs the same three queries as a page of 5, and no model instances are built for output.
"""

import sys
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from functools import cache
from typing import Any

from django.db.models import CharField, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Cast

from accounts.models import User
from collab.api.routers import id_or_none
from collab.db import fulltext
from collab.db.prepared import PreparedQuery
from projects.models import Project
from projects.selectors import (
    PROJECT_FIELDS,
    project_audience_q,
    project_seen,
    project_visibility_q,
    reader_annotations,
)

from . import facets
from .models import Issue, IssueFacetCount, IssueHistory, IssueStatusCount, Label, Status


def visible_projects(*, user: User) -> QuerySet[Project, Any]:
    return Project.objects.filter(project_visibility_q(user)).values("pk")


def assignee_allowed(*, project: Project, user: User) -> bool:
    """Whether ``user`` may be assigned an issue of ``project``: active, and able to see it."""
    return user.is_active and assignee_id_allowed(project=project, user_id=user.pk)


def assignee_id_allowed(*, project: Project, user_id: int) -> bool:
    """``assignee_allowed`` for the user of this id, in one query (whether one exists too)."""
    return User.objects.filter(
        project_audience_q(project), pk=user_id, status=User.Status.ACTIVE
    ).exists()


def issue_list(*, user: User, project: Project | None = None) -> QuerySet[Issue]:
    """Issues the user may see: of one project, or of every project visible to them."""
    if project is not None:
        return Issue.objects.filter(project=project)
    return Issue.objects.filter(project_id__in=visible_projects(user=user))


# An issue's columns, then its project's through the foreign key: one row for both.
ISSUE_COLUMNS = [field.attname for field in Issue._meta.concrete_fields]
_PROJECT_PATHS = [f"project__{name}" for name in PROJECT_FIELDS]
READER = ("reader_role", "reader_on_team")


def issue_rows(
    issues: QuerySet[Issue], *, reader_id: int | None, extra: tuple[str, ...] = ()
) -> QuerySet[Issue, dict[str, Any]]:
    """The issues' rows with their projects' (``issue_from_row`` makes them instances): with
    ``reader_id``, the reader's role and team seat too (``projects.selectors.reader_annotations``)
    so that neither visibility nor the request's role check costs another query."""
    if reader_id is not None:
        issues = issues.annotate(
            **reader_annotations(
                user_id=reader_id, project="project_id", workspace="project__workspace_id"
            )
        )
        extra = (*READER, *extra)
    rows: QuerySet[Issue, dict[str, Any]] = issues.values(*ISSUE_COLUMNS, *_PROJECT_PATHS, *extra)
    return rows


def issue_from_row(row: dict[str, Any], *, alias: str) -> Issue:
    """The issue of an ``issue_rows`` row, its project attached (with the reader's role and team
    seat when they were read)."""
    issue = Issue.from_db(alias, ISSUE_COLUMNS, [row[name] for name in ISSUE_COLUMNS])
    project = Project.from_db(alias, PROJECT_FIELDS, [row[path] for path in _PROJECT_PATHS])
    if READER[0] in row:
        project.reader_role, project.reader_on_team = (row[name] for name in READER)
    issue.project = project
    return issue


# Compiled once (collab.db.prepared): every route under an issue reads it first.
_ISSUE_READ = PreparedQuery(
    lambda *, pk, user_id: issue_rows(Issue.objects.filter(pk=pk), reader_id=user_id),
    pk=int,
    user_id=int,
)


def issue_get(*, user: User, issue_id: int | str) -> Issue | None:
    """The issue with its project if the user may see it, else None, in one query: the
    reader's role and team seat come with the row (``issue_rows``)."""
    pk = id_or_none(issue_id)
    rows = _ISSUE_READ.rows(pk=pk, user_id=user.pk) if pk is not None else []
    if not rows:
        return None
    issue = issue_from_row(rows[0], alias=_ISSUE_READ.alias)
    return issue if project_seen(issue.project, user=user) else None


def issue_count(
    *, project_ids: QuerySet[Project, Any] | list[int], statuses: list[str] | None
) -> int:
    """Exact number of issues in these projects (and statuses), from the kept counters."""
    counts = IssueStatusCount.objects.filter(project_id__in=project_ids)
    if statuses:
        counts = counts.filter(status__in=statuses)
    # Summed here: at most three rows per project, and a plain SELECT costs less than an
    # aggregate to build on every list request.
    return sum(counts.values_list("count", flat=True))


def project_issue_counts() -> dict[str, Subquery]:
    """A project's kept counters, one per status, as expressions over the project's row: a
    ``ProjectLookup`` reads them in the project's own query (``project_issue_count``)."""
    return {
        f"issues_{status}": Subquery(
            IssueStatusCount.objects.filter(project=OuterRef("pk"), status=status).values("count")[
                :1
            ]
        )
        for status in Status.values
    }


def project_issue_count(project: Project, *, statuses: list[str] | None) -> int:
    """Exact number of the project's issues (in these statuses), from the counters read with
    it through ``project_issue_counts``."""
    return sum(getattr(project, f"issues_{status}") or 0 for status in statuses or Status.values)


def issue_history(*, issue: Issue) -> QuerySet[IssueHistory]:
    return IssueHistory.objects.filter(issue=issue).order_by("id")


def label_list(*, project: Project) -> QuerySet[Label]:
    return Label.objects.filter(project=project).order_by("name")


LABEL_COLUMNS = [field.attname for field in Label._meta.concrete_fields]
# Names a write's label read is compiled for (one query per count); more go through the ORM.
LABELS_COMPILED_MAX = 10


@cache
def _labels_named_query(count: int) -> PreparedQuery:
    slots = [f"name{index}" for index in range(count)]

    def build(*, project_id: int, **names: str) -> QuerySet[Label, dict[str, Any]]:
        labels = Label.objects.filter(project_id=project_id, name__in=[names[s] for s in slots])
        rows: QuerySet[Label, dict[str, Any]] = labels.order_by("name").values(*LABEL_COLUMNS)
        return rows

    return PreparedQuery(build, project_id=int, **dict.fromkeys(slots, str))


def labels_named(*, project_id: int, names: list[str]) -> list[Label]:
    """The project's labels of these (distinct) names, by name: what every issue write that
    names labels reads, compiled once per number of names (collab.db.prepared)."""
    if not 0 < len(names) <= LABELS_COMPILED_MAX:
        return list(Label.objects.filter(project_id=project_id, name__in=names).order_by("name"))
    query = _labels_named_query(len(names))
    rows = query.rows(project_id=project_id, **{f"name{i}": name for i, name in enumerate(names)})
    return [
        Label.from_db(query.alias, LABEL_COLUMNS, [row[name] for name in LABEL_COLUMNS])
        for row in rows
    ]


def label_get(*, user: User, label_id: int | str) -> Label | None:
    return (
        Label.objects.filter(project_id__in=visible_projects(user=user))
        .select_related("project")
        .filter(pk=label_id)
        .first()
    )


@dataclass(frozen=True)
class KeptFilter:
    """A list filter the per-value counters (``issues.facets``) answer: ``values`` of one
    ``facet`` (``label_name``: the labels of that name), or a time range of the days of
    ``created`` or ``updated`` (from ``start``, before ``end``)."""

    facet: str
    values: tuple[str, ...] = ()
    label_name: str | None = None
    start: datetime | None = None
    end: datetime | None = None


def issue_search_total(
    *, text: str, project_ids: QuerySet[Project, Any] | list[int], statuses: list[str] | None
) -> int | None:
    """Exact number of the issues of these projects (and statuses) that the search ``text``
    matches, from the counters of words and of pairs of words (``issues.facets``) where its
    shape lets them answer, with the few rows they leave counted; None for any other shape
    (count the rows then):

    - one word, or a phrase of two (``"dark mode"``): its counters;
    - one of those and one exclusion (``emoji -safari``): its counters, less the issues
      holding both, counted (an index scan that reads only the rows it counts);
    - one prefix of one word (``bill*``): the counters of the most common counted word that
      begins with it, plus the issues holding another word that begins with it and not that
      one, counted (none, where one word is all the prefix finds). The counters name every
      word that begins with it (the words, and the heads of longer ones), so that count reads
      those words' postings alone."""
    query = fulltext.parse(text)
    required, excluded = query.required, query.excluded
    if len(required) != 1 or len(excluded) > 1:
        return None
    [term] = required
    if term.prefix and (excluded or len(term.words) != 1):
        return None
    counters = IssueFacetCount.objects.filter(project_id__in=project_ids)
    rows = Issue.objects.filter(project_id__in=project_ids)
    if statuses:
        counters, rows = counters.filter(status__in=statuses), rows.filter(status__in=statuses)
    if term.prefix:
        stem = facets.lexeme(term.words[0])
        return None if stem is None else _prefix_total(stem, counters, rows)
    counter = facets.term_counter(term)
    if counter is None:
        return None
    facet, value = counter
    held = counters.filter(facet=facet, value=value).aggregate(total=Sum("count"))["total"] or 0
    if not excluded:
        return held
    both = fulltext.Query((term, fulltext.Term(words=excluded[0].words, prefix=excluded[0].prefix)))
    return held - rows.filter(fulltext.Matches(both)).count()


# The most words a prefix's count names one by one (``_prefix_total``); past that, it reads
# the postings of every word that begins with the prefix.
PREFIX_WORDS_NAMED = 32


def _prefix_total(stem: str, counters: QuerySet[IssueFacetCount], rows: QuerySet[Issue]) -> int:
    """Exact number of ``rows`` holding a word that begins with ``stem``, from ``counters``
    (theirs, narrowed alike): the most common such word's counter, plus the rows holding any
    other and not it, counted. Only the words the counters name are read (a prefix's own
    condition reads the postings of every word that begins with it: those of "bill" in 17% of
    a million issues, 25 ms, to find none without it); with none other, no row is."""
    # The range as well as the prefix: the counters' index (project, facet, value) reads
    # the range, where LIKE reads every word of the project unless the collation is "C"
    # (20 ms to 50 ms for a million issues' words). The prefix keeps it exact whatever
    # the collation orders.
    named = list(
        counters.filter(
            facet__in=("word", "head"), value__startswith=stem, **_prefix_range("value", stem)
        )
        .values("facet", "value")
        .annotate(total=Sum("count"))
        .filter(total__gt=0)
        .order_by("-total", "facet", "value")
        .values_list("facet", "value", "total")
    )
    words = [(value, int(total)) for facet, value, total in named if facet == "word"]
    heads = [value for facet, value, _total in named if facet == "head"]
    if not words:
        # Words longer than the counters hold, alone: their rows, through their heads.
        found = fulltext.AnyLexeme([], heads)
        return fulltext.count_by_index(rows.filter(found)) if heads else 0
    (word, held), others = words[0], [value for value, _total in words[1:]]
    if not others and not heads:
        return held
    if len(others) + len(heads) <= PREFIX_WORDS_NAMED:
        found = fulltext.AnyLexeme(others, heads, but_not=word)
    else:
        found = fulltext.AnyLexeme([], [stem], but_not=word)
    return held + fulltext.count_by_index(rows.filter(found))


def _prefix_range(field: str, prefix: str) -> dict[str, str]:
    """Conditions on ``field`` for the strings from ``prefix`` up to the next prefix of its
    length (its last character's successor): those that begin with it, in code point order."""
    last = ord(prefix[-1])
    if last >= sys.maxunicode:
        return {f"{field}__gte": prefix}
    return {f"{field}__gte": prefix, f"{field}__lt": prefix[:-1] + chr(last + 1)}


def _midnight(moment: datetime) -> datetime:
    return datetime.combine(moment.astimezone(UTC).date(), time(), tzinfo=UTC)


def issue_kept_total(
    *,
    project_ids: QuerySet[Project, Any] | list[int],
    statuses: list[str] | None,
    kept: KeptFilter,
) -> int:
    """Exact number of the issues of these projects (and statuses) that ``kept`` selects,
    from the counters. A time range is the counters of the whole days inside it, plus the
    rows of its partial first and last days counted (a day of rows at most each)."""
    counters = IssueFacetCount.objects.filter(project_id__in=project_ids, facet=kept.facet)
    if statuses:
        counters = counters.filter(status__in=statuses)
    if kept.facet not in ("created", "updated"):
        if kept.label_name is not None:
            labels = Label.objects.filter(project_id__in=project_ids, name=kept.label_name)
            counters = counters.filter(
                value__in=labels.annotate(text=Cast("pk", CharField())).values("text")
            )
        else:
            counters = counters.filter(value__in=kept.values)
        return counters.aggregate(total=Sum("count"))["total"] or 0
    field = f"{kept.facet}_at"
    rows = Issue.objects.filter(project_id__in=project_ids)
    if statuses:
        rows = rows.filter(status__in=statuses)
    # Whole days: from the first midnight at or after start, to the last at or before end.
    start, end = kept.start, kept.end
    first = None if start is None else _midnight(start)
    if first is not None and start is not None and first < start:
        first += timedelta(days=1)
    last = None if end is None else _midnight(end)
    if first is not None and last is not None and first >= last:
        # Less than a whole day: its rows, counted.
        return rows.filter(**{f"{field}__gte": start, f"{field}__lt": end}).count()
    if first is not None:
        counters = counters.filter(value__gte=first.date().isoformat())
    if last is not None:
        counters = counters.filter(value__lt=last.date().isoformat())
    total = counters.aggregate(total=Sum("count"))["total"] or 0
    if first is not None and start is not None and first > start:
        total += rows.filter(**{f"{field}__gte": start, f"{field}__lt": first}).count()
    if last is not None and end is not None and last < end:
        total += rows.filter(**{f"{field}__gte": last, f"{field}__lt": end}).count()
    return total
