"""When the semantic pick fails, the catchall is next: not whatever the balancer picks."""

from __future__ import annotations

import aiohttp
from tests.conftest import GatewayFactory, chat, instance
from tests.fakes import FakeEmbeddings, FakeLLM

from .conftest import ask, remote_embeddings, semantic_config


async def test_a_failing_match_falls_back_to_the_catchall(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    async with FakeLLM("code") as code:
        code.default_status = 500
        instances = [instance("default"), instance("code", code.url, examples=["python code"]),
                     instance("translate", examples=["translate"]),
                     instance("spare1"), instance("spare2")]
        config = semantic_config(remote_embeddings(embed.url), instances)
        config["routes"][0]["plugins"]["ai-proxy-multi"]["fallback_strategy"] = "http_5xx"
        gw = await gateway(config)
        answers = [await ask(http, gw, chat(f"python code {i}")) for i in range(6)]
    assert [(a.status, a.served_by) for a in answers] == [(200, "default")] * 6
    assert all(a.headers["X-AI-Semantic-Route"] == "code" for a in answers)
    assert code.calls >= 1


async def test_a_failing_match_falls_back_to_the_next_match_before_the_catchall(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    async with FakeLLM("code") as code:
        code.default_status = 500
        instances = [instance("default"), instance("spare"),
                     instance("code", code.url, examples=["code"]),
                     instance("translate", examples=["translate"])]
        config = semantic_config(remote_embeddings(embed.url), instances, threshold=0.2)
        config["routes"][0]["plugins"]["ai-proxy-multi"]["fallback_strategy"] = "http_5xx"
        gw = await gateway(config)
        answer = await ask(http, gw, chat("vec:0.96,0.28"))
    assert answer.headers["X-AI-Semantic-Scores"] == "code:0.9600,translate:0.2800"
    assert (answer.status, answer.served_by) == (200, "translate")
    assert code.calls == 1
