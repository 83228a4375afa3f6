"""A hostile or broken upstream answer is never stored: a stream cut short, an error status,
an error event inside a stream, a content-filter stop, a body that is not JSON, an answer
over `max_cache_body_size`, and a stream the client walked away from."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from tests.conftest import GatewayFactory
from tests.fakes import FakeLLM
from tests.server.cache_env import PATHS, ask, body, cached_config, settled

BROKEN = [
    ("a cut stream", "tell me a story chunks:6 breakstream:3", True),
    ("an error status", "tell me a story status:500", False),
    ("an error event", "tell me a story chunks:6 errorevent:2", True),
    ("a filtered stream", "tell me a story filter", True),
    ("a filtered answer", "tell me a story filter", False),
    ("garbage", "tell me a story garbage", False),
]


@pytest.mark.parametrize(("prompt", "stream"), [(p, s) for _, p, s in BROKEN],
                         ids=[name for name, _, _ in BROKEN])
async def test_a_broken_answer_is_never_stored(
        gateway: GatewayFactory, http: aiohttp.ClientSession, prompt: str, stream: bool) -> None:
    async with FakeLLM("up") as up:
        gw = await gateway(cached_config(up.url))
        for _ in range(2):
            answer = await ask(http, gw, "chat", prompt, stream)
            assert answer.cache == "MISS"
            await settled(gw)
        assert len(up.posts) == 2


async def test_an_answer_over_the_size_cap_is_not_stored(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        gw = await gateway(cached_config(up.url, {"max_cache_body_size": 64}))
        for stream in (False, True, False):
            answer = await ask(http, gw, "chat", "a question whose answer is long enough", stream)
            assert answer.status == 200 and answer.cache == "MISS"
            await settled(gw)
        assert len(up.posts) == 3


async def test_a_stream_the_client_left_is_not_stored(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        gw = await gateway(cached_config(up.url))
        prompt = "tell me a long story chunks:20 interval:50"
        async with http.post(gw.url + PATHS["chat"], json=body("chat", prompt, True)) as resp:
            await resp.content.readany()
        await up.wait_stream_cancelled()
        await asyncio.sleep(0.05)
        await settled(gw)
        assert (await ask(http, gw, "chat", prompt, False)).cache == "MISS"
