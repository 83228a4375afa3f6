"""Consistent hashing: the same key keeps landing on the same instance.

Used for session affinity (a conversation id, a user) so upstream prompt
caches stay warm. A hash ring with many virtual nodes per instance is chosen
over ``hash(key) % n`` because adding or removing one instance then moves
only the keys that belong to it, instead of reshuffling almost all of them.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Collection, Mapping, Sequence


def stable_hash(data: str) -> int:
    """A 64-bit hash that is identical across processes and restarts.

    Python's built-in ``hash()`` is salted per process, so two gateway workers
    would disagree about where a key lives; blake2b is stable and fast.
    """
    digest = hashlib.blake2b(data.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


class ConsistentHashPicker:
    """Map keys onto a hash ring of virtual nodes, weighted per instance.

    An instance of weight ``w`` owns ``w * points_per_weight`` points on the
    ring, so its share of keys follows its weight; weight 0 means no points.
    A key goes to the first point clockwise from its hash whose instance is
    usable; when an instance is excluded its keys spill over to the next
    instances on the ring while every other key stays put.
    """

    def __init__(self, weights: Mapping[str, int], points_per_weight: int = 160) -> None:
        if points_per_weight < 1:
            raise ValueError(f"points_per_weight must be >= 1, got {points_per_weight}")
        points: list[tuple[int, str]] = []
        for name, weight in weights.items():
            if weight < 0:
                raise ValueError(f"instance {name!r}: weight must be >= 0, got {weight}")
            points.extend(
                (stable_hash(f"{name}#{i}"), name) for i in range(weight * points_per_weight)
            )
        # Sorting on (hash, name) settles the astronomically rare hash
        # collision the same way in every process.
        points.sort()
        self._hashes = [h for h, _ in points]
        self._owners = [name for _, name in points]
        self._members = frozenset(self._owners)

    def pick(
        self, candidates: Sequence[str], *, key: str | None, exclude: Collection[str]
    ) -> str | None:
        """Return the owner of ``key`` among usable instances (``None`` key = "")."""
        usable = self._members.intersection(candidates).difference(exclude)
        if not usable:
            # Checked up front so the ring walk below always terminates early.
            return None
        start = bisect.bisect_left(self._hashes, stable_hash(key or ""))
        size = len(self._owners)
        for step in range(size):
            owner = self._owners[(start + step) % size]
            if owner in usable:
                return owner
        return None  # unreachable: every usable name owns at least one point
