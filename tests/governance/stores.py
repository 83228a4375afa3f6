"""The three stores, each built fresh for one test (shared by the governance tests)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.fakes.redis_server import RedisServer

from semproxy.governance.memory_store import MemoryStore
from semproxy.governance.redis_store import RedisStore, RedisTarget
from semproxy.governance.sqlite_store import SqliteStore
from semproxy.governance.store import CounterStore

KINDS = ("memory", "sqlite", "redis")


@asynccontextmanager
async def open_store(kind: str, tmp_path: Path, redis: RedisServer | None
                     ) -> AsyncIterator[CounterStore]:
    store: CounterStore
    if kind == "memory":
        store = MemoryStore(keep_ledger=True)
    elif kind == "sqlite":
        store = SqliteStore(tmp_path / "spend.db")
    else:
        assert redis is not None
        store = RedisStore(RedisTarget(port=redis.port))
    try:
        yield store
    finally:
        await store.close()
