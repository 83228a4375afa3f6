"""The in-process store: request and token rates and concurrency, for one process.

Nothing to install and no I/O: every call finishes without awaiting anything,
so a reservation is atomic by construction (no other task runs in between).
Counts are per process: with `serve --workers N` each worker counts apart (use
the SQLite or Redis store for a limit the workers must share).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from semproxy.governance.model import Hold, Outcome, Settle, fit
from semproxy.governance.store import SpendEntry, SpendRow, sum_rows

SWEEP_EVERY = 4096  # operations between sweeps of expired counters


@dataclass(slots=True)
class _Counter:
    used: int = 0
    held: int = 0
    holds: dict[str, tuple[int, float]] = field(default_factory=dict)  # res -> (amount, until)
    next_expiry: float = float("inf")
    expires: float = 0.0

    def purge(self, now: float) -> None:
        if now < self.next_expiry:
            return
        for res, (amount, until) in list(self.holds.items()):
            if until <= now:
                del self.holds[res]
                self.held -= amount
        self.next_expiry = min((u for _, u in self.holds.values()), default=float("inf"))


class MemoryStore:
    """Counters in a dict; the ledger (for tests and `spend` in one process) in a list."""

    def __init__(self, name: str = "memory", keep_ledger: bool = False) -> None:
        self.name = name
        self._counters: dict[str, _Counter] = {}
        self._done: dict[str, float] = {}
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
        if entry is not None and self._ledger is not None:
            self._ledger.append(entry)

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
        for key in [k for k, c in self._counters.items() if c.expires <= now and not c.holds]:
            del self._counters[key]
        for res in [r for r, t in self._done.items() if t <= now]:
            del self._done[res]
