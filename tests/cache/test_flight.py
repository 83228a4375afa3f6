"""Single flight: 50 concurrent identical misses, one upstream call."""

from __future__ import annotations

import asyncio

from semproxy.cache.flight import SingleFlight


async def test_fifty_concurrent_misses_make_one_call() -> None:
    flights: SingleFlight[dict[str, str]] = SingleFlight()
    calls = 0

    async def request() -> dict[str, str] | None:
        nonlocal calls
        flight = flights.join("k")
        if not flight.leader:
            return await flight.wait(5)
        try:
            calls += 1
            await asyncio.sleep(0.05)  # the upstream call
            answer = {"answer": "42"}
            flight.resolve(answer)
            return answer
        finally:
            flight.resolve(None)

    answers = await asyncio.gather(*(request() for _ in range(50)))
    assert calls == 1 and all(a == {"answer": "42"} for a in answers) and len(flights) == 0


async def test_followers_get_none_when_the_leader_fails_or_is_slow() -> None:
    flights: SingleFlight[str] = SingleFlight()
    leader, follower = flights.join("k"), flights.join("k")
    assert leader.leader and not follower.leader
    assert await follower.wait(0.01) is None
    leader.resolve(None)
    assert await follower.wait(1) is None and flights.join("k").leader
