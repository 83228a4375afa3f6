"""`policy: redis-sentinel`: limits reach the master a real sentinel names, and follow it
to the replica the sentinel promotes when the master fails."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.fakes.redis_server import redis_available
from tests.governance.plans import Clock, document, governor
from tests.governance.sentinel import NAME, SentinelSet

from semproxy.governance.governor import RequestFacts
from semproxy.types import Usage


@pytest.fixture
def sentinels(tmp_path: Path) -> Iterator[SentinelSet]:
    if not redis_available():
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    found = SentinelSet(tmp_path)
    found.start()
    yield found
    found.stop()


async def test_limits_follow_the_master_through_a_sentinel_failover(
        sentinels: SentinelSet) -> None:
    clock = Clock()
    gov = governor(document({
        "policy": "redis-sentinel", "redis_master_name": NAME, "redis_timeout": 300,
        "redis_read_timeout": 300, "redis_connect_timeout": 300,
        "redis_sentinels": [{"host": "127.0.0.1", "port": sentinels.sentinel}],
        "limits": [{"requests": 50, "window": "hour", "on_store_error": "deny"}]}), clock)
    for _ in range(30):
        res = await gov.reserve(RequestFacts("r"))
        assert res.refusal is None
        await gov.commit(res, Usage(1, 1))
    limit = gov.plan.routes["r"].admit[0]
    reads = [f"{limit.id}|r|{limit.window.slots(clock.now).charge}"]
    assert await gov.stores.get(limit.store).used(reads, clock.now) == 30  # on the master
    sentinels.fail_master()
    clock.now += 2  # leases stale: the next request asks the store, which moved
    admitted, denied = 0, 0
    for _ in range(100):
        res = await gov.reserve(RequestFacts("r"))
        if res.refusal is None:
            admitted += 1
            await gov.commit(res, Usage(1, 1))
        elif res.refusal.status == 503:  # a try may meet the old master's dead connection
            denied += 1
            clock.now += 2
            await asyncio.sleep(0.1)
        else:
            break
    # The replica had the 30 (replicated before the failover): 20 more fit, then the limit.
    assert admitted == 20 and res.refusal is not None and res.refusal.status == 429
    assert denied <= 3
    await gov.stores.close()
