"""Whose answer a request may get, and which answers are kept, through the gateway: the
tenant wall, near misses, the client's Cache-Control and `bypass_on`, the temperature cap,
tool calls and n > 1 (exact only), and a config change of an instance's model."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from tests.conftest import GatewayFactory, instance, route_config
from tests.fakes import FakeLLM
from tests.server.cache_env import ask, cached_config, settled

from semproxy.config.loader import load_data

KEYS = {name: f"key-of-{name}-0123" for name in ("alice", "bob", "carol")}


def tenants(url: str, cache: dict[str, Any] | None = None) -> dict[str, Any]:
    config = cached_config(url, cache)
    config["routes"][0]["plugins"]["key-auth"] = {}
    config["consumers"] = [{"username": n, "plugins": {"key-auth": {"key": k}}}
                           for n, k in KEYS.items()]
    return config


def as_(name: str) -> dict[str, str]:
    return {"apikey": KEYS[name]}


async def test_one_consumer_never_gets_anothers_answer(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        gw = await gateway(tenants(up.url))
        assert (await ask(http, gw, "chat", "what is our refund policy",
                          headers=as_("alice"))).cache == "MISS"
        await settled(gw)
        # Neither the same words nor a rewording crosses to another consumer.
        for name, question in (("bob", "what is our refund policy"),
                               ("carol", "tell me our refund policy")):
            other = await ask(http, gw, "chat", question, headers=as_(name))
            assert other.cache == "MISS"
            await settled(gw)
        assert len(up.posts) == 3
        again = await ask(http, gw, "chat", "what is our refund policy", headers=as_("alice"))
        assert again.cache == "HIT-L1" and len(up.posts) == 3


async def test_consumers_share_entries_only_when_the_route_says_so(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        shared = {"layers": ["exact", "semantic"], "cache_key": {"include_consumer": False}}
        gw = await gateway(tenants(up.url, shared))
        await ask(http, gw, "chat", "what is our refund policy", headers=as_("alice"))
        await settled(gw)
        bob = await ask(http, gw, "chat", "what is our refund policy", headers=as_("bob"))
        assert bob.cache == "HIT-L1" and len(up.posts) == 1


async def test_include_vars_split_entries_by_header(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        gw = await gateway(cached_config(up.url, {"cache_key": {
            "include_vars": ["http_x_tenant"]}}))
        await ask(http, gw, "chat", "hello", headers={"X-Tenant": "t1"})
        await settled(gw)
        other = await ask(http, gw, "chat", "hello", headers={"X-Tenant": "t2"})
        same = await ask(http, gw, "chat", "hello", headers={"X-Tenant": "t1"})
        assert (other.cache, same.cache) == ("MISS", "HIT-L1")


async def test_near_misses_are_misses_whatever_their_similarity(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    pairs = [("how many days are in march 2024", "how many days are in march 2023", "number"),
             ("is it safe to swim after eating", "is it not safe to swim after eating",
              "negation"),
             ("book a flight to paris on friday", "book a flight to london on friday", None),
             ("what does the function parse_config return",
              "what does the function load_config return", None)]
    async with FakeLLM("up") as up:
        gw = await gateway(cached_config(up.url, debug_headers=True))
        for stored, asked, reason in pairs:
            await ask(http, gw, "chat", stored)
            await settled(gw)
            found = await ask(http, gw, "chat", asked)
            assert found.cache == "MISS", (stored, asked)
            detail = found.headers.get("X-AI-Cache-Detail")
            assert detail is not None and (reason is None or detail == reason), detail
            assert float(found.headers["X-AI-Cache-Similarity"]) > 0.5
        assert len(up.posts) == 2 * len(pairs)


async def test_client_cache_control_and_bypass_rules(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        gw = await gateway(cached_config(up.url, {
            "bypass_on": [{"header": "X-Cache-Bypass", "equals": "1"}]}))
        nostore = await ask(http, gw, "chat", "q1", headers={"Cache-Control": "no-store"})
        await settled(gw)
        assert nostore.cache == "BYPASS" and (await ask(http, gw, "chat", "q1")).cache == "MISS"
        await settled(gw)
        rule = await ask(http, gw, "chat", "q1", headers={"X-Cache-Bypass": "1"})
        assert rule.cache == "BYPASS" and len(up.posts) == 3
        for refresh in ({"Cache-Control": "no-cache"}, {"Cache-Control": "max-age=0"},
                        {"Pragma": "no-cache"}):
            fresh = await ask(http, gw, "chat", "q1", headers=refresh)
            assert fresh.cache == "REFRESH"
        assert len(up.posts) == 6
        await settled(gw)
        young = await ask(http, gw, "chat", "q1", headers={"Cache-Control": "max-age=60"})
        assert young.cache == "HIT-L1"
        await asyncio.sleep(1.1)
        old = await ask(http, gw, "chat", "q1", headers={"Cache-Control": "max-age=1"})
        assert old.cache == "MISS" and len(up.posts) == 7


async def test_a_warm_request_skips_the_cache_and_tool_calls_hit_exactly_only(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        gw = await gateway(cached_config(up.url, {"layers": ["exact", "semantic"],
                                                  "max_temperature": 0.5}))
        warm = await ask(http, gw, "chat", "write a poem", temperature=0.9)
        await settled(gw)
        assert warm.cache == "BYPASS"
        assert (await ask(http, gw, "chat", "write a poem", temperature=0.9)).cache == "BYPASS"
        await ask(http, gw, "chat", "tool:weather what is the weather in paris today")
        await settled(gw)
        exact = await ask(http, gw, "chat", "tool:weather what is the weather in paris today")
        assert exact.cache == "HIT-L1"
        assert exact.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] \
            == "weather"
        reworded = await ask(http, gw, "chat", "tool:weather tell me the weather in paris today")
        assert reworded.cache == "MISS"
        await ask(http, gw, "chat", "what is the capital of italy", n=2)
        await settled(gw)
        assert (await ask(http, gw, "chat", "tell me the capital of italy", n=2)).cache == "MISS"
        assert (await ask(http, gw, "chat", "what is the capital of italy", n=2)).cache \
            == "HIT-L1"


async def test_a_change_of_the_instances_model_invalidates_its_entries_only(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        config = cached_config(up.url)
        gw = await gateway(config)
        await ask(http, gw, "chat", "what is the capital of peru")
        await settled(gw)
        config["routes"][0]["plugins"]["ai-proxy-multi"]["debug_headers"] = True
        await gw.gateway.apply(load_data(config))  # another version, same instance
        assert (await ask(http, gw, "chat", "what is the capital of peru")).cache == "HIT-L1"
        config["routes"][0]["plugins"]["ai-proxy-multi"]["instances"] = [
            instance("a", up.url, options={"model": "a-model-2"})]
        await gw.gateway.apply(load_data(config))
        changed = await ask(http, gw, "chat", "what is the capital of peru")
        assert changed.cache == "MISS" and len(up.posts) == 2
        assert changed.json()["model"] == "a-model-2"


async def test_a_route_without_the_plugin_has_no_cache_phase(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        gw = await gateway(route_config([instance("a", up.url)], uri="/v1/*"))
        assert gw.gateway.version.pipelines["r1"].cache is None
        first = await ask(http, gw, "chat", "hi")
        second = await ask(http, gw, "chat", "hi")
        assert "X-AI-Cache-Status" not in second.headers and first.status == 200
        assert len(up.posts) == 2


async def test_a_semantic_route_keeps_the_vector_routing_made_for_the_cache(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    """The cache's semantic layer compares the routing vector: routing embeds the prompt
    through the route's memory of recent vectors, where the lookup finds it. A request
    that bypasses the cache shows it: only routing embedded its prompt (routing that went
    past the memory left it empty, and every lookup embedded the prompt again)."""
    async with FakeLLM("up") as up:
        config = cached_config(up.url, balancer={"algorithm": "semantic", "threshold": 0.3},
                               embeddings={"provider": "local"})
        config["routes"][0]["plugins"]["ai-proxy-multi"]["instances"] = [
            instance("a", up.url, examples=["write a python function"]),
            instance("b", up.url, catchall=True)]
        gw = await gateway(config)
        route = gw.gateway.table.routes[0]
        assert route.recent is not None
        before = len(route.recent)
        prompt = "write a python function that reverses a list"
        answer = await ask(http, gw, "chat", prompt, headers={"Cache-Control": "no-store"})
        assert answer.cache == "BYPASS" and len(up.posts) == 1
        assert len(route.recent) == before + 1 and route.recent.recall(prompt) is not None
