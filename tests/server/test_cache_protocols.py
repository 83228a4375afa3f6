"""Hits and misses through the gateway in every client protocol and mode: an answer stored
from a whole or a streamed answer is replayed whole or streamed, in the client's protocol,
with usage that says it was cached and an `Age` header; one upstream call in all."""

from __future__ import annotations

import aiohttp
import pytest
from tests.conftest import GatewayFactory
from tests.fakes import FakeAnthropic, FakeLLM
from tests.server.cache_env import Answer, ask, cached_config, settled

PROMPT = "what is the boiling point of water"


def text_of(protocol: str, answer: Answer, stream: bool) -> str:
    """The answer's text as the protocol's SDK would assemble it."""
    if not stream:
        data = answer.json()
        if protocol == "chat":
            return str(data["choices"][0]["message"]["content"])
        if protocol == "messages":
            return "".join(b["text"] for b in data["content"] if b["type"] == "text")
        return "".join(part["text"] for item in data["output"] if item["type"] == "message"
                       for part in item["content"])
    events = answer.events()
    if protocol == "chat":
        assert events[-1] == {"done": True}
        return "".join(c["choices"][0]["delta"].get("content") or ""
                       for c in events[:-1] if c["choices"])
    if protocol == "messages":
        assert events[-1]["type"] == "message_stop"
        return "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert events[-1]["type"] == "response.completed"
    return "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")


def cached_share(protocol: str, answer: Answer, stream: bool) -> tuple[int, int]:
    """(prompt tokens reported cached, prompt tokens) of the answer's usage."""
    if protocol == "chat":
        usage = answer.events()[-2]["usage"] if stream else answer.json()["usage"]
        return usage["prompt_tokens_details"]["cached_tokens"], usage["prompt_tokens"]
    if protocol == "messages":
        if stream:
            usage = next(e["usage"] for e in answer.events() if e["type"] == "message_delta")
        else:
            usage = answer.json()["usage"]
        cached = usage.get("cache_read_input_tokens", 0)
        return cached, usage["input_tokens"] + cached
    data = answer.events()[-1]["response"] if stream else answer.json()
    usage = data["usage"]
    return usage["input_tokens_details"]["cached_tokens"], usage["input_tokens"]


EXPECTED = f"[up] a-model: {PROMPT}"


@pytest.mark.parametrize("replayed", [False, True], ids=["replayed-whole", "replayed-stream"])
@pytest.mark.parametrize("stored", [False, True], ids=["stored-whole", "stored-stream"])
@pytest.mark.parametrize("protocol", ["chat", "messages", "responses"])
async def test_an_answer_is_replayed_in_the_clients_protocol_and_mode(
        gateway: GatewayFactory, http: aiohttp.ClientSession, protocol: str, stored: bool,
        replayed: bool) -> None:
    async with FakeLLM("up") as up:
        gw = await gateway(cached_config(up.url))
        first = await ask(http, gw, protocol, PROMPT, stored)
        assert first.status == 200 and first.cache == "MISS" and "Age" not in first.headers
        assert text_of(protocol, first, stored) == EXPECTED
        await settled(gw)
        second = await ask(http, gw, protocol, PROMPT, replayed)
        assert second.status == 200 and second.cache == "HIT-L1", second.raw
        assert len(up.posts) == 1  # the hit called no upstream
        assert second.headers["Age"] == second.headers["X-AI-Cache-Age"] == "0"
        assert text_of(protocol, second, replayed) == EXPECTED
        cached, prompt = cached_share(protocol, second, replayed)
        assert cached == prompt > 0
        type_ = second.headers["Content-Type"]
        assert type_.startswith("text/event-stream" if replayed else "application/json")


async def test_a_reworded_question_is_a_semantic_hit_with_its_similarity(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    async with FakeLLM("up") as up:
        gw = await gateway(cached_config(up.url))
        await ask(http, gw, "chat", "what is the capital of france")
        await settled(gw)
        hit = await ask(http, gw, "chat", "tell me the capital of france")
        assert hit.cache == "HIT-L2" and len(up.posts) == 1
        assert 0.53 <= float(hit.headers["X-AI-Cache-Similarity"]) < 1
        assert hit.json()["choices"][0]["message"]["content"].endswith(
            "what is the capital of france")
        assert hit.json()["semproxy_cache"]["layer"] == "semantic"
        # Not the debug headers: the route's debug switch is off.
        assert "X-AI-Cache-Layer" not in hit.headers


async def test_a_native_anthropic_answer_is_stored_and_replayed_to_both_protocols(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    async with FakeAnthropic("claude") as up:
        config = cached_config(up.url)
        config["routes"][0]["plugins"]["ai-proxy-multi"]["instances"] = [
            {"name": "a", "provider": "anthropic-messages", "weight": 1, "options": {"model": "c"},
             "override": {"endpoint": up.url}, "auth": {"header": {"x-api-key": "k"}}}]
        gw = await gateway(config)
        first = await ask(http, gw, "messages", PROMPT, True)  # native, streamed
        assert first.cache == "MISS"
        await settled(gw)
        again = await ask(http, gw, "messages", PROMPT)
        assert again.cache == "HIT-L1" and len(up.posts) == 1
        assert text_of("messages", again, False) == f"[claude] c: {PROMPT}"
        chat = await ask(http, gw, "chat", "why is the sky blue", True)  # Chat over Messages
        assert chat.cache == "MISS"
        await settled(gw)
        replay = await ask(http, gw, "chat", "why is the sky blue")
        assert replay.cache == "HIT-L1" and len(up.posts) == 2
        assert text_of("chat", replay, False) == "[claude] c: why is the sky blue"

