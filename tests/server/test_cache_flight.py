"""Single flight through the gateway: concurrent identical misses make one upstream call,
the others are served its answer, and streaming ones read its events as they arrive."""

from __future__ import annotations

import asyncio
import time

import aiohttp
from tests.conftest import GatewayFactory
from tests.fakes import FakeLLM
from tests.server.cache_env import PATHS, Answer, ask, body, cached_config, settled

SLOW = "what is the answer slow:300 chunks:10 interval:30"


async def test_fifty_concurrent_identical_misses_make_one_upstream_call(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        gw = await gateway(cached_config(up.url))
        answers = await asyncio.gather(*(ask(http, gw, "chat", SLOW, i % 2 == 1)
                                         for i in range(50)))
        assert len(up.posts) == 1
        assert all(a.status == 200 for a in answers)
        statuses = [a.cache for a in answers]
        assert statuses.count("MISS") == 1 and statuses.count("HIT-L1") == 49
        texts = {a.json()["choices"][0]["message"]["content"] for a in answers[0::2]}
        streamed = {"".join(c["choices"][0]["delta"].get("content") or ""
                            for c in a.events()[:-1] if c["choices"]) for a in answers[1::2]}
        assert texts == streamed == {f"[up] a-model: {SLOW}"}
        await settled(gw)
        assert len(gw.gateway.caches.all()[0].flights) == 0


async def first_byte(http: aiohttp.ClientSession, url: str, started: float) -> float:
    async with http.post(url, json=body("chat", SLOW, True)) as resp:
        await resp.content.readany()
        first = time.monotonic() - started
        await resp.read()
    return first


async def test_streaming_followers_get_the_leaders_events_as_they_come(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        gw = await gateway(cached_config(up.url))
        started = time.monotonic()
        firsts = await asyncio.gather(*(first_byte(http, gw.url + PATHS["chat"], started)
                                        for _ in range(10)))
        total = time.monotonic() - started
        assert len(up.posts) == 1
        # The stream lasts 300 ms + 10 chunks 30 ms apart; followers do not wait for its end.
        assert total > 0.55 and max(firsts) < total - 0.15, (firsts, total)


async def test_followers_call_upstream_themselves_when_the_leader_gets_no_answer(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        gw = await gateway(cached_config(up.url))
        broken = "what is it slow:200 status:503"
        answers: list[Answer] = await asyncio.gather(*(ask(http, gw, "chat", broken)
                                                       for _ in range(5)))
        # The leader's 503 is not shared: each follower asked the upstream itself.
        assert [a.status for a in answers] == [503] * 5 and len(up.posts) == 5


async def test_a_streaming_follower_of_a_broken_stream_gets_an_error_event(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        gw = await gateway(cached_config(up.url))
        cut = "what is it slow:100 chunks:6 interval:40 breakstream:3"
        answers = await asyncio.gather(*(ask(http, gw, "chat", cut, True) for _ in range(4)))
        assert len(up.posts) == 1 and all(a.status == 200 for a in answers)
        for answer in answers:
            assert b"data: [DONE]" not in answer.raw
            assert b"upstream" in answer.raw.split(b"data: ")[-1]  # the error event
        await settled(gw)
        again = await ask(http, gw, "chat", cut, True)  # nothing of it was stored
        assert again.cache == "MISS" and len(up.posts) == 2
