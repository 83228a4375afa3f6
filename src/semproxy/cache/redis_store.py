"""The Redis store: entries shared by every replica, kept across restarts.

Plain Redis (Debian's `redis-server` has no vector-search module), so:

- an entry is a string key (`SET ... EX ttl`): header JSON, a newline, the body;
- a partition is a hash: field = entry key, value = when it was stored, the
  vector (float32) and the compared text; the hash expires `semantic.ttl` after
  its last write, items older than that are skipped on read and removed;
- a semantic lookup is `HGETALL` of one partition and a matrix product in process.

How it scales: a lookup moves the partition's items over the network, about
1.1 KiB per item with the 256-dimension default model (1.6 KiB with MiniLM's
384), and `semantic.max_entries` (default 256) bounds a partition. Partitions
are narrow (one route, instance, consumer, parameters and conversation so far),
so most hold a handful of items; a route whose traffic puts thousands of
distinct prompts into one partition should lower `max_entries` or use the
exact layer only. Memory is bounded by the TTLs, the partition cap, the size
cap on bodies and the server's own `maxmemory` (set `maxmemory-policy
allkeys-lru` so Redis evicts rather than refuses). An answer written by one
replica is visible to the next read on any other: nothing is cached in process.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable

import numpy as np
import orjson
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from semproxy.cache.store import Candidates, Entry, IndexItem, stack
from semproxy.config.cache import AICache

_ITEM_HEAD = struct.Struct("<dI")  # created (unix s), vector length
_SCAN_BATCH = 500


def connect(conf: AICache) -> aioredis.Redis:
    """A pooled client for the `redis_*` fields (APISIX's names and units, ms)."""
    timeout = conf.redis_timeout / 1000
    return aioredis.Redis(
        host=conf.redis_host or "127.0.0.1", port=conf.redis_port, db=conf.redis_database,
        username=conf.redis_username, password=conf.redis_password,
        ssl=conf.redis_ssl, ssl_cert_reqs="required" if conf.redis_ssl_verify else "none",
        socket_timeout=timeout, socket_connect_timeout=timeout,
        max_connections=conf.redis_keepalive_pool, health_check_interval=0,
        # No retries: a cache read is worth one try within its deadline, not three.
        retry=Retry(NoBackoff(), 0), decode_responses=False)


def encode_entry(entry: Entry) -> bytes:
    return orjson.dumps({"created": entry.created}) + b"\n" + entry.body


def decode_entry(blob: bytes) -> Entry:
    head, _, body = blob.partition(b"\n")
    return Entry(body, float(orjson.loads(head)["created"]))


def encode_item(item: IndexItem) -> bytes:
    vector = np.ascontiguousarray(item.vector, dtype="<f4")
    return _ITEM_HEAD.pack(item.created, len(vector)) + vector.tobytes() + item.prompt.encode()


def decode_item(key: str, blob: bytes) -> IndexItem:
    created, dim = _ITEM_HEAD.unpack_from(blob)
    start = _ITEM_HEAD.size
    vector = np.frombuffer(blob, dtype="<f4", count=dim, offset=start).astype(np.float32)
    prompt = blob[start + 4 * dim:].decode()
    return IndexItem(key, vector, prompt, created)


def _raw(value: bytes | str) -> bytes:
    # The client is made with decode_responses=False, so replies are bytes; the
    # library's types allow str for clients made the other way.
    return value if isinstance(value, bytes) else value.encode()


class RedisStore:
    """`CacheStore` on one Redis server (APISIX `policy: redis`)."""

    def __init__(self, client: aioredis.Redis, clock: Callable[[], float] = time.time) -> None:
        self._redis = client
        self._clock = clock

    async def get(self, key: str) -> Entry | None:
        blob = await self._redis.get(key)
        return decode_entry(_raw(blob)) if blob is not None else None

    async def put(self, key: str, entry: Entry, ttl: int, partition: str | None = None,
                  item: IndexItem | None = None, index_ttl: int = 0,
                  max_items: int = 256) -> None:
        pipe = self._redis.pipeline(transaction=False)
        pipe.set(key, encode_entry(entry), ex=ttl)
        if partition is not None and item is not None:
            pipe.hset(partition, key, encode_item(item))
            pipe.expire(partition, index_ttl)
            pipe.hlen(partition)
        replies = await pipe.execute()
        if partition is not None and int(replies[-1]) > max_items:
            await self._trim(partition, max_items)

    async def _trim(self, partition: str, max_items: int) -> None:
        """Drop the oldest items (and their entries) beyond `max_items`."""
        items = await self._items(partition)
        items.sort(key=lambda i: i.created)
        old = [i.key for i in items[:len(items) - max_items]]
        if old:
            await self._redis.hdel(partition, *old)
            await self._redis.unlink(*old)

    async def _items(self, partition: str) -> list[IndexItem]:
        raw = await self._redis.hgetall(partition)
        return [decode_item(_raw(k).decode(), _raw(v)) for k, v in raw.items()]

    async def candidates(self, partition: str, ttl: int) -> Candidates | None:
        items = await self._items(partition)
        cutoff = self._clock() - ttl
        stale = [i.key for i in items if i.created <= cutoff]
        if stale:
            await self._redis.hdel(partition, *stale)
        return stack([i for i in items if i.created > cutoff])

    async def purge(self, pattern: str) -> int:
        removed = 0
        batch: list[bytes] = []
        async for key in self._redis.scan_iter(match=pattern, count=_SCAN_BATCH):
            batch.append(key)
            if len(batch) >= _SCAN_BATCH:
                removed += await self._redis.unlink(*batch)
                batch = []
        if batch:
            removed += await self._redis.unlink(*batch)
        return removed

    async def aclose(self) -> None:
        await self._redis.aclose()
