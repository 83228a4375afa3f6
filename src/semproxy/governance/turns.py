"""Turns: this process's queue per exclusive marker, for requests whose input has no bound.

A request whose input cannot be bounded (tokens.py `InputBound.proven` False)
must be the only such request in flight against an input-dependent limit
(admission.py). Rather than refuse every such request that finds the limit's
marker taken, a process lines its own up here (first come, first served) and
only then asks the store, which settles the race between processes; a request
that does not get its turn within the wait is refused with a short Retry-After.
"""

from __future__ import annotations

import asyncio
import time


class Turns:
    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}  # marker -> (lock, users)

    async def take(self, markers: list[str], wait_s: float) -> bool:
        """Take every marker's turn (in sorted order), or none within `wait_s`."""
        deadline = time.monotonic() + wait_s
        taken: list[str] = []
        for name in sorted(markers):
            lock, users = self._locks.get(name) or (asyncio.Lock(), 0)
            self._locks[name] = (lock, users + 1)
            try:
                await asyncio.wait_for(lock.acquire(), max(deadline - time.monotonic(), 0.001))
            except TimeoutError:
                self._leave(name)
                self.give(taken)
                return False
            taken.append(name)
        return True

    def give(self, markers: list[str] | tuple[str, ...]) -> None:
        for name in markers:
            self._locks[name][0].release()
            self._leave(name)

    def _leave(self, name: str) -> None:
        lock, users = self._locks[name]
        if users <= 1:
            del self._locks[name]
        else:
            self._locks[name] = (lock, users - 1)
