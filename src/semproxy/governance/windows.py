"""Time windows of counters: fixed (aligned to the epoch), calendar months (UTC), rolling.

A counter never stores "when its window started": the window a moment falls in
is computed from the clock, so every replica and process agrees on it without
talking, and a window's counter simply stops being read when the window ends
(each store lets it expire after `ttl`). A rolling window is cut into buckets;
its use is the sum of the last `buckets` buckets, so it forgets in steps of one
bucket (a 30-day rolling budget in 30 daily steps) rather than continuously.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime

# How long a counter outlives its window: a reservation made just before the
# edge is committed into the window it was made in, up to a lease later.
GRACE_S = 3600
NAMED = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400}
_SPAN = re.compile(r"^(\d+)\s*(s|m|h|d|w)$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass(frozen=True, slots=True)
class Slots:
    """Where one moment falls: the bucket a charge goes to, the buckets read, when it resets."""

    charge: str
    reads: tuple[str, ...]
    reset_s: float  # until the oldest counted bucket stops counting (the whole window if fixed)
    ttl_s: int  # how long the charged counter must be kept


@dataclass(frozen=True, slots=True)
class Window:
    """`seconds` long (0: a calendar month in UTC, or no window at all for `concurrent`)."""

    seconds: int
    month: bool = False
    rolling: bool = False
    buckets: int = 1

    def slots(self, now: float) -> Slots:
        if self.month:
            return _month(now)
        if self.seconds == 0:  # concurrency: one counter, held amounts only
            return Slots("c", ("c",), 0.0, GRACE_S)
        if not self.rolling:
            start = int(now // self.seconds)
            end = (start + 1) * self.seconds
            return Slots(str(start), (str(start),), end - now, int(end - now) + GRACE_S)
        step = self.seconds / self.buckets
        current = int(now // step)
        reads = tuple(str(b) for b in range(current, current - self.buckets, -1))
        return Slots(str(current), reads, (current + 1) * step - now,
                     self.seconds + int(step) + GRACE_S)

    def describe(self) -> str:
        if self.month:
            return "calendar month (UTC)"
        if self.seconds == 0:
            return "in flight"
        return f"{'rolling ' if self.rolling else ''}{self.seconds} s"


def _month(now: float) -> Slots:
    moment = datetime.fromtimestamp(now, UTC)
    days = calendar.monthrange(moment.year, moment.month)[1]
    start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    end = start.timestamp() + days * 86400
    tag = f"m{moment.year:04d}{moment.month:02d}"
    return Slots(tag, (tag,), end - now, int(end - now) + GRACE_S)


def parse_window(value: int | str, rolling: bool = False, buckets: int | None = None) -> Window:
    """A window from config: seconds, a name (minute, hour, day, week, month) or a span
    such as 30d; raises ValueError with the accepted forms."""
    if isinstance(value, str) and value.strip() == "month":
        if rolling:
            raise ValueError("a calendar month cannot be rolling (use 30d with rolling: true)")
        return Window(0, month=True)
    seconds = _seconds(value)
    if not rolling:
        return Window(seconds)
    count = buckets or min(60, seconds)
    if count < 2 or count > 120 or seconds % count:
        raise ValueError(f"buckets must be 2-120 and divide the window ({seconds} s)")
    return Window(seconds, rolling=True, buckets=count)


def _seconds(value: int | str) -> int:
    if isinstance(value, bool):
        raise ValueError("must be seconds (a positive integer) or a span like 1m, 1h, 30d")
    if isinstance(value, int):
        seconds = value
    elif value.strip() in NAMED:
        seconds = NAMED[value.strip()]
    elif (match := _SPAN.match(value.strip())) is not None:
        seconds = int(match.group(1)) * _UNIT_S[match.group(2)]
    else:
        raise ValueError("must be seconds, a name (second, minute, hour, day, week, month) "
                         "or a span like 1m, 1h, 30d")
    if not 1 <= seconds <= 366 * 86400:
        raise ValueError("must be between 1 second and 366 days")
    return seconds
