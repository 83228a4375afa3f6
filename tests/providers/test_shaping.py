"""What reaches the upstream: URL, auth and body, recorded by a real FakeLLM."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config
from tests.fakes import FakeLLM


@pytest.fixture
async def up() -> AsyncIterator[FakeLLM]:
    async with FakeLLM("up") as server:
        yield server


async def test_openai_compatible_host_endpoint_posts_to_v1_chat_completions(
    gateway: GatewayFactory, http: aiohttp.ClientSession, up: FakeLLM
) -> None:
    gw = await gateway(route_config([instance("a", up.url)]))
    async with http.post(f"{gw.url}/v1/chat/completions", json=chat("hi")) as resp:
        assert resp.status == 200
    (rec,) = up.posts
    assert rec.path == "/v1/chat/completions"
    assert rec.query == {}


async def test_endpoint_with_a_full_path_is_used_as_given(
    gateway: GatewayFactory, http: aiohttp.ClientSession, up: FakeLLM
) -> None:
    gw = await gateway(route_config([instance("a", f"{up.url}/serving/v2/chat")]))
    async with http.post(f"{gw.url}/v1/chat/completions", json=chat("hi")) as resp:
        assert resp.status == 200
    assert up.last_request.path == "/serving/v2/chat"


async def test_azure_host_only_endpoint_uses_deployment_path_without_model_in_body(
    gateway: GatewayFactory, http: aiohttp.ClientSession, up: FakeLLM
) -> None:
    azure = {"name": "az", "provider": "azure-openai", "weight": 1,
             "override": {"endpoint": up.url}, "options": {"model": "gpt4o-prod"},
             "auth": {"header": {"api-key": "az-key-1"}}}
    gw = await gateway(route_config([azure]))
    async with http.post(f"{gw.url}/v1/chat/completions", json=chat("hi")) as resp:
        assert resp.status == 200
    rec = up.last_request
    assert rec.path == "/openai/deployments/gpt4o-prod/chat/completions"
    assert rec.query == {"api-version": "2024-10-21"}
    assert "model" not in rec.json
    assert rec.headers["api-key"] == "az-key-1"


async def test_auth_query_is_appended_to_the_upstream_url(
    gateway: GatewayFactory, http: aiohttp.ClientSession, up: FakeLLM
) -> None:
    inst = instance("a", up.url, auth={"query": {"key": "q-secret"}})
    gw = await gateway(route_config([inst]))
    async with http.post(f"{gw.url}/v1/chat/completions", json=chat("hi")) as resp:
        assert resp.status == 200
    assert up.last_request.query == {"key": "q-secret"}


async def test_auth_header_is_sent_upstream(
    gateway: GatewayFactory, http: aiohttp.ClientSession, up: FakeLLM
) -> None:
    inst = instance("a", up.url, auth={"header": {"Authorization": "Bearer ${KEY}"}})
    gw = await gateway(route_config([inst]), {"KEY": "sk-upstream"})
    async with http.post(f"{gw.url}/v1/chat/completions", json=chat("hi")) as resp:
        assert resp.status == 200
    assert up.last_request.headers["Authorization"] == "Bearer sk-upstream"


async def test_options_overwrite_body_keys_including_the_auto_model(
    gateway: GatewayFactory, http: aiohttp.ClientSession, up: FakeLLM
) -> None:
    inst = instance("a", up.url, options={"model": "llama-70b", "temperature": 0.1})
    gw = await gateway(route_config([inst]))
    body = chat("hi", temperature=0.9, top_p=0.5)
    async with http.post(f"{gw.url}/v1/chat/completions", json=body) as resp:
        assert resp.status == 200
        reply = await resp.json()
    sent = up.last_request.json
    assert (sent["model"], sent["temperature"], sent["top_p"]) == ("llama-70b", 0.1, 0.5)
    assert sent["messages"] == body["messages"]
    assert reply["model"] == "llama-70b"


async def test_client_credentials_and_cookies_are_not_forwarded_upstream(
    gateway: GatewayFactory, http: aiohttp.ClientSession, up: FakeLLM
) -> None:
    gw = await gateway(route_config([instance("a", up.url)]))
    client_headers = {"Authorization": "Bearer client-token", "Cookie": "session=abc",
                      "X-Api-Key": "client-key"}
    async with http.post(f"{gw.url}/v1/chat/completions", json=chat("hi"),
                         headers=client_headers) as resp:
        assert resp.status == 200
    seen = up.last_request.headers
    assert "Authorization" not in seen
    assert "Cookie" not in seen
    assert "X-Api-Key" not in seen


async def test_ai_proxy_single_instance_plugin_routes_to_its_endpoint(
    gateway: GatewayFactory, http: aiohttp.ClientSession, up: FakeLLM
) -> None:
    config = {"routes": [{"id": "single", "uri": "/v1/chat/completions", "plugins": {
        "ai-proxy": {"provider": "openai-compatible", "override": {"endpoint": up.url},
                     "options": {"model": "solo"}, "debug_headers": True}}}]}
    gw = await gateway(config)
    async with http.post(f"{gw.url}/v1/chat/completions", json=chat("hi")) as resp:
        assert resp.status == 200
        reply = await resp.json()
        assert resp.headers["X-AI-Instance"] == "openai-compatible"
    assert reply["choices"][0]["message"]["content"] == "[up] solo: hi"
    assert up.last_request.json["model"] == "solo"
