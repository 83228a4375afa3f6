"""The operator's view of the response cache on a served gateway: purges and explain over
the admin API (key required), the Prometheus metrics, the access line, and shadow mode."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from tests.conftest import instance, route_config
from tests.fakes import FakeLLM
from tests.server.cache_env import ask, settled

from semproxy.observability.logging import JsonFormatter

from .conftest import ADMIN_KEY, Served, ServeFactory, sample, scrape, with_admin

KEY = {"X-API-KEY": ADMIN_KEY}
KEYS = {"alice": "key-of-alice-0123", "bob": "key-of-bob-01234"}


def two_routes(url: str, mode: str = "on") -> dict[str, Any]:
    """Route `c1` (priced, key-auth) and route `c2`, both cached in one in-process store."""
    priced = instance("a", url, pricing={"input": 2.0, "output": 4.0})
    cache = {"layers": ["exact", "semantic"], "mode": mode}
    config = route_config([priced], uri="/v1/*", route_id="c1")
    config["routes"][0]["plugins"].update({"ai-cache": cache, "key-auth": {}})
    config["routes"].append({"id": "c2", "uri": "/other/*", "plugins": {
        "ai-proxy-multi": {"instances": [instance("a", url)]}, "ai-cache": cache}})
    config["consumers"] = [{"username": n, "plugins": {"key-auth": {"key": k}}}
                           for n, k in KEYS.items()]
    return with_admin(config)


async def other(http: aiohttp.ClientSession, served: Served, text: str) -> str | None:
    async with http.post(served.url + "/other/chat/completions", json={
            "model": "auto", "messages": [{"role": "user", "content": text}]}) as resp:
        return resp.headers.get("X-AI-Cache-Status")


async def call(http: aiohttp.ClientSession, method: str, url: str, body: Any = None,
               headers: dict[str, str] | None = None) -> tuple[int, Any]:
    async with http.request(method, url, json=body, headers=KEY if headers is None else headers
                            ) as resp:
        return resp.status, await resp.json()


async def test_purge_per_route_per_consumer_or_all_needs_the_admin_key(
        serve_file: ServeFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        served = await serve_file(two_routes(up.url))
        gw = served.running

        async def fill() -> None:
            for name in KEYS:
                await ask(http, gw, "chat", "what is the answer", headers={"apikey": KEYS[name]})
            await other(http, served, "what is the answer")
            await settled(gw)

        await fill()
        for headers in ({}, {"X-API-KEY": "wrong"}):
            status, _ = await call(http, "DELETE", served.admin + "/admin/cache", None, headers)
            assert status == 401
        status, body = await call(http, "DELETE",
                                  served.admin + "/admin/cache?route=c1&consumer=alice")
        assert status == 200 and body["removed"] >= 1
        alice = await ask(http, gw, "chat", "what is the answer",
                          headers={"apikey": KEYS["alice"]})
        bob = await ask(http, gw, "chat", "what is the answer", headers={"apikey": KEYS["bob"]})
        assert (alice.cache, bob.cache) == ("MISS", "HIT-L1")
        assert await other(http, served, "what is the answer") == "HIT-L1"
        await settled(gw)
        status, _ = await call(http, "DELETE", served.admin + "/admin/cache?route=c1")
        assert status == 200
        assert (await ask(http, gw, "chat", "what is the answer",
                          headers={"apikey": KEYS["bob"]})).cache == "MISS"
        assert await other(http, served, "what is the answer") == "HIT-L1"
        status, body = await call(http, "DELETE", served.admin + "/admin/cache")
        assert status == 200 and body["removed"] >= 1
        assert await other(http, served, "what is the answer") == "MISS"
        assert (await call(http, "DELETE", served.admin + "/admin/cache?route=zz"))[0] == 404


async def test_explain_says_what_the_cache_would_do(
        serve_file: ServeFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        served = await serve_file(two_routes(up.url))
        url = served.admin + "/admin/routes/c2/explain"
        status, body = await call(http, "POST", url, {"prompt": "what is the capital of chile"})
        assert status == 200 and body["cache"]["status"] == "MISS"
        assert body["cache"]["instance"] == "a" and body["cache"]["threshold"] == 0.53
        await other(http, served, "what is the capital of chile")
        await settled(served.running)
        _, body = await call(http, "POST", url, {"prompt": "tell me the capital of chile"})
        assert body["cache"]["status"] == "HIT-L2" and body["cache"]["similarity"] > 0.53
        _, body = await call(http, "POST", url, {"prompt": "what is the capital of peru"})
        assert body["cache"]["status"] == "MISS" and body["cache"]["refused"]
        _, body = await call(http, "POST", url, {"prompt": "what is the capital of chile",
                                                 "headers": {"Cache-Control": "no-store"}})
        assert body["cache"]["status"] == "BYPASS"
        # The explain call stored nothing and called no upstream.
        assert len(up.posts) == 1
        assert (await call(http, "POST", url, {"prompt": "x", "instance": "zz"}))[0] == 400


async def test_metrics_count_hits_by_layer_misses_stores_and_what_hits_saved(
        serve_file: ServeFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        served = await serve_file(two_routes(up.url))
        gw, alice = served.running, {"apikey": KEYS["alice"]}
        first = await ask(http, gw, "chat", "what is the capital of chile", headers=alice)
        await settled(gw)
        await ask(http, gw, "chat", "what is the capital of chile", headers=alice)
        await ask(http, gw, "chat", "tell me the capital of chile", headers=alice)
        await ask(http, gw, "chat", "hi", headers={**alice, "Cache-Control": "no-store"})
        await settled(gw)
        samples = await scrape(http, served.admin)
        usage = first.json()["usage"]

        def count(name: str, **labels: str) -> float:
            return sample(samples, name, route="c1", **labels)

        assert count("semproxy_cache_requests_total", result="hit", layer="exact") == 1
        assert count("semproxy_cache_requests_total", result="hit", layer="semantic") == 1
        assert count("semproxy_cache_requests_total", result="miss", layer="") == 1
        assert count("semproxy_cache_requests_total", result="bypass", layer="") == 1
        assert count("semproxy_cache_stores_total", outcome="stored") == 1
        saved = count("semproxy_cache_saved_tokens_total", kind="prompt")
        assert saved == 2 * usage["prompt_tokens"]
        money = count("semproxy_cache_saved_money_total")
        expected = 2 * (usage["prompt_tokens"] * 2.0 + usage["completion_tokens"] * 4.0) / 1e6
        assert money == pytest.approx(expected)
        # Hits spent no upstream tokens: the token counter saw the one miss only.
        tokens = sample(samples, "semproxy_tokens_total", route="c1", kind="prompt")
        assert tokens == usage["prompt_tokens"] + 1  # and the bypassed "hi"
        assert sample(samples, "semproxy_cache_bytes") > 0
        assert sample(samples, "semproxy_cache_entries") == 1  # hits and bypasses store none


def access_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    fmt = JsonFormatter()
    return [json.loads(fmt.format(r)) for r in caplog.records if r.name == "semproxy.access"]


async def test_shadow_mode_serves_from_upstream_and_measures_would_hits(
        serve_file: ServeFactory, http: aiohttp.ClientSession,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO")
    async with FakeLLM("up") as up:
        served = await serve_file(two_routes(up.url, mode="shadow"))
        for text in ("what is the capital of chile", "what is the capital of chile",
                     "tell me the capital of chile", "how tall is mount everest"):
            assert await other(http, served, text) == "MISS"
            await settled(served.running)
        assert len(up.posts) == 4  # every request was served by the upstream
        status, body = await call(http, "GET", served.admin + "/admin/cache/shadow")
        assert status == 200
        row = next(r for r in body["routes"] if r["route"] == "c2")
        assert row["requests"] == 4 and row["hits"] == {"exact": 1, "semantic": 1}
        assert row["would_hit"]["value"] == 0.5 and row["would_hit"]["n"] == 4
        assert row["wrong_hits"]["n"] == 2
        exact = next(r for r in body["records"] if r["layer"] == "exact")
        assert exact["answer_similarity"] == 1.0 and exact["wrong"] is False
        samples = await scrape(http, served.admin)
        assert sample(samples, "semproxy_cache_shadow_hits_total", route="c2",
                      layer="semantic") == 1
        lines = [line for line in access_lines(caplog) if line.get("route") == "c2"]
        assert [line["cache"].get("shadow") for line in lines] == [
            None, "HIT-L1", "HIT-L2", None]
        assert any(r.name == "semproxy.cache.shadow" for r in caplog.records)


async def test_the_cache_stores_credentials_are_masked_in_the_admin_view(
        serve_file: ServeFactory, http: aiohttp.ClientSession) -> None:
    config = route_config([instance("echo")], uri="/v1/*")
    config["routes"][0]["plugins"]["ai-cache"] = {
        "redis_host": "127.0.0.1", "redis_port": 1, "redis_password": "redis-SECRET-1",
        "layers": ["exact", "semantic"], "semantic": {"embedding": {"openai": {
            "endpoint": "https://api.openai.com/v1/embeddings", "api_key": "sk-SECRET-2"}}}}
    served = await serve_file(with_admin(config))
    status, body = await call(http, "GET", served.admin + "/admin/config")
    shown = json.dumps(body)
    assert status == 200 and "SECRET" not in shown
    cache = body["config"]["routes"][0]["plugins"]["ai-cache"]
    assert cache["redis_password"] == "******"
    assert cache["semantic"]["embedding"]["openai"]["api_key"] == "******"
