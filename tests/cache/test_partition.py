"""The in-process store's semantic partitions: rows appended, the oldest out first when a
partition is full, and the candidates a lookup holds never changed by later writes."""

from __future__ import annotations

import numpy as np

from semproxy.cache.memory import MemoryStore
from semproxy.cache.store import Entry, IndexItem


def item(i: int, created: float) -> IndexItem:
    vector = np.zeros(4, dtype=np.float32)
    vector[i % 4] = 1.0
    return IndexItem(f"k{i}", vector, f"prompt {i}", created)


async def put(store: MemoryStore, i: int, max_items: int = 3) -> None:
    await store.put(f"k{i}", Entry(b"{}", 1000.0 + i), 60, "p", item(i, 1000.0 + i), 60,
                    max_items)


async def test_a_full_partition_drops_its_oldest_item_and_entry() -> None:
    store = MemoryStore(1 << 20, clock=lambda: 1010.0)
    for i in range(5):
        await put(store, i)
    found = await store.candidates("p", 60)
    assert found is not None and list(found.keys) == ["k2", "k3", "k4"]
    assert [int(np.argmax(row)) for row in found.matrix] == [2, 3, 0]
    assert await store.get("k0") is None and await store.get("k4") is not None


async def test_candidates_held_by_a_lookup_never_change() -> None:
    store = MemoryStore(1 << 20, clock=lambda: 1010.0)
    for i in range(3):
        await put(store, i)
    held = await store.candidates("p", 60)
    assert held is not None
    before = held.matrix.copy()
    for i in range(3, 40):  # front removals, growth and compaction
        await put(store, i)
    await store.purge("k38")  # a removal from the middle
    assert np.array_equal(held.matrix, before) and list(held.keys) == ["k0", "k1", "k2"]
    now = await store.candidates("p", 60)
    assert now is not None and list(now.keys) == ["k37", "k39"]
    assert [int(np.argmax(row)) for row in now.matrix] == [1, 3]


async def test_items_older_than_the_ttl_leave_the_partition() -> None:
    clock = [1010.0]
    store = MemoryStore(1 << 20, clock=lambda: clock[0])
    for i in range(3):
        await put(store, i, max_items=10)
    clock[0] = 1061.5  # k0 (1000) and k1 (1001) are older than 60 s; k2 (1002) is not
    found = await store.candidates("p", 60)
    assert found is not None and list(found.keys) == ["k2"]
