"""Every protocol through the whole gateway: semantic routing, errors, metrics label."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from prometheus_client import generate_latest
from tests.conftest import GatewayFactory, route_config
from tests.fakes import FakeEmbeddings
from tests.semantic.conftest import remote_embeddings, specialists

from semproxy.admin.run import RunningGateway
from semproxy.observability.fanout import FanoutObserver
from semproxy.observability.metrics import Metrics


@pytest.fixture
async def embed() -> AsyncIterator[FakeEmbeddings]:
    async with FakeEmbeddings() as server:
        yield server


@pytest.fixture
async def gw(gateway: GatewayFactory, embed: FakeEmbeddings) -> RunningGateway:
    balancer = {"algorithm": "semantic", "threshold": 0.5, "expose_scores": True}
    return await gateway(route_config(specialists(), uri="/v1/*", balancer=balancer,
                                      embeddings=remote_embeddings(embed.url)))


async def post(http: aiohttp.ClientSession, gw: RunningGateway, path: str,
               body: dict[str, Any]) -> tuple[int, str, Any]:
    async with http.post(gw.url + path, json=body) as resp:
        return resp.status, resp.headers.get("X-AI-Semantic-Route", ""), await resp.json()


async def test_anthropic_requests_route_on_the_last_user_text_not_tool_results(
        gw: RunningGateway, http: aiohttp.ClientSession, embed: FakeEmbeddings) -> None:
    body = {"model": "auto", "max_tokens": 32, "messages": [
        {"role": "user", "content": "python code please"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f",
                                           "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "python code"},
            {"type": "text", "text": "now translate it"}]}]}
    status, route, answer = await post(http, gw, "/v1/messages", body)
    assert (status, route) == (200, "translate")
    assert embed.inputs_seen[-1] == "now translate it"
    assert answer["content"][0]["text"].startswith("[translate]")


async def test_errors_before_any_upstream_come_in_the_protocols_shape(
        gw: RunningGateway, http: aiohttp.ClientSession) -> None:
    async with http.post(gw.url + "/v1/messages", data=b"{not json") as resp:
        assert resp.status == 400
        body = await resp.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    async with http.post(gw.url + "/v1/chat/completions", data=b"{not json") as resp:
        assert (await resp.json())["error"]["code"] == "invalid_request"


async def test_request_metrics_carry_the_protocol(
        gateway: GatewayFactory, http: aiohttp.ClientSession) -> None:
    gw = await gateway(route_config(specialists()[:1], uri="/v1/*"))
    await post(http, gw, "/v1/messages", {"model": "m", "max_tokens": 8,
                                          "messages": [{"role": "user", "content": "hi"}]})
    await post(http, gw, "/v1/chat/completions",
               {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    observer = gw.gateway.observer
    assert isinstance(observer, FanoutObserver)
    metrics = next(o for o in observer.observers if isinstance(o, Metrics))
    text = generate_latest(metrics.registry).decode()
    assert 'protocol="messages"' in text and 'protocol="chat"' in text
