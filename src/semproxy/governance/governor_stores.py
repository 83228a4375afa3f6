"""The stores a plan names, opened once and kept across config versions, with their leases.

Each store has a `LeaseSyncer` (the worker's leases on it and its ledger
buffer: governance/syncer.py) and a `StoreHealth`. Both survive a reload with
the store, so a new config version keeps the leases and the counts of the old.

`settle` (a single reservation's, for requests whose input has no proven bound)
never raises: a settle the store could not take is kept (up to `MAX_PENDING`)
and sent again before the next settle to that store succeeds. Settling is
idempotent per reservation step, so a retry after a lost answer counts once.

`get(name)` is the store as readers see it (`used`, `spend`): this worker's
unreported use and ledger entries are flushed first and its lease surplus is
given back, so a read counts what was really used and held.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from semproxy.governance.health import StoreHealth
from semproxy.governance.memory_store import MemoryStore
from semproxy.governance.model import Settle
from semproxy.governance.plan import GovernancePlan, StoreSpec
from semproxy.governance.redis_store import RedisStore
from semproxy.governance.sqlite_store import SqliteStore
from semproxy.governance.store import CounterStore, SpendRow, StoreError
from semproxy.governance.syncer import LeaseSyncer, SyncSettings

MAX_PENDING = 10_000  # single-reservation settles kept per store while it is unreachable


@dataclass(frozen=True, slots=True)
class _Pending:
    owner: str
    settles: tuple[Settle, ...]
    now: float


def open_store(spec: StoreSpec, name: str) -> CounterStore:
    if spec.kind == "sqlite":
        assert spec.path is not None
        return SqliteStore(spec.path, name)
    if spec.kind == "redis":
        assert spec.redis is not None
        return RedisStore(spec.redis, name)
    return MemoryStore(name, keep_ledger=True)


class StoreView:
    """A store for reading: `used` and `spend` after this worker's leases are flushed."""

    def __init__(self, store: CounterStore, syncer: LeaseSyncer) -> None:
        self._store, self._syncer = store, syncer

    async def used(self, reads: Sequence[str], now: float) -> int:
        await self._syncer.flush(release=True)
        return await self._store.used(reads, now)

    async def spend(self, dimension: str, since: float, until: float) -> list[SpendRow]:
        await self._syncer.flush()
        return await self._store.spend(dimension, since, until)  # type: ignore[attr-defined, no-any-return]


class StoreSet:
    def __init__(self, stores: Mapping[str, CounterStore], log_interval_s: float = 60.0,
                 retry_after_s: float = 1.0, sync: SyncSettings | None = None) -> None:
        self._stores = dict(stores)
        self._health = {name: StoreHealth(name, log_interval_s, retry_after_s)
                        for name in stores}
        settings = sync or SyncSettings()
        self._syncers = {name: LeaseSyncer(store, self._health[name], settings)
                         for name, store in stores.items()}
        self._pending: dict[str, deque[_Pending]] = {name: deque() for name in stores}
        self._flushing: set[str] = set()
        self._specs: dict[str, StoreSpec] = {}  # what each store was opened from (for_plan)

    @classmethod
    def for_plan(cls, plan: GovernancePlan, previous: StoreSet | None = None) -> StoreSet:
        """The plan's stores, reusing the previous version's where the spec is the same."""
        # A store is kept when its spec is the same (a new SQLite path opens a new file).
        reuse = {name: store for name, store in previous._stores.items()
                 if previous._specs.get(name) == plan.stores.get(name)} if previous else {}
        stores = {name: reuse[name] if name in reuse else open_store(spec, name)
                  for name, spec in plan.stores.items()}
        s = plan.settings
        sync = SyncSettings(s.sync_interval, max(4 * s.sync_interval, 1.0), s.reservation_lease)
        made = cls(stores, s.store_error_log_interval, s.store_retry_after, sync)
        made._specs = dict(plan.stores)
        if previous is not None:
            kept = [k for k in stores if k in reuse]
            made._health.update({k: previous._health[k] for k in kept})
            made._syncers.update({k: previous._syncers[k] for k in kept})
            made._pending.update({k: previous._pending[k] for k in kept})
        return made

    def bind_clock(self, clock: Callable[[], float]) -> None:
        for syncer in self._syncers.values():
            syncer.clock = clock

    def get(self, name: str) -> StoreView:
        return StoreView(self._stores[name], self._syncers[name])

    def store(self, name: str) -> CounterStore:
        return self._stores[name]

    def syncer(self, name: str) -> LeaseSyncer:
        return self._syncers[name]

    def health(self, name: str) -> StoreHealth:
        return self._health[name]

    def healths(self) -> list[StoreHealth]:
        """Every store's counters, for the metrics layer."""
        return list(self._health.values())

    def syncers(self) -> list[LeaseSyncer]:
        return list(self._syncers.values())

    async def settle(self, name: str, owner: str, settles: Sequence[Settle], now: float) -> None:
        item = _Pending(owner, tuple(settles), now)
        health = self._health[name]
        if health.is_down(now):
            self._keep(name, item)
            return
        if self._pending[name]:
            await self._flush(name, now)
        try:
            await self._stores[name].settle(owner, item.settles, now)
        except StoreError as exc:
            health.failed(now, exc)
            self._keep(name, item)
            return
        health.recovered()

    async def _flush(self, name: str, now: float) -> None:
        """Send the kept settles, oldest first; one task at a time pops them."""
        if name in self._flushing:
            return
        self._flushing.add(name)
        pending, store = self._pending[name], self._stores[name]
        try:
            while pending:
                item = pending[0]
                try:
                    await store.settle(item.owner, item.settles, item.now)
                except StoreError as exc:
                    self._health[name].failed(now, exc)
                    return
                pending.popleft()
        finally:
            self._flushing.discard(name)

    def _keep(self, name: str, item: _Pending) -> None:
        pending = self._pending[name]
        pending.append(item)
        while len(pending) > MAX_PENDING:
            pending.popleft()
            self._health[name].lost_settles += 1

    def pending(self, name: str) -> int:
        return len(self._pending[name])

    async def close(self, keep: StoreSet | None = None) -> None:
        """Flush and close the stores `keep` (the next version's set) does not use any more."""
        kept = {id(s) for s in keep._stores.values()} if keep else set()
        for name, store in self._stores.items():
            if id(store) in kept:
                continue
            if self._pending[name]:
                await self._flush(name, time.time())
            await self._syncers[name].close()
            await store.close()
