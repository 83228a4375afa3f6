"""Single flight: concurrent identical misses make one upstream call.

The first request to miss on a key leads: it calls upstream and must settle
the flight (`resolve` with the stored answer, or None when it got none that
may be shared). Requests that miss on the same key while it is in flight
follow: they wait for the leader's answer, up to their own deadline, and are
served it as a hit; when the leader fails or the wait is too long they call
upstream themselves (never worse than without the cache). The flight ends
when it is settled, so the next miss leads a new one. Streams fan out later,
by the relay waiting on the same flight.
"""

from __future__ import annotations

import asyncio
from typing import Generic, TypeVar

T = TypeVar("T")


class Flight(Generic[T]):
    """One request's part in a flight: `leader` calls upstream, the others `wait`."""

    def __init__(self, flights: SingleFlight[T], key: str, future: asyncio.Future[T | None],
                 leader: bool) -> None:
        self._flights = flights
        self._key = key
        self._future = future
        self.leader = leader

    async def wait(self, timeout_s: float) -> T | None:
        """The leader's answer, or None (it failed, or took longer than `timeout_s`)."""
        try:
            return await asyncio.wait_for(asyncio.shield(self._future), timeout_s)
        except TimeoutError:
            return None

    def resolve(self, value: T | None) -> None:
        """Settle the flight (leader only; a second call does nothing). Call it in a
        `finally`, with None on any failure, or the followers wait out their deadline."""
        if self.leader and not self._future.done():
            self._future.set_result(value)
            self._flights.end(self._key, self._future)


class SingleFlight(Generic[T]):
    """The flights in progress, by exact cache key."""

    def __init__(self) -> None:
        self._running: dict[str, asyncio.Future[T | None]] = {}

    def __len__(self) -> int:
        return len(self._running)

    def join(self, key: str) -> Flight[T]:
        """Lead a new flight on `key`, or follow the one in progress."""
        running = self._running.get(key)
        if running is not None:
            return Flight(self, key, running, leader=False)
        future: asyncio.Future[T | None] = asyncio.get_running_loop().create_future()
        self._running[key] = future
        return Flight(self, key, future, leader=True)

    def end(self, key: str, future: asyncio.Future[T | None]) -> None:
        if self._running.get(key) is future:
            del self._running[key]
