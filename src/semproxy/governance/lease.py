"""Leases: a worker holds a slice of a central counter and spends it without asking.

Asking a store on every request costs a round trip and hundreds of microseconds
of CPU (Redis) or a write transaction (SQLite). Instead each worker (a process,
or one `StoreSet`) keeps, per counter, a *lease*: an amount held for it in the
store like any reservation. A request whose hold fits in the lease's room is
admitted in memory; its commit adds its real use locally. A sync (one store
call per store, every `sync_interval` or when a request needs more room)
reports the use and sets the lease to what the worker wants to hold next: the
holds of its requests in flight plus a surplus sized to about a second of its
traffic, capped at the room left divided by twice the number of holders.

Why no budget can be overshot: the store grants a lease only if it fits next to
everyone's use and holds (the same atomic rule as a reservation), and a worker
admits a request only if it fits in its lease. So at any moment the sum of use,
in-flight holds and unreported use over all workers is at most the limit, as if
every request had reserved centrally. The price is early refusal: a request can
be refused while another worker holds unused surplus. Surplus is capped at half
the free room, so that happens only when less than about two requests' holds
are left, and an idle worker gives its surplus back at its next sync.

Reports are idempotent: a sync carries the worker's *cumulative* use of the
counter (the store adds the difference to what it last applied) and the hold it
wants as an absolute amount, with a sequence number so a delayed retry can never
undo a newer sync. While a sync's outcome is unknown (in flight, or failed) the
room is the smaller of what the lease allows before and after it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

HORIZON_S = 1.0  # a lease's surplus covers about this much of the worker's traffic
MIN_REQUESTS = 8  # ... and at least this many requests like the last one
KEEP_S = 2.0  # without requests for this long, a lease gives its surplus back


@dataclass(frozen=True, slots=True)
class LeaseAsk:
    """One counter in a sync: report `spent` (cumulative) and hold `want` from now on.

    The hold grows only if the store can raise it to at least `need` (a smaller
    grant would strand room another worker could use); it never grows past what
    fits next to everyone's use and holds over `reads`.
    """

    counter: str
    reads: tuple[str, ...]
    limit: int
    ttl_s: int
    keep: bool  # an expired lease counts as used (False: freed, for concurrency)
    seq: int
    spent: int
    want: int
    need: int


@dataclass(frozen=True, slots=True)
class LeaseGrant:
    hold: int  # the worker's hold now
    free: int  # limit minus everyone's use and holds over the reads, after this sync
    holders: int  # workers holding a lease on the counter


@dataclass(frozen=True, slots=True)
class Applied:
    hold: int
    used: int  # use added to the counter
    released: int  # hold dropped from the counter (the converted use plus any shrink)
    stale: bool  # the ask was older than one already applied: nothing changed


def apply_ask(hold: int, reported: int, seq: int, total: int, ask: LeaseAsk) -> Applied:
    """The rule every store runs atomically for one ask (sync.lua is this in Lua).

    `hold`, `reported`, `seq`: the worker's lease as the store has it; `total`: use
    plus holds over the ask's reads, everyone's (the worker's hold included).
    """
    if ask.seq <= seq:
        return Applied(hold, 0, 0, True)
    used = max(ask.spent - reported, 0)
    converted = min(used, hold)  # the lease paid for that use: it leaves the hold
    base = hold - converted
    free = ask.limit - (total + used - converted)
    if ask.want <= base:
        new = ask.want
    elif base + max(free, 0) >= ask.need:
        new = base + min(ask.want - base, max(free, 0))
    else:
        new = base
    return Applied(new, used, hold - new, False)


@dataclass(slots=True, eq=False)
class Lease:
    """A worker's lease on one counter, and what its requests did with it."""

    counter: str
    reads: tuple[str, ...]
    limit: int
    ttl_s: int
    keep: bool
    charge_until: float  # clock time at which the counter stops taking new holds
    hold: int = 0
    reported: int = 0
    spent: int = 0
    inflight: int = 0
    free: int = 0
    holders: int = 1
    synced_at: float = -math.inf
    pending: list[tuple[int, int]] = field(default_factory=list)  # (spent, want) unknown
    asked: int = 0
    rate: float = 0.0
    unit: int = 0
    last_use: float = -math.inf  # time.monotonic() of the last hold
    demand: int = 0  # holds that waiting requests need on top of the room
    demand_min: int = 0

    def room(self) -> int:
        room = self.hold - self.inflight - (self.spent - self.reported)
        for sent, want in self.pending:
            room = min(room, want - self.inflight - (self.spent - sent))
        return room

    def remaining(self) -> int:
        """What the counter has left for this worker's next requests (for headers)."""
        room = self.room()
        return (self.free if self.free > 0 else 0) + (room if room > 0 else 0)

    def take(self, amount: int, mono: float) -> None:
        self.inflight += amount
        self.asked += amount
        self.unit = amount
        self.last_use = mono

    def give(self, amount: int, used: int) -> None:
        """A request ends: its hold `amount` leaves, its real `used` is spent."""
        self.inflight -= amount
        self.spent += used

    def is_done(self, now: float) -> bool:
        """Nothing held, in flight or unreported, and its bucket takes no more holds:
        the worker may forget it (the store keeps its report for as long as the counter)."""
        return now >= self.charge_until and self.spent == self.reported and \
            not (self.inflight or self.hold or self.pending or self.demand)

    def surplus(self, now: float, mono: float) -> int:
        """The room to hold beyond the requests in flight, after the next sync."""
        if now >= self.charge_until or mono - self.last_use > KEEP_S:
            return 0
        wanted = max(int(self.rate * HORIZON_S), self.unit * MIN_REQUESTS)
        open_room = max(self.free, 0) + max(self.room(), 0)
        return min(wanted, open_room // (2 * max(self.holders, 1)))

    def needs_sync(self, now: float, mono: float, stale_s: float) -> bool:
        """Worth a store call in the next background sync."""
        if self.demand or self.spent != self.reported or self.pending:
            return True
        if self.hold and now - self.synced_at >= stale_s / 2:
            return True  # keep the lease alive, and the view of the others fresh
        target = self.surplus(now, mono)
        extra = self.hold - self.inflight
        return extra > target or (target > 0 and extra < target // 2)

    def ask(self, seq: int, now: float, mono: float, release: bool = False) -> LeaseAsk:
        """The next sync's ask; `release` gives every surplus back (shutdown, a read)."""
        want = self.inflight + self.demand + (0 if release else self.surplus(now, mono))
        need = self.inflight + self.demand_min if self.demand else self.inflight
        self.pending.append((self.spent, want))
        return LeaseAsk(self.counter, self.reads, self.limit, self.ttl_s, self.keep, seq,
                        self.spent, want, min(need, want))

    def answered(self, ask: LeaseAsk, grant: LeaseGrant, now: float, elapsed: float) -> None:
        self.hold = grant.hold
        self.reported = max(self.reported, ask.spent)
        self.free, self.holders = grant.free, grant.holders
        self.synced_at = now
        self.pending.clear()
        if elapsed > 0:
            self.rate = 0.5 * self.rate + 0.5 * self.asked / elapsed
        self.asked = 0
