"""The stores a plan names, opened once and kept across config versions.

`StoreSet.settle` never raises: a settle the store could not take is kept (up to
`MAX_PENDING`) and sent again before the next settle to that store succeeds,
so the counts are right once the store is back. Settling is idempotent per
reservation step, so a retry after an answer lost on the way back counts once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from semproxy.governance.health import StoreHealth
from semproxy.governance.memory_store import MemoryStore
from semproxy.governance.model import Settle
from semproxy.governance.plan import GovernancePlan, StoreSpec
from semproxy.governance.redis_store import RedisStore
from semproxy.governance.sqlite_store import SqliteStore
from semproxy.governance.store import CounterStore, SpendEntry, StoreError

MAX_PENDING = 10_000  # settles kept per store while it is unreachable


@dataclass(frozen=True, slots=True)
class _Pending:
    owner: str
    settles: tuple[Settle, ...]
    now: float
    entry: SpendEntry | None


def open_store(spec: StoreSpec, name: str) -> CounterStore:
    if spec.kind == "sqlite":
        assert spec.path is not None
        return SqliteStore(spec.path, name)
    if spec.kind == "redis":
        assert spec.redis is not None
        return RedisStore(spec.redis, name)
    return MemoryStore(name, keep_ledger=True)


class StoreSet:
    def __init__(self, stores: Mapping[str, CounterStore], log_interval_s: float = 60.0,
                 retry_after_s: float = 1.0) -> None:
        self._stores = dict(stores)
        self._health = {name: StoreHealth(name, log_interval_s, retry_after_s)
                        for name in stores}
        self._pending: dict[str, deque[_Pending]] = {name: deque() for name in stores}
        self._flushing: set[str] = set()

    @classmethod
    def for_plan(cls, plan: GovernancePlan, previous: StoreSet | None = None) -> StoreSet:
        """The plan's stores, reusing the previous version's where the spec is the same."""
        reuse = previous._stores if previous else {}
        stores = {name: reuse[name] if name in reuse else open_store(spec, name)
                  for name, spec in plan.stores.items()}
        settings = plan.settings
        made = cls(stores, settings.store_error_log_interval, settings.store_retry_after)
        if previous is not None:
            made._health.update({k: v for k, v in previous._health.items() if k in stores})
        return made

    def get(self, name: str) -> CounterStore:
        return self._stores[name]

    def health(self, name: str) -> StoreHealth:
        return self._health[name]

    def healths(self) -> list[StoreHealth]:
        """Every store's counters, for the metrics layer."""
        return list(self._health.values())

    async def settle(self, name: str, owner: str, settles: Sequence[Settle], now: float,
                     entry: SpendEntry | None) -> None:
        item = _Pending(owner, tuple(settles), now, entry)
        health = self._health[name]
        if health.is_down(now):
            self._keep(name, item)
            return
        if self._pending[name]:
            await self._flush(name, now)
        try:
            await self._stores[name].settle(owner, item.settles, now, entry)
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
                    await store.settle(item.owner, item.settles, item.now, item.entry)
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
        """Close the stores `keep` (the next version's set) does not use any more."""
        kept = {id(s) for s in keep._stores.values()} if keep else set()
        for store in self._stores.values():
            if id(store) not in kept:
                await store.close()
