"""Streaming: relayed event by event, upstream closed when the client leaves, no hangs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import aiohttp
import orjson
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config
from tests.fakes import FakeLLM

from semproxy.admin.run import RunningGateway

CHAT = "/v1/chat/completions"


@pytest.fixture
async def up() -> AsyncIterator[FakeLLM]:
    async with FakeLLM("up") as server:
        yield server


@pytest.fixture
async def gw(gateway: GatewayFactory, up: FakeLLM) -> RunningGateway:
    return await gateway(route_config([instance("a", up.url)]))


async def events(resp: aiohttp.ClientResponse) -> AsyncIterator[str]:
    """The `data:` payloads of an SSE response, one at a time as they arrive."""
    async for line in resp.content:
        text = line.decode().strip()
        if text.startswith("data: "):
            yield text[len("data: "):]


def content_of(data: str) -> str:
    chunk = orjson.loads(data)
    return "".join(c["delta"].get("content") or "" for c in chunk["choices"])


async def test_stream_is_relayed_event_by_event_not_buffered(
    gw: RunningGateway, http: aiohttp.ClientSession
) -> None:
    started = time.monotonic()
    first_content: float | None = None
    received: list[str] = []
    body = chat("chunks:5 interval:300", stream=True)
    async with http.post(f"{gw.url}{CHAT}", json=body) as resp:
        assert resp.status == 200
        assert resp.content_type == "text/event-stream"
        async for data in events(resp):
            received.append(data)
            if first_content is None and data != "[DONE]" and content_of(data):
                first_content = time.monotonic() - started
    total = time.monotonic() - started
    assert first_content is not None
    assert total >= 1.2  # four 300 ms gaps upstream
    assert first_content < total - 0.5
    assert received[-1] == "[DONE]"
    text = "".join(content_of(d) for d in received[:-1])
    assert text == "[up] a-model: chunks:5 interval:300"


async def test_stream_asks_upstream_for_the_usage_chunk(
    gw: RunningGateway, http: aiohttp.ClientSession, up: FakeLLM
) -> None:
    body = chat("hi", stream=True, stream_options={"foo": 1})
    async with http.post(f"{gw.url}{CHAT}", json=body) as resp:
        received = [d async for d in events(resp)]
    assert up.last_request.json["stream_options"] == {"foo": 1, "include_usage": True}
    usage = orjson.loads(received[-2])["usage"]
    assert usage["total_tokens"] > 0


async def test_client_leaving_mid_stream_closes_the_upstream_request(
    gw: RunningGateway, http: aiohttp.ClientSession, up: FakeLLM
) -> None:
    resp = await http.post(f"{gw.url}{CHAT}", json=chat("chunks:50 interval:100", stream=True))
    assert resp.status == 200
    seen = 0
    async for _ in events(resp):
        seen += 1
        if seen == 3:  # the role chunk, then two content chunks
            break
    resp.close()
    await up.wait_stream_cancelled(timeout=2.0)
    assert up.streams_completed == 0


async def test_upstream_breaking_mid_stream_ends_with_an_error_event(
    gw: RunningGateway, http: aiohttp.ClientSession
) -> None:
    body = chat("chunks:5 breakstream:2", stream=True)
    async with asyncio.timeout(5), http.post(f"{gw.url}{CHAT}", json=body) as resp:
        assert resp.status == 200
        received = [d async for d in events(resp)]
    assert "[DONE]" not in received
    contents = [content_of(d) for d in received[:-1]]
    assert len([c for c in contents if c]) == 2
    error = orjson.loads(received[-1])["error"]
    assert error["type"] == "upstream_error"


async def test_stream_longer_than_the_timeout_completes_while_chunks_keep_coming(
    gateway: GatewayFactory, http: aiohttp.ClientSession, up: FakeLLM
) -> None:
    # `timeout` bounds each wait on the upstream (as in APISIX), not a whole stream.
    gw = await gateway(route_config([instance("a", up.url)], timeout=500))
    body = chat("chunks:5 interval:200", stream=True)
    async with http.post(f"{gw.url}{CHAT}", json=body) as resp:
        received = [d async for d in events(resp)]
    assert received[-1] == "[DONE]"
    assert up.streams_completed == 1


async def test_stream_stalling_longer_than_the_timeout_ends_with_an_error_event(
    gateway: GatewayFactory, http: aiohttp.ClientSession, up: FakeLLM
) -> None:
    gw = await gateway(route_config([instance("a", up.url)], timeout=300))
    body = chat("chunks:3 interval:1500", stream=True)
    started = time.monotonic()
    async with http.post(f"{gw.url}{CHAT}", json=body) as resp:
        received = [d async for d in events(resp)]
    assert time.monotonic() - started < 1.2
    assert orjson.loads(received[-1])["error"]["type"] == "upstream_error"


async def test_non_streaming_request_gets_one_json_completion(
    gw: RunningGateway, http: aiohttp.ClientSession, up: FakeLLM
) -> None:
    async with http.post(f"{gw.url}{CHAT}", json=chat("hi")) as resp:
        assert resp.content_type == "application/json"
        body = await resp.json()
    assert body["object"] == "chat.completion"
    assert "stream_options" not in up.last_request.json
