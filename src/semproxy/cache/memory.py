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
from dataclasses import dataclass

import numpy as np

from semproxy.cache.store import Candidates, Entry, IndexItem

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


class _Partition:
    """One partition's index items in the order they were stored, their vectors kept
    stacked: each item appends a row, so a lookup reads a view of the matrix instead
    of stacking every item again. Rows `[start, n)` are live; a row is never changed
    once a lookup may hold the view: the oldest item leaves by moving `start` (the
    common removal: a full partition drops its oldest), any other by copying the
    rest into a new matrix, and a full matrix is copied into a larger one."""

    __slots__ = ("_matrix", "_n", "_present", "_start", "created", "expires", "keys",
                 "prompts")

    def __init__(self) -> None:
        self.expires = 0.0
        self.keys: list[str] = []
        self.prompts: list[str] = []
        self.created: list[float] = []
        self._present: set[str] = set()
        self._matrix: np.ndarray | None = None
        self._start = self._n = 0

    def __len__(self) -> int:
        return len(self.keys)

    def add(self, item: IndexItem) -> None:
        self.remove(item.key)
        vector = item.vector
        matrix = self._matrix
        if matrix is None or self._n == len(matrix) or matrix.shape[1] != vector.shape[0]:
            matrix = self._moved(vector.shape[0], max(8, 2 * len(self.keys)))
        matrix[self._n] = vector
        self._n += 1
        self.keys.append(item.key)
        self.prompts.append(item.prompt)
        self.created.append(item.created)
        self._present.add(item.key)

    def _moved(self, dim: int, rows: int) -> np.ndarray:
        """The live rows copied to the front of a new matrix of `rows` rows."""
        new = np.empty((rows, dim), dtype=np.float32)
        old = self._matrix
        if old is not None and old.shape[1] == dim:
            live = self._n - self._start
            new[:live] = old[self._start:self._n]
            self._start, self._n = 0, live
        else:
            self._start = self._n = 0  # another dimension: old rows never compare again
            self.keys, self.prompts, self.created = [], [], []
            self._present = set()
        self._matrix = new
        return new

    def remove(self, key: str) -> bool:
        if key not in self._present:
            return False
        self._present.discard(key)
        i = self.keys.index(key)
        del self.keys[i], self.prompts[i], self.created[i]
        assert self._matrix is not None
        if i == 0:
            self._start += 1
            return True
        rest = np.empty_like(self._matrix)
        live = self._n - self._start
        rest[:i] = self._matrix[self._start:self._start + i]
        rest[i:live - 1] = self._matrix[self._start + i + 1:self._n]
        self._matrix, self._start, self._n = rest, 0, live - 1
        return True

    def candidates(self, cutoff: float) -> Candidates | None:
        """The items stored after `cutoff` (older ones leave the index)."""
        while self.created and self.created[0] <= cutoff:
            self.remove(self.keys[0])
        if not self.keys or self._matrix is None:
            return None
        return Candidates(tuple(self.keys), self._matrix[self._start:self._n],
                          tuple(self.prompts), tuple(self.created))


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
        return self.get_now(key)

    def get_now(self, key: str) -> Entry | None:
        """`get` without a coroutine: nothing here waits."""
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
        self.put_now(key, entry, ttl, partition, item, index_ttl, max_items)

    def put_now(self, key: str, entry: Entry, ttl: int, partition: str | None = None,
                item: IndexItem | None = None, index_ttl: int = 0,
                max_items: int = 256) -> None:
        """`put` without a coroutine."""
        if key in self._slots:
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
        part = self._partitions.get(partition)
        if part is None:
            part = self._partitions[partition] = _Partition()
        part.add(item)
        part.expires = max(part.expires, expires)
        while len(part) > max_items:
            oldest = part.keys[0]
            self._drop(oldest)  # its entry too: it was stored for the semantic layer
            part.remove(oldest)

    async def candidates(self, partition: str, ttl: int) -> Candidates | None:
        part = self._partitions.get(partition)
        if part is None:
            return None
        now = self._clock()
        if part.expires <= now:
            del self._partitions[partition]
            return None
        return part.candidates(now - ttl)

    def _drop(self, key: str) -> None:
        slot = self._slots.pop(key, None)
        if slot is None:
            return
        self.bytes -= slot.size
        part = self._partitions.get(slot.partition) if slot.partition else None
        if part is not None and part.remove(key) and not part:
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
