"""The ``period`` query parameter: a number and a unit (``12h``, ``30d``, ``4w``, ``6m``,
``1y``) or ``all`` (docs/guide/analytics.md), turned into the UTC interval it covers.

Hours cover whole UTC hours ending with the current one (``12h``: this hour so far and the 11
before it). Days, weeks, months and years cover whole UTC calendar days ending with today:
``1d`` is today so far, ``30d`` today and the 29 days before it. Whole days are what the daily
rollups hold, and whole hours what the reopening rollups tell apart, so every figure of a
period is exact.
"""

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from collab.api.exceptions import BadRequest

# Bounds keep every period inside the calendar (and a daily series finite): a century.
_MAX = {"h": 100 * 366 * 24, "d": 100 * 366, "w": 100 * 53, "m": 100 * 12, "y": 100}


def _up_to(n: int) -> str:
    """A regular expression for the whole numbers 1 to ``n``, without leading zeros."""
    digits = str(n)
    shorter = [f"[1-9][0-9]{{0,{len(digits) - 2}}}"] if len(digits) > 1 else []
    same_length = [
        f"{digits[:i]}[{1 if i == 0 else 0}-{int(d) - 1}][0-9]{{{len(digits) - i - 1}}}"
        for i, d in enumerate(digits)
        if int(d) > (1 if i == 0 else 0)
    ]
    return "|".join([*shorter, *same_length, digits])


# The schema states the same pattern, bounds included, so nothing it allows is refused.
PERIOD_PATTERN = (
    "^(?:all|" + "|".join(f"(?:{_up_to(top)}){unit}" for unit, top in _MAX.items()) + ")$"
)
_PERIOD = re.compile(PERIOD_PATTERN)
DEFAULT_PERIOD = "30d"


@dataclass(frozen=True)
class Period:
    name: str
    start: datetime | None  # None for ``all``: from the first day with data
    end: datetime


def day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _months_back(day: date, months: int) -> date:
    month_index = day.year * 12 + (day.month - 1) - months
    year, month = divmod(month_index, 12)
    month += 1
    # The 31st of a month back in one with 30 days is its last day.
    following = date(year + (month == 12), month % 12 + 1, 1)
    return date(year, month, min(day.day, (following - timedelta(days=1)).day))


def period_parse(raw: str | None, *, now: datetime) -> Period:
    """The period named by ``raw`` (``30d`` when absent), ending at ``now``; 400 otherwise."""
    value = DEFAULT_PERIOD if raw is None else raw
    if value == "all":
        return Period(name=value, start=None, end=now)
    if not _PERIOD.fullmatch(value):
        raise BadRequest(
            "Invalid query parameters.",
            details={
                "period": [
                    "Use a number and a unit h, d, w, m (months) or y, such as 30d or 12w "
                    "(at most a century), or all."
                ]
            },
        )
    count, unit = int(value[:-1]), value[-1]
    if unit == "h":
        this_hour = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        return Period(name=value, start=this_hour - timedelta(hours=count - 1), end=now)
    tomorrow = now.astimezone(UTC).date() + timedelta(days=1)
    if unit == "d":
        first = tomorrow - timedelta(days=count)
    elif unit == "w":
        first = tomorrow - timedelta(weeks=count)
    elif unit == "m":
        first = _months_back(tomorrow, count)
    else:
        first = _months_back(tomorrow, 12 * count)
    return Period(name=value, start=day_start(first), end=now)
