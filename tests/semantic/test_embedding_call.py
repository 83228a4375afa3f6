"""The embedding call itself: only configured credentials, and a breaker in front."""

from __future__ import annotations

import aiohttp
from tests.conftest import GatewayFactory, chat
from tests.fakes import FakeEmbeddings

from .conftest import ask, remote_embeddings, semantic_config


async def test_client_headers_never_reach_the_embedding_endpoint(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(semantic_config(remote_embeddings(embed.url)))
    answer = await ask(http, gw, chat("python code"), headers={
        "Authorization": "Bearer client-secret", "Cookie": "session=client-cookie",
        "X-Api-Key": "client-key"})
    assert answer.served_by == "code"
    assert embed.inputs_seen[-1] == "python code"
    assert len(embed.posts) == 2  # references, prompt
    for request in embed.posts:
        assert request.headers.getall("Authorization") == ["Bearer emb-key"]
        assert "Cookie" not in request.headers
        assert "X-Api-Key" not in request.headers
        assert "client" not in str(dict(request.headers))


async def test_an_open_breaker_fails_fast_to_the_catchall(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    config = semantic_config(remote_embeddings(embed.url, breaker_failures=2,
                                               breaker_cooldown=30))
    gw = await gateway(config)
    baseline = await ask(http, gw, {"model": "auto", "messages": [
        {"role": "system", "content": "no user text: nothing to embed"}]})
    hung = [await ask(http, gw, chat(f"python code EMB_HANG {i}")) for i in range(2)]
    assert [a.headers["X-AI-Semantic-Reason"] for a in hung] == ["embedding_timeout"] * 2
    assert all(a.seconds >= 0.3 for a in hung)
    calls = embed.calls
    fast = [await ask(http, gw, chat(f"python code {i}")) for i in range(3)]
    for answer in fast:
        assert (answer.status, answer.served_by) == (200, "default")
        assert answer.headers["X-AI-Semantic-Reason"] == "circuit_open"
        assert "X-AI-Semantic-Scores" not in answer.headers
        assert answer.seconds < 0.05
        assert answer.seconds < baseline.seconds + 0.04
    assert embed.calls == calls  # the open breaker does not touch the endpoint
