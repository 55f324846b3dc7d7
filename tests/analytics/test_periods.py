from datetime import UTC, datetime

import pytest

from analytics.periods import period_parse
from analytics.records import human_duration
from collab.api.exceptions import BadRequest

NOW = datetime(2026, 3, 31, 15, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "start"),
    [
        (None, datetime(2026, 3, 2, tzinfo=UTC)),
        ("30d", datetime(2026, 3, 2, tzinfo=UTC)),
        ("1d", datetime(2026, 3, 31, tzinfo=UTC)),
        ("1h", datetime(2026, 3, 31, 15, tzinfo=UTC)),
        ("12h", datetime(2026, 3, 31, 4, tzinfo=UTC)),
        ("48h", datetime(2026, 3, 29, 16, tzinfo=UTC)),
        ("1w", datetime(2026, 3, 25, tzinfo=UTC)),
        ("12w", datetime(2026, 1, 7, tzinfo=UTC)),
        # Months count back from tomorrow (04-01): a month before is 03-01.
        ("1m", datetime(2026, 3, 1, tzinfo=UTC)),
        ("2m", datetime(2026, 2, 1, tzinfo=UTC)),
        ("13m", datetime(2025, 3, 1, tzinfo=UTC)),
        ("1y", datetime(2025, 4, 1, tzinfo=UTC)),
        ("100y", datetime(1926, 4, 1, tzinfo=UTC)),
        ("all", None),
    ],
)
def test_period_forms(raw, start):
    period = period_parse(raw, now=NOW)
    assert period.start == start
    assert period.end == NOW
    assert period.name == (raw or "30d")


def test_month_ends_are_clamped():
    # Tomorrow is 2026-05-31; a month before is April, which has 30 days.
    period = period_parse("1m", now=datetime(2026, 5, 30, 8, tzinfo=UTC))
    assert period.start == datetime(2026, 4, 30, tzinfo=UTC)


@pytest.mark.parametrize("raw", ["", "0d", "07d", "1.5d", "d", "5", "5s", "5M", "101y", "all "])
def test_bad_forms(raw):
    with pytest.raises(BadRequest) as caught:
        period_parse(raw, now=NOW)
    assert "period" in caught.value.details


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, None),
        (0, "0 seconds"),
        (1, "1 second"),
        (59, "59 seconds"),
        (61, "1 minute 1 second"),
        (3600, "1 hour"),
        (90061, "1 day 1 hour"),
        (736800, "8 days 12 hours"),
    ],
)
def test_human_durations(seconds, text):
    assert human_duration(seconds) == text
