"""One store's leases and ledger buffer, synced in rounds: one store call per round.

A round reports every lease's use, resizes its hold (governance/lease.py) and
writes the spend ledger entries kept since the last round, in a single call
(`CounterStore.sync`: one Lua script, or one SQLite transaction in the store's
own thread). Rounds run one at a time: every `sync_interval` while anything is
held or unreported, and at once when a request needs more room than its leases
have (`refresh`; requests that arrive during a round wait for the next one, so
many waiting requests share one call).

Ledger entries are summed per minute and per route, instance, consumer, group
and end user as requests end (a few integer additions; a store writes one row
per sum, not one per request), and sent in batches with an id: the store records
a batch once, so a batch retried after a lost answer is not counted twice. While
the store is down they are kept (up to `MAX_PENDING` rows, the oldest dropped
and counted in `StoreHealth.lost_settles`) and leases keep their unreported use
as plain numbers, so nothing is lost when the store is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from semproxy.governance.health import StoreHealth
from semproxy.governance.lease import Lease
from semproxy.governance.store import CounterStore, SpendEntry, StoreError

MAX_PENDING = 10_000  # ledger rows kept per store while it is unreachable
LEDGER_STEP_S = 60  # ledger rows sum the requests of one minute
_Key = tuple[float, str, str, str, str, str]
_workers = itertools.count(1)
_process = os.urandom(4).hex()


@dataclass(slots=True)
class SyncSettings:
    interval_s: float = 0.25
    stale_s: float = 1.0  # a lease not synced for this long is synced before it is used
    lease_s: float = 900.0  # the store frees (or counts) a lease not synced for this long


@dataclass(slots=True)
class _Batch:
    id: str
    entries: list[SpendEntry] = field(default_factory=list)


class LeaseSyncer:
    def __init__(self, store: CounterStore, health: StoreHealth, settings: SyncSettings,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.health = health
        self.settings = settings
        self.clock = clock
        self.worker = f"{_process}.{os.getpid()}.{next(_workers)}"
        self.leases: dict[str, Lease] = {}
        self.syncs = 0  # store calls made (for the metrics layer)
        self._seq = 0
        self._batches: list[_Batch] = []  # sent and not acknowledged, oldest first
        self._sums: dict[_Key, list[int]] = {}  # requests, input, output, cached, cost
        self._queued: asyncio.Future[None] | None = None
        self._running: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._due = False
        self._lock = asyncio.Lock()  # one round at a time: a lease has one sync in flight
        self._last_mono = time.monotonic()
        self._closed = False

    def lease(self, counter: str, reads: tuple[str, ...], limit: int, ttl_s: int, keep: bool,
              charge_until: float) -> Lease:
        lease = self.leases.get(counter)
        if lease is None:
            lease = Lease(counter, reads, limit, ttl_s, keep, charge_until)
            self.leases[counter] = lease
        elif lease.limit != limit:
            # A reload changed the amount; the counter is the same. What the last sync
            # said is free was measured against the old amount: sync before admitting.
            lease.limit = limit
            lease.synced_at = -math.inf
        return lease

    def is_fresh(self, lease: Lease, now: float) -> bool:
        """Synced recently enough to admit from (its room is right even while a sync is
        open: `Lease.room` takes the smaller of before and after)."""
        return now - lease.synced_at < self.settings.stale_s

    def record(self, at: float, route: str, instance: str, consumer: str, group: str,
               end_user: str, input: int, output: int, cached_input: int, cost: int) -> None:
        """One answered request for the ledger (summed with its minute's like)."""
        key = (at // LEDGER_STEP_S * LEDGER_STEP_S, route, instance, consumer, group, end_user)
        row = self._sums.get(key)
        if row is None:
            self._sums[key] = [1, input, output, cached_input, cost]
        else:
            row[0] += 1
            row[1] += input
            row[2] += output
            row[3] += cached_input
            row[4] += cost
        self.touch()

    def touch(self) -> None:
        """Something changed: make sure a background round comes."""
        if self._timer is None and self._running is None and not self._closed:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return  # the loop is gone (a task finalised at shutdown): nothing to plan
            self._timer = loop.call_later(self.settings.interval_s, self._on_timer)

    async def refresh(self) -> None:
        """Wait for a round that starts after this call (raises StoreError if it failed)."""
        if self.health.is_down(self.clock()):
            raise StoreError(f"{self.health.name}: not retried until {self.health.down_until:.3f}")
        if self._queued is None:
            self._queued = asyncio.get_running_loop().create_future()
            self._queued.add_done_callback(_retrieve)
            if self._running is None:
                self._start()
        await asyncio.shield(self._queued)

    async def flush(self, release: bool = False) -> None:
        """Report everything now (and with `release`, give every surplus back)."""
        async with self._lock:
            await self._round(self.clock(), release)

    async def close(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._running is not None:
            with contextlib.suppress(StoreError):
                await asyncio.shield(self._running)
        # A failure is counted in health; the leases expire in the store (their holds
        # then count as used), so unreported use is not lost from the budget.
        with contextlib.suppress(StoreError):
            await self.flush(release=True)

    def _on_timer(self) -> None:
        self._timer = None
        self._due = True
        if self._running is None:
            self._start()

    def _start(self) -> None:
        self._running = asyncio.get_running_loop().create_task(self._rounds())

    async def _rounds(self) -> None:
        try:
            while self._queued is not None or self._due:
                waiting, self._queued, self._due = self._queued, None, False
                try:
                    async with self._lock:
                        await self._round(self.clock(), False)
                except StoreError as exc:
                    if waiting is not None and not waiting.done():
                        waiting.set_exception(exc)
                else:
                    if waiting is not None and not waiting.done():
                        waiting.set_result(None)
        finally:
            self._running = None
            if self._has_work():
                self.touch()

    def _has_work(self) -> bool:
        """Anything to report, give back or keep alive (an idle current lease is not)."""
        return bool(self._sums or self._batches) or any(
            lease.hold or lease.inflight or lease.spent != lease.reported or lease.pending
            for lease in self.leases.values())

    async def _round(self, now: float, release: bool) -> None:
        mono = time.monotonic()
        stale_s = self.settings.stale_s
        chosen = [lease for lease in self.leases.values()
                  if release or lease.needs_sync(now, mono, stale_s)]
        if self._sums:
            self._seq += 1
            rows = [SpendEntry(*key, r[1], r[2], r[3], r[4], r[0]) for key, r in self._sums.items()]
            self._batches.append(_Batch(f"{self.worker}.{self._seq}", rows))
            self._sums = {}
        if not chosen and not self._batches:
            self._drop_done(now)
            return
        if self.health.is_down(now):
            raise StoreError(f"{self.health.name}: not retried until "
                             f"{self.health.down_until:.3f}")
        self._seq += 1
        asks = [lease.ask(self._seq, now, mono, release) for lease in chosen]
        batches = [(b.id, b.entries) for b in self._batches]
        self.syncs += 1
        try:
            grants = await self.store.sync(self.worker, asks, batches, self.settings.lease_s,
                                           now)
        except StoreError as exc:
            self.health.failed(now, exc)
            self._cap_batches()
            raise
        self.health.recovered()
        self._batches = []
        elapsed, self._last_mono = mono - self._last_mono, mono
        for lease, ask, grant in zip(chosen, asks, grants, strict=True):
            lease.answered(ask, grant, now, elapsed)
        self._drop_done(now)

    def _drop_done(self, now: float) -> None:
        for counter in [k for k, lease in self.leases.items() if lease.is_done(now)]:
            del self.leases[counter]

    def _cap_batches(self) -> None:
        kept = sum(len(b.entries) for b in self._batches)
        while kept > MAX_PENDING and self._batches:
            lost = self._batches.pop(0)
            kept -= len(lost.entries)
            self.health.lost_settles += len(lost.entries)


def _retrieve(future: asyncio.Future[None]) -> None:
    """Mark a round's error as seen: the waiters that wanted it may have gone."""
    if not future.cancelled():
        future.exception()
