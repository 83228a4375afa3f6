"""Admission, instance quotas, clamping, commit and release through the Governor."""

from __future__ import annotations

from pathlib import Path

from tests.governance.plans import Clock, document, governor

from semproxy.governance.governor import RequestFacts
from semproxy.types import Usage


def key(name: str) -> dict[str, object]:
    return {"username": name, "plugins": {"key-auth": {"key": f"{name}-key-0123"}}}


async def test_a_token_limit_refuses_what_would_pass_it_and_resets_with_the_window() -> None:
    clock = Clock(1_800_000_000.0)  # a multiple of 60: the start of a minute
    gov = governor(document({"limits": [{"scope": "route", "total_tokens": 1000,
                                         "window": "minute"}]}), clock)
    first = await gov.reserve(RequestFacts("r", input_tokens=300, max_tokens=500))
    assert first.refusal is None and first.output == 500
    second = await gov.reserve(RequestFacts("r", input_tokens=300, max_tokens=500))
    assert second.refusal is not None and second.refusal.status == 429
    assert second.refusal.reason == "rate" and 59 <= second.refusal.retry_after_s <= 60
    await gov.commit(first, Usage(300, 100))  # used 400 of the 800 held
    assert (await gov.reserve(RequestFacts("r", input_tokens=300, max_tokens=300))).refusal \
        is None
    clock.now += 60
    assert (await gov.reserve(RequestFacts("r", input_tokens=300, max_tokens=700))).refusal \
        is None


async def test_clamp_lowers_max_tokens_to_what_the_budget_allows() -> None:
    gov = governor(document({"clamp_max_tokens": True, "clamp_min_tokens": 50,
                             "limits": [{"output_tokens": 1000, "window": 60}]}), Clock())
    first = await gov.reserve(RequestFacts("r", max_tokens=800))
    assert first.output == 800 and first.max_tokens is None  # the client's own value stands
    second = await gov.reserve(RequestFacts("r", max_tokens=800))
    assert second.refusal is None and second.output == 200 and second.max_tokens == 200
    third = await gov.reserve(RequestFacts("r", max_tokens=800))
    assert third.refusal is not None  # fewer than clamp_min_tokens left


async def test_a_request_without_max_tokens_gets_the_route_default_sent_upstream() -> None:
    gov = governor(document({"default_max_tokens": 256,
                             "limits": [{"total_tokens": 10_000, "window": 60}]}), Clock())
    res = await gov.reserve(RequestFacts("r", input_tokens=10))
    assert res.output == 256 and res.max_tokens == 256


async def test_an_instance_over_its_apisix_quota_is_skipped_and_the_next_serves() -> None:
    gov = governor(document({"instances": [{"name": "big", "limit": 100, "time_window": 60}],
                             "limit": 10_000, "time_window": 60}), Clock())
    res = await gov.reserve(RequestFacts("r", input_tokens=80, max_tokens=10))
    assert res.refusal is None
    assert await gov.reserve_instance(res, "big")
    await gov.commit(res, Usage(80, 10))
    nxt = await gov.reserve(RequestFacts("r", input_tokens=80, max_tokens=10))
    assert not await gov.reserve_instance(nxt, "big")  # 90 used + 90 asked > 100
    assert nxt.skipped is not None and nxt.skipped.limit.label == "big"
    assert await gov.reserve_instance(nxt, "small")  # under the route-wide `limit`
    assert nxt.refusal is None


async def test_a_group_budget_is_shared_by_its_consumers_across_routes(tmp_path: Path) -> None:
    groups = [{"id": "team", "plugins": {"ai-rate-limiting": {
        "limits": [{"money": 0.01, "window": "month"}]}}}]
    consumers = [{**key("alice"), "group_id": "team"}, {**key("bob"), "group_id": "team"}]
    gov = governor(document(None, consumers=consumers, groups=groups), Clock(),
                   str(tmp_path / "spend.db"))
    # worst price: 2 + 8 per million -> 1000 in + 500 out = 0.002 + 0.004 = $0.006
    a = await gov.reserve(RequestFacts("r", consumer="alice", input_tokens=1000,
                                       max_tokens=500))
    assert a.refusal is None and 0.59 < a.budget_fraction < 0.61
    b = await gov.reserve(RequestFacts("r", consumer="bob", input_tokens=1000, max_tokens=500))
    assert b.refusal is not None and b.refusal.reason == "quota"
    await gov.commit(a, Usage(1000, 100), "small")  # $0.0028 really spent
    b = await gov.reserve(RequestFacts("r", consumer="bob", input_tokens=1000, max_tokens=500))
    assert b.refusal is None
    await gov.stores.close()


async def test_release_gives_everything_back() -> None:
    gov = governor(document({"limits": [{"requests": 1, "window": 60},
                                        {"concurrent": 1}]}), Clock())
    res = await gov.reserve(RequestFacts("r"))
    assert (await gov.reserve(RequestFacts("r"))).refusal is not None
    await gov.release(res)
    assert (await gov.reserve(RequestFacts("r"))).refusal is None


async def test_a_rule_keyed_on_the_consumer_counts_each_consumer_apart() -> None:
    gov = governor(document({"rules": [{"key": "$consumer_name", "count": 10,
                                        "time_window": 60}]}), Clock())
    def facts(who: str | None) -> RequestFacts:
        return RequestFacts("r", consumer=who, input_tokens=5, max_tokens=5,
                            var=lambda name: who if name == "consumer_name" else None)
    assert (await gov.reserve(facts("alice"))).refusal is None
    assert (await gov.reserve(facts("alice"))).refusal is not None
    assert (await gov.reserve(facts("bob"))).refusal is None
    assert (await gov.reserve(facts(None))).refusal is None  # the key resolves to nothing
