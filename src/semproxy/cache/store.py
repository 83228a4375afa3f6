"""The contract every cache store meets, and what it holds.

Two kinds of record: an `Entry` (a stored answer under its exact key) and, for
answers the semantic layer may serve, an index item in a partition (the
entry's key, the compared text's vector, the text itself for the near-miss
check, and when it was stored). A lookup by meaning reads one partition's
items (`candidates`), compares vectors in process, then reads the entry of
the best candidate that passes (`get`). Keeping vectors beside the entries and
comparing in process needs no vector-search module in the store: the price
is one read of the partition per lookup, which stays small because a
partition holds only requests alike in everything but the last user turn
(`semantic.max_entries` caps it, oldest out first).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True, slots=True)
class Entry:
    """A stored answer: a Chat Completions object as JSON, and its birth (unix seconds)."""

    body: bytes
    created: float


@dataclass(frozen=True, slots=True)
class IndexItem:
    """What a partition holds for one semantically reachable entry."""

    key: str
    vector: np.ndarray  # float32, L2-normalised
    prompt: str
    created: float


@dataclass(frozen=True, slots=True)
class Candidates:
    """A partition's live items, their vectors stacked in one (n, dim) matrix."""

    keys: Sequence[str]
    matrix: np.ndarray
    prompts: Sequence[str]
    created: Sequence[float]


class CacheStore(Protocol):
    """Where entries live. Every method may raise: the caller (`FailOpenStore`) turns
    any fault or slowness into a miss, so implementations need no error handling of
    their own beyond leaving their state consistent."""

    async def get(self, key: str) -> Entry | None: ...

    async def put(self, key: str, entry: Entry, ttl: int, partition: str | None = None,
                  item: IndexItem | None = None, index_ttl: int = 0,
                  max_items: int = 256) -> None:
        """Store `entry` for `ttl` s and, with a partition, index `item` there for
        `index_ttl` s (the partition keeps its newest `max_items`)."""

    async def candidates(self, partition: str, ttl: int) -> Candidates | None:
        """The items of `partition` stored less than `ttl` s ago, or None when none."""

    async def purge(self, pattern: str) -> int:
        """Remove entries and partitions whose key matches the glob; how many went."""

    async def aclose(self) -> None: ...


def stack(items: list[IndexItem]) -> Candidates | None:
    if not items:
        return None
    return Candidates(tuple(i.key for i in items), np.stack([i.vector for i in items]),
                      tuple(i.prompt for i in items), tuple(i.created for i in items))
