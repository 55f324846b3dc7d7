"""The analytics' records: a project as they see it (``Facts``), and how their figures are
presented (durations in words, the breakdowns' entries)."""

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from issues.models import Status

OPEN_STATUSES = (Status.OPEN.value, Status.IN_PROGRESS.value)


@dataclass(frozen=True)
class Facts:
    """A project as the analytics see it: when it was created, how far its rollups go (see
    ``RollupState``), its issues by status (the issue services' counters), and whether it has
    a stored breakdown snapshot."""

    project_id: int
    created_at: datetime
    through: date | None
    partial_through: datetime | None
    statuses: dict[str, int]
    has_snapshot: bool

    @property
    def open_issues(self) -> int:
        return sum(self.statuses[status] for status in OPEN_STATUSES)

    @property
    def issues(self) -> int:
        return sum(self.statuses.values())


def human_duration(seconds: float | None) -> str | None:
    """``"2 days 3 hours"``: the two largest units, rounded down."""
    if seconds is None:
        return None
    remaining = int(seconds)
    parts = []
    for name, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        amount, remaining = divmod(remaining, size)
        if amount:
            parts.append(f"{amount} {name}{'s' if amount != 1 else ''}")
    return " ".join(parts[:2]) or "0 seconds"


def breakdown_entries(
    counts: dict[Any, Any], labels: dict[Any, Any] | None = None
) -> list[dict[str, Any]]:
    entries = []
    for key, by_status in counts.items():
        closed = by_status.get(Status.CLOSED.value, 0)
        total = sum(by_status.values())
        entries.append(
            {
                "key": key,
                "label": (labels or {}).get(key, key if key is not None else "none"),
                "open": total - closed,
                "closed": closed,
                "total": total,
            }
        )
    entries.sort(key=lambda entry: (-entry["total"], str(entry["key"])))
    return entries


def breakdowns_merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for dimension in ("type", "priority", "assignee", "label"):
        by_key: dict[str, Any] = {}
        for part in parts:
            for entry in part.get(dimension, []):
                into = by_key.setdefault(
                    entry["key"],
                    {"key": entry["key"], "label": entry["label"], "open": 0, "closed": 0},
                )
                into["open"] += entry["open"]
                into["closed"] += entry["closed"]
        entries = [{**entry, "total": entry["open"] + entry["closed"]} for entry in by_key.values()]
        entries.sort(key=lambda entry: (-entry["total"], str(entry["key"])))
        merged[dimension] = entries
    return merged


def status_breakdown(facts: list[Facts]) -> list[dict[str, Any]]:
    counts = dict.fromkeys(Status.values, 0)
    for project in facts:
        for status, count in project.statuses.items():
            counts[status] += count
    return [
        {
            "key": status,
            "label": status,
            "open": 0 if status == Status.CLOSED else count,
            "closed": count if status == Status.CLOSED else 0,
            "total": count,
        }
        for status, count in counts.items()
    ]
