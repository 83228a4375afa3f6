"""The governor over leases: few store calls, the store-error policy, unproven inputs one at
a time, and cost_expr limits."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.fakes.redis_server import RedisServer
from tests.governance.plans import Clock, document, governor

from semproxy.governance.counts import counts
from semproxy.governance.governor import RequestFacts
from semproxy.types import Usage

BUDGET = {"money": 100.0, "window": "month"}


async def test_a_thousand_requests_cost_a_handful_of_store_calls(tmp_path: Path) -> None:
    gov = governor(document({"limits": [{"total_tokens": 10**9, "window": "minute"}, BUDGET]}),
                   Clock(), str(tmp_path / "spend.db"))
    for _ in range(1000):
        res = await gov.reserve(RequestFacts("r", input_tokens=200, max_tokens=100))
        assert res.refusal is None
        await gov.commit(res, Usage(150, 80), "big")
    syncer = gov.stores.syncer("sqlite")
    assert syncer.syncs <= 12, syncer.syncs  # (one per request before leases)
    rows = await gov.stores.get("sqlite").spend("route", 0, 4e9)
    assert rows[0].requests == 1000 and rows[0].input == 150_000
    await gov.stores.close()


def audio() -> RequestFacts:
    return RequestFacts("r", input_tokens=500, max_tokens=100, input_proven=False)


async def test_unproven_inputs_run_one_at_a_time_against_a_budget(tmp_path: Path) -> None:
    doc = document({"limits": [BUDGET, {"requests": 100, "window": 60}]},
                   governance={"unbounded_input_wait": 0.2})
    gov = governor(doc, Clock(), str(tmp_path / "spend.db"))
    first = await gov.reserve(audio())
    assert first.refusal is None
    second = await gov.reserve(audio())  # waits 0.2 s for its turn, then is refused
    assert second.refusal is not None and second.refusal.status == 429
    assert second.refusal.busy and "cannot be counted in advance" in second.refusal.message
    text = await gov.reserve(RequestFacts("r", input_tokens=500, max_tokens=100))
    assert text.refusal is None  # requests with a proven bound are not held up
    queued = asyncio.ensure_future(gov.reserve(audio()))
    await asyncio.sleep(0.05)
    assert not queued.done()
    await gov.commit(first, Usage(9000, 100), "big")  # far over its bound: one request's error
    assert (await queued).refusal is None  # its turn came
    assert gov.refusals[("route.money.calendarmonth(UTC)", "busy")] == 1
    await gov.stores.close()


async def test_a_fresh_lease_serves_through_a_redis_outage_then_the_policy_decides(
        redis: RedisServer) -> None:
    clock = Clock()
    gov = governor(document({"policy": "redis", "redis_host": "127.0.0.1",
                             "redis_port": redis.port, "redis_timeout": 200,
                             "limits": [{"requests": 10_000, "window": "hour"}]}), clock)
    for _ in range(20):
        await gov.commit(await gov.reserve(RequestFacts("r")), Usage(1, 1))
    calls = gov.stores.syncer(gov.plan.routes["r"].admit[0].store)
    before = calls.syncs
    redis.stop()
    assert (await gov.reserve(RequestFacts("r"))).refusal is None  # its lease has room
    assert calls.syncs == before
    clock.now += 2  # the lease is stale: the store is asked, fails, the limit denies
    refused = await gov.reserve(RequestFacts("r"))
    assert refused.refusal is not None and refused.refusal.status == 503
    redis.start()
    clock.now += 5
    assert (await gov.reserve(RequestFacts("r"))).refusal is None
    await gov.stores.close()


async def test_an_expression_limit_holds_its_worst_case_and_charges_its_value(
        tmp_path: Path) -> None:
    gov = governor(document({"limit_strategy": "expression", "limit": 1000, "time_window": 60,
                             "cost_expr": "input_tokens + 4 * output_tokens"}), Clock(),
                   str(tmp_path / "spend.db"))
    res = await gov.reserve(RequestFacts("r", input_tokens=100, max_tokens=200))
    assert await gov.reserve_instance(res, "big")
    assert res.readings[-1].remaining == 1000 - (100 + 4 * 200)  # held: the worst case
    await gov.commit(res, Usage(80, 50), "big")
    nxt = await gov.reserve(RequestFacts("r", input_tokens=100, max_tokens=100))
    assert await gov.reserve_instance(nxt, "big")
    assert nxt.readings[-1].remaining == 1000 - (80 + 4 * 50) - (100 + 4 * 100)
    await gov.stores.close()


async def test_counters_for_the_metrics_layer_are_plain_ints(tmp_path: Path) -> None:
    gov = governor(document({"limits": [{"requests": 2, "window": 60}]}), Clock(),
                   str(tmp_path / "spend.db"))
    for _ in range(5):
        await gov.reserve(RequestFacts("r"))
    rows = {(c.name, c.labels): c.value for c in counts(gov)}
    assert rows[("semproxy_governance_refusals_total",
                 (("limit", "route.requests.60s"), ("reason", "rate")))] == 3
    assert rows[("semproxy_governance_syncs_total", (("store", "sqlite"),))] >= 1
    assert rows[("semproxy_governance_store_errors_total", (("store", "sqlite"),))] == 0
    await gov.stores.close()
