"""Any store fault is a miss: never an error, never a wait past the deadline.

Every call to the store runs under `deadline_s`; an exception or a timeout is
logged (once per `quiet_s`, not once per request) and answered as a miss, a
write as not written. After `breaker_failures` faults in a row the store is
not called at all for `breaker_cooldown_s`, so a dead Redis costs nothing per
request instead of one deadline each; then one call probes it again. One fault
is enough by default: a request then waits at most one deadline in all, not one
per store call of its lookup and its write. The in-process store is called
directly, without a deadline or the breaker: it cannot be slow or unreachable,
and a fault of it is still a miss.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from semproxy.cache.memory import MemoryStore
from semproxy.cache.store import CacheStore, Candidates, Entry, IndexItem
from semproxy.embeddings.breaker import CircuitBreaker

log = logging.getLogger("semproxy.cache")
T = TypeVar("T")


class FailOpenStore:
    """A `CacheStore` wrapper that never raises and never waits past its deadline."""

    def __init__(self, inner: CacheStore, deadline_s: float = 0.05, breaker_failures: int = 1,
                 breaker_cooldown_s: float = 1.0, quiet_s: float = 10.0) -> None:
        self.inner = inner
        # A store in this process's memory cannot be slow: no deadline to arm per call.
        self.is_local = isinstance(inner, MemoryStore)
        self._memory = inner if isinstance(inner, MemoryStore) else None
        self.deadline_s = deadline_s
        self.breaker = CircuitBreaker(breaker_failures, breaker_cooldown_s)
        self.faults = 0  # counted for metrics
        self._quiet_s = quiet_s
        self._last_log = -quiet_s

    async def _call(self, what: str, call: Callable[[], Awaitable[T]], default: T) -> T:
        if not self.breaker.allow():
            return default
        try:
            if self.is_local:
                result = await call()
            else:
                async with asyncio.timeout(self.deadline_s):
                    result = await call()
        except Exception as exc:  # fail-open: the cache must never fail a request
            self._fault(what, exc)
            return default
        self.breaker.record_success()
        return result

    def _fault(self, what: str, exc: Exception) -> None:
        self.faults += 1
        self.breaker.record_failure()
        now = time.monotonic()
        if now - self._last_log >= self._quiet_s:
            self._last_log = now
            reason = "timed out" if isinstance(exc, TimeoutError) else type(exc).__name__
            log.warning("response cache: %s %s; answering as a miss (fail-open)", what, reason)

    async def get(self, key: str) -> Entry | None:
        if self._memory is not None:
            return self.get_local(key)
        return await self._call("read", lambda: self.inner.get(key), None)

    def get_local(self, key: str) -> Entry | None:
        """`get` of the in-process store, without a coroutine (only when `is_local`)."""
        assert self._memory is not None
        try:
            return self._memory.get_now(key)
        except Exception as exc:  # fail-open: the cache must never fail a request
            self._fault("read", exc)
            return None

    async def put(self, key: str, entry: Entry, ttl: int, partition: str | None = None,
                  item: IndexItem | None = None, index_ttl: int = 0,
                  max_items: int = 256) -> bool:
        """True when written."""
        if self._memory is not None:
            return self.put_local(key, entry, ttl, partition, item, index_ttl, max_items)
        return await self._call("write", lambda: self._put(
            key, entry, ttl, partition, item, index_ttl, max_items), False)

    def put_local(self, key: str, entry: Entry, ttl: int, partition: str | None = None,
                  item: IndexItem | None = None, index_ttl: int = 0,
                  max_items: int = 256) -> bool:
        """`put` into the in-process store, without a coroutine (only when `is_local`)."""
        assert self._memory is not None
        try:
            self._memory.put_now(key, entry, ttl, partition, item, index_ttl, max_items)
        except Exception as exc:  # fail-open: an unwritten answer, never an error
            self._fault("write", exc)
            return False
        return True

    async def _put(self, key: str, entry: Entry, ttl: int, partition: str | None,
                   item: IndexItem | None, index_ttl: int, max_items: int) -> bool:
        await self.inner.put(key, entry, ttl, partition, item, index_ttl, max_items)
        return True

    async def candidates(self, partition: str, ttl: int) -> Candidates | None:
        return await self._call("semantic read",
                                lambda: self.inner.candidates(partition, ttl), None)

    async def purge(self, pattern: str) -> int:
        """Not under the deadline (an operator's request, not a client's), but never raising;
        -1 when the store could not be reached."""
        try:
            return await self.inner.purge(pattern)
        except Exception as exc:  # fail-open: report, never crash the admin API
            self._fault("purge", exc)
            return -1

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        except Exception as exc:  # closing a broken connection must not fail shutdown
            log.debug("response cache: closing the store: %s", exc)

