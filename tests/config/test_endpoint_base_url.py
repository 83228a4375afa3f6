"""`override.endpoint` as a base URL (`http://host:8000/v1`, how SDKs, vLLM, Ollama and
LiteLLM's `api_base` write it): the provider's API path is completed, not replaced."""

from __future__ import annotations

import aiohttp
from tests.conftest import GatewayFactory, chat, instance, route_config
from tests.fakes import FakeEmbeddings, FakeLLM


async def test_a_v1_base_url_gets_the_chat_path(
    gateway: GatewayFactory, http: aiohttp.ClientSession,
) -> None:
    async with FakeLLM("a") as llm:
        for endpoint in (llm.url + "/v1", llm.url + "/v1/"):
            gw = await gateway(route_config([instance("a", endpoint)]))
            async with http.post(gw.url + "/v1/chat/completions", json=chat("hi")) as resp:
                assert resp.status == 200
            assert llm.last_request.path == "/v1/chat/completions"


async def test_a_base_url_under_a_prefix_keeps_the_prefix(
    gateway: GatewayFactory, http: aiohttp.ClientSession,
) -> None:
    async with FakeLLM("a") as llm:
        gw = await gateway(route_config([instance("a", llm.url + "/proxy/v1")]))
        async with http.post(gw.url + "/v1/chat/completions", json=chat("hi")) as resp:
            assert resp.status == 200
        assert llm.last_request.path == "/proxy/v1/chat/completions"


async def test_a_full_url_is_used_as_given(
    gateway: GatewayFactory, http: aiohttp.ClientSession,
) -> None:
    async with FakeLLM("a") as llm:
        gw = await gateway(route_config([instance("a", llm.url + "/custom/chat")]))
        async with http.post(gw.url + "/v1/chat/completions", json=chat("hi")) as resp:
            assert resp.status == 200
        assert llm.last_request.path == "/custom/chat"


async def test_an_embeddings_base_url_gets_the_embeddings_path(
    gateway: GatewayFactory, http: aiohttp.ClientSession,
) -> None:
    async with FakeEmbeddings() as embed:
        config = route_config(
            [instance("default"), instance("code", examples=["write a python function"])],
            balancer={"algorithm": "semantic", "threshold": 0.5},
            embeddings={"provider": "openai-compatible",
                        "override": {"endpoint": embed.url + "/v1"}})
        gw = await gateway(config)
        async with http.post(gw.url + "/v1/chat/completions", json=chat("python please")
                             ) as resp:
            assert resp.status == 200
        assert embed.posts and {r.path for r in embed.posts} == {"/v1/embeddings"}
