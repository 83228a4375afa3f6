"""Periods of time over the spend ledger: the UTC calendar periods readers ask for, and
the aligned spans the Redis ledger keeps its sums in.

Calendar periods (`minute` to `month`) are UTC: a day starts at 00:00 UTC, a week
on Monday 00:00 UTC (ISO weeks), a month on the 1st. `period_range(p, now, back)`
is the period `back` periods before the one `now` falls in, so a reader asks for
"this month" or "the hour before last" without doing calendar arithmetic.

The Redis ledger adds each minute's sums to three hashes: its day's, its hour's
and its minute's. Finer hashes are kept for less time (`KEEP_S`), so a month
of traffic costs 31 day hashes, not 44,640 minute ones, and a range is read
from the coarsest hashes that tile it (`covering`): a month is about 31
HGETALLs, an hour one. SQLite and the in-process ledger keep per-minute rows
and answer any range.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import UTC, datetime

MINUTE, HOUR, DAY, WEEK = 60, 3600, 86400, 7 * 86400
PERIODS = ("minute", "hour", "day", "week", "month", "all")
_FIXED = {"minute": MINUTE, "hour": HOUR, "day": DAY, "week": WEEK}
_MONDAY = 4 * DAY  # 1970-01-05, the first Monday after the epoch: weeks start there
# How long the Redis ledger keeps each resolution (seconds). A range older than a
# resolution's keep is read from what is left: minutes for the last 6 hours, hours
# for the last 8 days, days for 400 days (a year and a month, for month-on-month).
KEEP_S = {"minute": 6 * HOUR, "hour": 8 * DAY, "day": 400 * DAY}


def period_range(period: str, now: float, back: int = 0) -> tuple[float, float]:
    """[start, end) of the UTC `period` that is `back` periods before the one holding
    `now`; `all` is everything up to now. Raises ValueError for another name."""
    if period == "all":
        return 0.0, now + 1
    if back < 0:
        raise ValueError("back must be 0 or more")
    size = _FIXED.get(period)
    if size is not None:
        offset = _MONDAY if period == "week" else 0
        start = (now - offset) // size * size + offset - back * size
        return start, start + size
    if period == "month":
        moment = datetime.fromtimestamp(now, UTC)
        index = moment.year * 12 + moment.month - 1 - back
        year, month = divmod(index, 12)
        start = datetime(year, month + 1, 1, tzinfo=UTC).timestamp()
        return start, start + calendar.monthrange(year, month + 1)[1] * DAY
    raise ValueError(f"period must be one of {', '.join(PERIODS)}")


def buckets(step: str, points: int, now: float) -> list[tuple[float, float]]:
    """The last `points` periods of `step` up to the current one, oldest first."""
    if step == "all":
        raise ValueError("a series needs a step of minute, hour, day, week or month")
    return [period_range(step, now, back) for back in range(points - 1, -1, -1)]


@dataclass(frozen=True, slots=True)
class Span:
    """One aligned stretch the Redis ledger sums into: a UTC day, hour or minute."""

    start: int
    size: int

    @property
    def ttl_s(self) -> int:
        return KEEP_S[_NAME[self.size]]


_NAME = {DAY: "day", HOUR: "hour", MINUTE: "minute"}
_FORMAT = {DAY: "%Y%m%d", HOUR: "%Y%m%d%H", MINUTE: "%Y%m%d%H%M"}


def spend_key(span: Span) -> str:
    """The hash key of a span (after the store's prefix): `spend:20270115` for a day,
    `spend:2027011513` for an hour, `spend:202701151342` for a minute."""
    return "spend:" + datetime.fromtimestamp(span.start, UTC).strftime(_FORMAT[span.size])


def hashes_of(at: float) -> list[Span]:
    """The three spans a ledger entry at `at` is added to."""
    return [Span(int(at // size * size), size) for size in (DAY, HOUR, MINUTE)]


def covering(since: float, until: float) -> list[Span]:
    """The coarsest aligned spans that tile [since, until), both taken to the minute.
    Nothing before the day resolution's keep is read (nothing older is kept)."""
    oldest = until - KEEP_S["day"]
    if since < oldest:
        since = oldest // DAY * DAY
    t = int(since // MINUTE * MINUTE)
    out: list[Span] = []
    while t < until:
        size = _widest(t, until)
        out.append(Span(t, size))
        t += size
    return out


def _widest(t: int, until: float) -> int:
    for size in (DAY, HOUR):
        if t % size == 0 and t + size <= until:
            return size
    return MINUTE
