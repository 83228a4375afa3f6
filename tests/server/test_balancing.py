"""Balancing through the running gateway: weighted round-robin, chash, priority tiers."""

from __future__ import annotations

import aiohttp
from tests.conftest import GatewayFactory, chat, instance, route_config
from tests.fakes import FakeLLM

CHAT = "/v1/chat/completions"


async def served_by(http: aiohttp.ClientSession, url: str,
                    headers: dict[str, str] | None = None) -> str:
    async with http.post(f"{url}{CHAT}", json=chat("hi"), headers=headers) as resp:
        assert resp.status == 200, await resp.text()
        name = resp.headers["X-AI-Instance"]
        content = (await resp.json())["choices"][0]["message"]["content"]
    assert content.startswith(f"[{name}] ")
    return name


async def test_weights_3_to_1_give_the_smooth_round_robin_sequence(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    gw = await gateway(route_config([instance("a", weight=3), instance("b", weight=1)],
                                    debug_headers=True))
    picks = [await served_by(http, gw.url) for _ in range(8)]
    assert picks == ["a", "a", "b", "a", "a", "a", "b", "a"]


async def test_weight_0_instance_is_never_picked(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    gw = await gateway(route_config(
        [instance("a"), instance("idle", weight=0), instance("b")], debug_headers=True))
    picks = {await served_by(http, gw.url) for _ in range(12)}
    assert picks == {"a", "b"}


async def test_chash_on_a_header_keeps_one_key_on_one_instance_and_spreads_keys(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    gw = await gateway(route_config(
        [instance("a"), instance("b"), instance("c")], debug_headers=True,
        balancer={"algorithm": "chash", "hash_on": "header", "key": "X-Session"}))
    for session in ("alice", "bob", "carol"):
        seen = {await served_by(http, gw.url, {"X-Session": session}) for _ in range(6)}
        assert len(seen) == 1, (session, seen)
    owners = {await served_by(http, gw.url, {"X-Session": f"user-{i}"}) for i in range(30)}
    assert len(owners) >= 2


async def test_lower_priority_tier_serves_only_when_the_higher_tier_is_down(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    async with FakeLLM("primary") as primary, FakeLLM("standby") as standby:
        gw = await gateway(route_config(
            [instance("standby", standby.url, priority=0),
             instance("primary", primary.url, priority=10)], debug_headers=True))
        assert [await served_by(http, gw.url) for _ in range(4)] == ["primary"] * 4
        assert standby.posts == []
        await primary.close()  # its port now refuses connections
        assert await served_by(http, gw.url) == "standby"
        assert len(standby.posts) == 1


async def test_failover_across_tiers_is_reported_in_the_debug_header(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    async with FakeLLM("standby") as standby:
        dead = FakeLLM("dead")
        await dead.start()
        dead_url = dead.url
        await dead.close()
        gw = await gateway(route_config(
            [instance("dead", dead_url, priority=1), instance("standby", standby.url)],
            debug_headers=True))
        async with http.post(f"{gw.url}{CHAT}", json=chat("hi")) as resp:
            assert resp.status == 200
            assert resp.headers["X-AI-Instance"] == "standby"
            assert resp.headers["X-AI-Failover"] == "dead>standby"


async def test_instance_header_is_absent_unless_debug_headers_is_on(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    quiet = await gateway(route_config([instance("a")]))
    loud = await gateway(route_config([instance("a")], debug_headers=True))
    async with http.post(f"{quiet.url}{CHAT}", json=chat("hi")) as resp:
        assert resp.status == 200
        assert "X-AI-Instance" not in resp.headers
    async with http.post(f"{loud.url}{CHAT}", json=chat("hi")) as resp:
        assert resp.status == 200
        assert resp.headers["X-AI-Instance"] == "a"
