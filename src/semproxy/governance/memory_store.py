"""The in-process store: counters of one process (`governance.local_counters: process`).

Nothing to install and no I/O: every call finishes without awaiting anything,
so a reservation or a sync is atomic by construction (no other task runs in
between). Counts are per process: with `serve --workers N` each worker counts
apart, which is why `policy: local` limits live in the host's SQLite file by
default (`local_counters: host`) and this store is for one-process setups and
tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from semproxy.governance.lease import LeaseAsk, LeaseGrant, apply_ask
from semproxy.governance.model import Hold, Outcome, Settle, fit
from semproxy.governance.store import SpendEntry, SpendRow, sum_rows

SWEEP_EVERY = 4096  # operations between sweeps of expired counters


@dataclass(slots=True)
class _Lease:
    hold: int = 0
    reported: int = 0
    seq: int = 0
    until: float = 0.0


@dataclass(slots=True)
class _Counter:
    used: int = 0
    held: int = 0
    holds: dict[str, tuple[int, float]] = field(default_factory=dict)  # res -> (amount, until)
    leases: dict[str, _Lease] = field(default_factory=dict)  # worker -> its lease
    keep: bool = True  # an expired lease counts as used
    next_expiry: float = float("inf")
    expires: float = 0.0

    def purge(self, now: float) -> None:
        if now < self.next_expiry:
            return
        for res, (amount, until) in list(self.holds.items()):
            if until <= now:
                del self.holds[res]
                self.held -= amount
        for lease in self.leases.values():
            if lease.hold and lease.until <= now:
                self.held -= lease.hold
                self.used += lease.hold if self.keep else 0
                lease.hold = 0
        ends = [u for _, u in self.holds.values()]
        ends += [lease.until for lease in self.leases.values() if lease.hold]
        self.next_expiry = min(ends, default=float("inf"))

    def holders(self) -> int:
        return sum(1 for lease in self.leases.values() if lease.hold)


class MemoryStore:
    """Counters in a dict; the ledger (for tests and `spend` in one process) in a list."""

    def __init__(self, name: str = "memory", keep_ledger: bool = False) -> None:
        self.name = name
        self._counters: dict[str, _Counter] = {}
        self._done: dict[str, float] = {}
        self._markers: dict[str, tuple[str, float]] = {}  # exclusive marker -> (res, until)
        self._ops = 0
        self._ledger: list[SpendEntry] | None = [] if keep_ledger else None

    def _counter(self, key: str) -> _Counter:
        counter = self._counters.get(key)
        if counter is None:
            counter = self._counters[key] = _Counter()
        return counter

    def _total(self, reads: Sequence[str], now: float) -> int:
        total = 0
        for key in reads:
            counter = self._counters.get(key)
            if counter is not None:
                counter.purge(now)
                total += counter.used + counter.held
        return total

    async def reserve(self, res_id: str, holds: Sequence[Hold], low: int, high: int,
                      lease_s: float, now: float) -> Outcome:
        self._tick(now)
        for i, hold in enumerate(holds):
            marked = self._markers.get(hold.exclusive) if hold.exclusive else None
            if marked is not None and marked[0] != res_id and marked[1] > now:
                return Outcome(False, 0, (0,), refused=i, busy=True)
        outcome = fit(list(holds), [self._total(h.reads, now) for h in holds], low, high)
        if outcome.granted:
            until = now + lease_s
            for hold in holds:
                amount = hold.fixed + hold.per_output * outcome.output
                counter = self._counter(hold.counter)
                counter.held += amount
                counter.holds[res_id] = (amount, until)
                counter.next_expiry = min(counter.next_expiry, until)
                counter.expires = max(counter.expires, now + hold.ttl_s)
                if hold.exclusive:
                    self._markers[hold.exclusive] = (res_id, until)
        return outcome

    async def settle(self, res_id: str, settles: Sequence[Settle], now: float,
                     entry: SpendEntry | None = None) -> None:
        if res_id in self._done:
            return
        self._done[res_id] = now + 86400
        for item in settles:
            counter = self._counter(item.counter)
            amount, _ = counter.holds.pop(res_id, (0, 0.0))
            counter.held -= amount
            counter.used += item.amount
            counter.expires = max(counter.expires, now + item.ttl_s)
            marked = self._markers.get(item.exclusive) if item.exclusive else None
            if marked is not None and marked[0] == res_id:
                del self._markers[item.exclusive]
        if entry is not None and self._ledger is not None:
            self._ledger.append(entry)

    async def sync(self, worker: str, asks: Sequence[LeaseAsk],
                   batches: Sequence[tuple[str, Sequence[SpendEntry]]], lease_s: float,
                   now: float) -> list[LeaseGrant]:
        self._tick(now)
        grants = [self._sync_one(worker, ask, lease_s, now) for ask in asks]
        for batch, entries in batches:
            if batch not in self._done:
                self._done[batch] = now + 86400
                if self._ledger is not None:
                    self._ledger.extend(entries)
        return grants

    def _sync_one(self, worker: str, ask: LeaseAsk, lease_s: float, now: float) -> LeaseGrant:
        total = self._total(ask.reads, now)
        counter = self._counter(ask.counter)
        counter.keep = ask.keep
        lease = counter.leases.get(worker)
        if lease is None:
            lease = counter.leases[worker] = _Lease()
        done = apply_ask(lease.hold, lease.reported, lease.seq, total, ask)
        if not done.stale:
            counter.used += done.used
            counter.held -= done.released
            lease.hold, lease.seq = done.hold, ask.seq
            lease.reported = max(lease.reported, ask.spent)
            lease.until = now + lease_s
            if done.hold:
                counter.next_expiry = min(counter.next_expiry, lease.until)
            counter.expires = max(counter.expires, now + ask.ttl_s)
        free = ask.limit - self._total(ask.reads, now)
        return LeaseGrant(lease.hold, free, counter.holders())

    async def used(self, reads: Sequence[str], now: float) -> int:
        return self._total(reads, now)

    async def spend(self, dimension: str, since: float, until: float) -> list[SpendRow]:
        entries = [e for e in self._ledger or () if since <= e.at < until]
        return sum_rows(entries, dimension)

    async def close(self) -> None:
        self._counters.clear()

    def _tick(self, now: float) -> None:
        self._ops += 1
        if self._ops % SWEEP_EVERY:
            return
        for key in [k for k, c in self._counters.items()
                    if c.expires <= now and not c.holds and not c.holders()]:
            del self._counters[key]
        for res in [r for r, t in self._done.items() if t <= now]:
            del self._done[res]
        for name in [m for m, (_, t) in self._markers.items() if t <= now]:
            del self._markers[name]
