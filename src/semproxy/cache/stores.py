"""The open response caches of one gateway worker, kept across config versions.

A config version is compiled whole, but the entries a cache holds must outlive
it: a reload that changes one route's threshold must not empty every route's
cache, and a Redis connection pool should not be opened again. So the gateway
owns one `CacheStores`; each version's routes ask it for the cache their
`ai-cache` block describes and get the same one while its store settings stay
the same. Routes whose store settings are equal share it (and, in memory, its
byte bound): their keys are apart by route unless `share_across_routes` joins
them, which needs exactly that sharing. A store no version uses any more is
closed when the next version is in place.

A change of an instance's model or options needs nothing here: it changes the
keys of that instance's requests (cache/keys.py), so its old entries are never
read again and leave by TTL or LRU.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Coroutine, Iterable
from typing import Any

from semproxy.cache.lookup import ResponseCache, open_cache
from semproxy.cache.memory import MemoryStore
from semproxy.cache.shadow import ShadowBook
from semproxy.config.cache import AICache

log = logging.getLogger("semproxy.cache")

# Writes and shadow comparisons run after the answer went out; past this many at once
# (a slow store under load) further ones are dropped and counted, never queued.
MAX_JOBS = 256

_REDIS_FIELDS = ("redis_host", "redis_port", "redis_username", "redis_password",
                 "redis_database", "redis_timeout", "redis_ssl", "redis_ssl_verify",
                 "redis_keepalive_pool", "deadline")


def store_identity(conf: AICache) -> str:
    """Equal for two blocks that may share one store; never holds the password itself."""
    if conf.store == "memory":
        return f"memory:{conf.memory_max_bytes}:{conf.deadline}"
    parts = [str(getattr(conf, name)) for name in _REDIS_FIELDS]
    return "redis:" + hashlib.sha256("\0".join(parts).encode()).hexdigest()


class CacheStores:
    """Open caches by store identity; see the module docstring."""

    def __init__(self) -> None:
        self._open: dict[str, ResponseCache] = {}
        self._jobs: set[asyncio.Task[None]] = set()
        self.dropped = 0  # jobs not run: MAX_JOBS were running
        self.shadow = ShadowBook()

    def get(self, conf: AICache) -> ResponseCache:
        identity = store_identity(conf)
        cache = self._open.get(identity)
        if cache is None:
            cache = self._open[identity] = open_cache(conf)
        return cache

    def all(self) -> list[ResponseCache]:
        return list(self._open.values())

    async def retain(self, confs: Iterable[AICache]) -> None:
        """Close the caches none of `confs` uses (the version now served no longer does)."""
        keep = {store_identity(c) for c in confs}
        for identity in [i for i in self._open if i not in keep]:
            await self._open.pop(identity).aclose()

    def memory_held(self) -> tuple[int, int, int]:
        """Bytes, entries and evictions of the in-process stores, summed."""
        stores = [c.backend.inner for c in self._open.values()
                  if isinstance(c.backend.inner, MemoryStore)]
        return (sum(s.bytes for s in stores), sum(len(s) for s in stores),
                sum(s.evictions for s in stores))

    def spawn(self, job: Coroutine[Any, Any, None]) -> None:
        """Run `job` (a store write, a shadow comparison) off the request's answer."""
        if len(self._jobs) >= MAX_JOBS:
            job.close()
            self.dropped += 1
            return
        task = asyncio.ensure_future(job)
        self._jobs.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._jobs.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("response cache: a background job failed",
                      exc_info=task.exception())

    async def drain(self) -> None:
        """Wait for the jobs running now (tests, shutdown)."""
        while self._jobs:
            await asyncio.gather(*list(self._jobs), return_exceptions=True)

    async def aclose(self) -> None:
        await self.drain()
        for cache in self._open.values():
            await cache.aclose()
        self._open.clear()
