"""UTC calendar periods for reading spend, and the spans the Redis ledger sums into."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from semproxy.governance.periods import (
    DAY,
    HOUR,
    MINUTE,
    Span,
    buckets,
    covering,
    hashes_of,
    period_range,
    spend_key,
)


def at(*parts: int) -> float:
    return datetime(*parts, tzinfo=UTC).timestamp()  # type: ignore[misc]


NOW = at(2027, 1, 15, 13, 42, 30)  # a Friday


@pytest.mark.parametrize(("period", "back", "start", "end"), [
    ("minute", 0, at(2027, 1, 15, 13, 42), at(2027, 1, 15, 13, 43)),
    ("hour", 2, at(2027, 1, 15, 11), at(2027, 1, 15, 12)),
    ("day", 0, at(2027, 1, 15), at(2027, 1, 16)),
    ("week", 0, at(2027, 1, 11), at(2027, 1, 18)),  # Monday to Monday
    ("week", 2, at(2026, 12, 28), at(2027, 1, 4)),
    ("month", 0, at(2027, 1, 1), at(2027, 2, 1)),
    ("month", 1, at(2026, 12, 1), at(2027, 1, 1)),
    ("month", 11, at(2026, 2, 1), at(2026, 3, 1)),  # 28 days
    ("month", 13, at(2025, 12, 1), at(2026, 1, 1)),
])
def test_a_period_is_the_utc_calendar_one(period: str, back: int, start: float, end: float
                                          ) -> None:
    assert period_range(period, NOW, back) == (start, end)


def test_a_leap_february_has_29_days() -> None:
    assert period_range("month", at(2028, 2, 29, 23, 59)) == (at(2028, 2, 1), at(2028, 3, 1))


def test_all_is_everything_up_to_now_and_other_names_are_refused() -> None:
    assert period_range("all", NOW) == (0.0, NOW + 1)
    with pytest.raises(ValueError, match="minute, hour, day, week, month, all"):
        period_range("year", NOW)


def test_a_series_is_the_last_periods_oldest_first() -> None:
    assert buckets("month", 3, NOW) == [(at(2026, 11, 1), at(2026, 12, 1)),
                                        (at(2026, 12, 1), at(2027, 1, 1)),
                                        (at(2027, 1, 1), at(2027, 2, 1))]
    assert [b - a for a, b in buckets("minute", 60, NOW)] == [MINUTE] * 60


def test_an_entry_goes_to_its_day_hour_and_minute() -> None:
    spans = hashes_of(NOW)
    assert [spend_key(s) for s in spans] == [
        "spend:20270115", "spend:2027011513", "spend:202701151342"]
    assert [s.ttl_s for s in spans] == [400 * DAY, 8 * DAY, 6 * HOUR]


def test_a_range_is_tiled_by_the_coarsest_spans() -> None:
    day = at(2027, 1, 15)
    assert covering(day, day + DAY) == [Span(int(day), DAY)]
    # 13:00 to 15:30: two hours, then thirty minutes
    tiles = covering(at(2027, 1, 15, 13), at(2027, 1, 15, 15, 30))
    assert [t.size for t in tiles] == [HOUR, HOUR] + [MINUTE] * 30
    # an unaligned start is read from its minute on
    tiles = covering(NOW, at(2027, 1, 15, 14))
    assert tiles[0] == Span(int(at(2027, 1, 15, 13, 42)), MINUTE) and len(tiles) == 18
    # a month is its days
    assert len(covering(*period_range("month", NOW))) == 31


def test_nothing_older_than_the_days_kept_is_read() -> None:
    tiles = covering(0.0, NOW)
    assert tiles[0].start >= NOW - 401 * DAY and tiles[0].size == DAY
    assert len(tiles) < 400 + 24 + 60
