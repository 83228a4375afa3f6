"""The in-process store: bounded by bytes, least recently used out first, with TTLs.

One replica, no server. Sizes are counted, not guessed per object: an entry
costs its body, its key twice (the table and the recency order), its index
item (vector, text) and a fixed `OVERHEAD` for the Python objects around them,
measured by `bench/cache_memory.py` (docs/en/cache.md gives the figure).
"""

from __future__ import annotations

import fnmatch
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from semproxy.cache.store import Candidates, Entry, IndexItem, stack

# Bytes of Python objects per entry beyond the payload sizes counted below
# (dict and OrderedDict slots, the dataclasses, float and str headers), measured
# with tracemalloc by bench/cache_memory.py and rounded up.
OVERHEAD = 1700


@dataclass(slots=True)
class _Slot:
    entry: Entry
    expires: float
    size: int
    partition: str | None = None


@dataclass(slots=True)
class _Partition:
    items: OrderedDict[str, IndexItem] = field(default_factory=OrderedDict)
    expires: float = 0.0
    stacked: Candidates | None = None  # rebuilt after a change, at the next read


class MemoryStore:
    """`CacheStore` in this process's memory."""

    def __init__(self, max_bytes: int, clock: Callable[[], float] = time.time) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.evictions = 0
        self._clock = clock
        self._slots: OrderedDict[str, _Slot] = OrderedDict()
        self._partitions: dict[str, _Partition] = {}

    def __len__(self) -> int:
        return len(self._slots)

    async def get(self, key: str) -> Entry | None:
        slot = self._slots.get(key)
        if slot is None:
            return None
        if slot.expires <= self._clock():
            self._drop(key)
            return None
        self._slots.move_to_end(key)
        return slot.entry

    async def put(self, key: str, entry: Entry, ttl: int, partition: str | None = None,
                  item: IndexItem | None = None, index_ttl: int = 0,
                  max_items: int = 256) -> None:
        self._drop(key)
        size = len(entry.body) + 2 * len(key) + OVERHEAD
        if item is not None:
            size += item.vector.nbytes + len(item.prompt.encode())
        if size > self.max_bytes:
            return
        now = self._clock()
        self._slots[key] = _Slot(entry, now + ttl, size, partition if item else None)
        self.bytes += size
        if partition is not None and item is not None:
            self._index(partition, item, now + index_ttl, max_items)
        while self.bytes > self.max_bytes:
            self._drop(next(iter(self._slots)))
            self.evictions += 1

    def _index(self, partition: str, item: IndexItem, expires: float, max_items: int) -> None:
        part = self._partitions.setdefault(partition, _Partition())
        part.items.pop(item.key, None)
        part.items[item.key] = item
        part.expires, part.stacked = max(part.expires, expires), None
        while len(part.items) > max_items:
            oldest = next(iter(part.items))
            self._drop(oldest)  # its entry too: it was stored for the semantic layer
            part.items.pop(oldest, None)

    async def candidates(self, partition: str, ttl: int) -> Candidates | None:
        part = self._partitions.get(partition)
        if part is None:
            return None
        now = self._clock()
        if part.expires <= now:
            del self._partitions[partition]
            return None
        if part.stacked is None or any(c <= now - ttl for c in part.stacked.created):
            live = [i for i in part.items.values() if i.created > now - ttl]
            part.stacked = stack(live)
        return part.stacked

    def _drop(self, key: str) -> None:
        slot = self._slots.pop(key, None)
        if slot is None:
            return
        self.bytes -= slot.size
        part = self._partitions.get(slot.partition) if slot.partition else None
        if part is not None and part.items.pop(key, None) is not None:
            part.stacked = None
            if not part.items:
                del self._partitions[slot.partition]  # type: ignore[arg-type]

    async def purge(self, pattern: str) -> int:
        gone = [k for k in self._slots if fnmatch.fnmatchcase(k, pattern)]
        for key in gone:
            self._drop(key)
        for name in [p for p in self._partitions if fnmatch.fnmatchcase(p, pattern)]:
            del self._partitions[name]
        return len(gone)

    async def aclose(self) -> None:
        self._slots.clear()
        self._partitions.clear()
        self.bytes = 0
