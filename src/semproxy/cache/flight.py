"""Single flight: concurrent identical misses make one upstream call.

The first request to miss on a key leads: it calls upstream and must settle
the flight (`resolve` with the stored answer, or None when it got none that
may be shared). Requests that miss on the same key while it is in flight
follow: they wait for the leader's answer, up to their own deadline, and are
served it as a hit; when the leader fails or the wait is too long they call
upstream themselves (never worse than without the cache). The flight ends
when it is settled, so the next miss leads a new one.

Streams fan out: a streaming leader `publish`es each run of Chat Completions
events as it relays them, and a streaming follower reads them as they come
(`events`), from the first one, instead of waiting for the whole answer. If the
leader's stream then breaks, a follower that has not read anything yet calls
upstream itself; one that has is told so (`FlightBroken`), as the leader's own
client is.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Generic, TypeVar

T = TypeVar("T")


class FlightBroken(Exception):
    """The leader's stream ended without an answer after a follower had read part of it."""


class _State(Generic[T]):
    """What a flight's leader and followers share. The future a follower waits on, and
    the event a streaming follower waits for, are made when one first waits: most
    flights have no follower, and a miss then pays for neither."""

    __slots__ = ("_changed", "_future", "chunks", "done", "value")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []  # published events, in order
        self.done = False
        self.value: T | None = None
        self._future: asyncio.Future[T | None] | None = None
        self._changed: asyncio.Event | None = None

    def future(self) -> asyncio.Future[T | None]:
        """Done with the answer once the flight is settled."""
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
            if self.done:
                self._future.set_result(self.value)
        return self._future

    def changed(self) -> asyncio.Event:
        """What the next publish (or the end) sets."""
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    def settle(self, value: T | None) -> None:
        self.done, self.value = True, value
        if self._future is not None and not self._future.done():
            self._future.set_result(value)
        if self._changed is not None:  # wake, without a call
            self._changed.set()
            self._changed = None

    def wake(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None


class Flight(Generic[T]):
    """One request's part in a flight: `leader` calls upstream, the others `wait`."""

    __slots__ = ("_flights", "_key", "_state", "leader")

    def __init__(self, flights: SingleFlight[T], key: str, state: _State[T],
                 leader: bool) -> None:
        self._flights = flights
        self._key = key
        self._state = state
        self.leader = leader

    async def wait(self, timeout_s: float) -> T | None:
        """The leader's answer, or None (it failed, or took longer than `timeout_s`)."""
        try:
            return await asyncio.wait_for(asyncio.shield(self._state.future()), timeout_s)
        except TimeoutError:
            return None

    def settled(self) -> T | None:
        """The leader's answer if the flight is settled with one, else None (no wait)."""
        return self._state.value if self._state.done else None

    def resolve(self, value: T | None) -> None:
        """Settle the flight (leader only; a second call does nothing). Call it in a
        `finally`, with None on any failure, or the followers wait out their deadline."""
        state = self._state
        if self.leader and not state.done:
            state.settle(value)
            running = self._flights.running
            if running.get(self._key) is state:  # `SingleFlight.end`, without a call
                del running[self._key]

    def publish(self, chunk: bytes) -> None:
        """A run of the leader's stream events, for streaming followers (leader only)."""
        if self.leader and not self._state.done:
            self._state.chunks.append(chunk)
            self._state.wake()

    async def started(self, timeout_s: float) -> bool:
        """Wait until the leader published a first event or settled the flight; True when
        there are events to read (a streaming leader), False otherwise (then `wait`)."""
        state = self._state
        try:
            async with asyncio.timeout(timeout_s):
                while not state.chunks and not state.done:
                    await state.changed().wait()
        except TimeoutError:
            return False
        return bool(state.chunks)

    async def events(self, timeout_s: float) -> AsyncIterator[bytes]:
        """Every event the leader publishes, from the first; ends when the flight is settled
        with an answer, raises `FlightBroken` when it is settled without one, and
        `TimeoutError` when nothing new comes for `timeout_s`."""
        state, read = self._state, 0
        while True:
            while read < len(state.chunks):
                read += 1
                yield state.chunks[read - 1]
            if state.done:
                if state.value is None:
                    raise FlightBroken("the leader's stream ended without an answer")
                return
            changed = state.changed()
            async with asyncio.timeout(timeout_s):
                await changed.wait()


class SingleFlight(Generic[T]):
    """The flights in progress, by exact cache key."""

    def __init__(self) -> None:
        self.running: dict[str, _State[T]] = {}  # by key (read by `Flight.resolve`)

    def __len__(self) -> int:
        return len(self.running)

    def join(self, key: str) -> Flight[T]:
        """Lead a new flight on `key`, or follow the one in progress."""
        running = self.running.get(key)
        if running is not None:
            return Flight(self, key, running, leader=False)
        state: _State[T] = _State()
        self.running[key] = state
        return Flight(self, key, state, leader=True)
