"""Every failure leaves the gateway as an OpenAI-shaped JSON error with the right status."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config
from tests.fakes import FakeLLM

from semproxy.admin.run import RunningGateway

CHAT = "/v1/chat/completions"
SECRET = "sk-SECRET-do-not-leak"


@pytest.fixture
async def up() -> AsyncIterator[FakeLLM]:
    async with FakeLLM("up") as server:
        yield server


@pytest.fixture
async def echo_gw(gateway: GatewayFactory) -> RunningGateway:
    return await gateway(route_config([instance("a")], max_req_body_size=100))


async def closed_port_url() -> str:
    server = FakeLLM("gone")
    await server.start()
    url = server.url
    await server.close()
    return url


def secret_instance(name: str, url: str) -> dict[str, Any]:
    return instance(name, url, auth={"header": {"Authorization": f"Bearer {SECRET}"},
                                     "query": {"key": SECRET}})


async def error_of(resp: aiohttp.ClientResponse, status: int) -> dict[str, Any]:
    raw = await resp.read()
    assert resp.status == status, raw
    assert resp.content_type == "application/json"
    body = orjson.loads(raw)
    err = body["error"]
    assert isinstance(err["message"], str) and err["message"]
    assert isinstance(err["type"], str) and isinstance(err["code"], str)
    assert SECRET not in raw.decode()
    assert "Traceback" not in raw.decode()
    return dict(err)


@pytest.mark.parametrize("raw", [b"{not json", b"", b"\xff\xfe"])
async def test_invalid_json_is_400(
    echo_gw: RunningGateway, http: aiohttp.ClientSession, raw: bytes
) -> None:
    async with http.post(f"{echo_gw.url}{CHAT}", data=raw) as resp:
        err = await error_of(resp, 400)
    assert err["type"] == "invalid_request_error"


@pytest.mark.parametrize("body", [[chat("hi")], "text", 3])
async def test_body_that_is_not_a_json_object_is_400(
    echo_gw: RunningGateway, http: aiohttp.ClientSession, body: Any
) -> None:
    async with http.post(f"{echo_gw.url}{CHAT}", data=orjson.dumps(body)) as resp:
        await error_of(resp, 400)


@pytest.mark.parametrize("body", [{"model": "m"}, {"messages": []}, {"messages": "hi"},
                                  {"messages": [1]}, {"messages": [{"content": "no role"}]}])
async def test_missing_empty_or_malformed_messages_is_400(
    echo_gw: RunningGateway, http: aiohttp.ClientSession, body: dict[str, Any]
) -> None:
    async with http.post(f"{echo_gw.url}{CHAT}", json=body) as resp:
        err = await error_of(resp, 400)
    assert "messages" in err["message"]


async def test_unknown_route_is_404(echo_gw: RunningGateway, http: aiohttp.ClientSession) -> None:
    async with http.post(f"{echo_gw.url}/v1/nowhere", json=chat("hi")) as resp:
        err = await error_of(resp, 404)
    assert err["code"] == "not_found"


async def test_wrong_method_on_the_chat_route_is_405(
    echo_gw: RunningGateway, http: aiohttp.ClientSession
) -> None:
    async with http.get(f"{echo_gw.url}{CHAT}") as resp:
        await error_of(resp, 405)


async def test_body_over_max_req_body_size_is_413(
    echo_gw: RunningGateway, http: aiohttp.ClientSession
) -> None:
    async with http.post(f"{echo_gw.url}{CHAT}", json=chat("x" * 200)) as resp:
        await error_of(resp, 413)


async def test_chunked_body_over_the_limit_is_413_too(
    echo_gw: RunningGateway, http: aiohttp.ClientSession
) -> None:
    async def body() -> AsyncIterator[bytes]:
        yield b'{"messages": [{"role": "user", "content": "'
        yield b"x" * 200
        yield b'"}]}'

    async with http.post(f"{echo_gw.url}{CHAT}", data=body()) as resp:
        await error_of(resp, 413)


@pytest.mark.parametrize("size", [20, 200])
async def test_chunked_body_arriving_whole_is_limited_too(
    echo_gw: RunningGateway, size: int
) -> None:
    """One write carries the headers and the whole chunked body: the gateway finds it
    buffered already (no waiting) and must still apply the limit."""
    body = b'{"messages": [{"role": "user", "content": "' + b"x" * size + b'"}]}'
    request = (f"POST {CHAT} HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
               "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n").encode()
    request += f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    reader, writer = await asyncio.open_connection(echo_gw.host, echo_gw.port)
    writer.write(request)
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    status = int(answer.split(b" ", 2)[1])
    assert status == (200 if size == 20 else 413), answer[:300]


async def test_body_within_the_limit_is_served(
    echo_gw: RunningGateway, http: aiohttp.ClientSession
) -> None:
    async with http.post(f"{echo_gw.url}{CHAT}", json=chat("ok")) as resp:
        assert resp.status == 200


async def test_unreachable_upstream_is_502_without_credentials(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    gw = await gateway(route_config([secret_instance("a", await closed_port_url())]))
    async with http.post(f"{gw.url}{CHAT}", json=chat("hi")) as resp:
        err = await error_of(resp, 502)
    assert err["type"] == "upstream_error"


async def test_upstream_slower_than_route_timeout_is_504_quickly(
    gateway: GatewayFactory, http: aiohttp.ClientSession, up: FakeLLM
) -> None:
    gw = await gateway(route_config([secret_instance("a", up.url)], timeout=300))
    started = time.monotonic()
    async with http.post(f"{gw.url}{CHAT}", json=chat("slow:2000")) as resp:
        err = await error_of(resp, 504)
    assert time.monotonic() - started < 1.2
    assert err["code"] == "upstream_timeout"


async def test_all_instances_failing_is_502_naming_each_attempt_only_with_debug_on(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    instances = [secret_instance("a", await closed_port_url()),
                 secret_instance("b", await closed_port_url())]
    gw = await gateway(route_config(instances))
    async with http.post(f"{gw.url}{CHAT}", json=chat("hi")) as resp:
        err = await error_of(resp, 502)
    assert err["message"] == ("no instance could serve the request; "
                              "attempts: failed (connect), failed (connect)")
    gw = await gateway(route_config(instances, debug_headers=True))
    async with http.post(f"{gw.url}{CHAT}", json=chat("hi")) as resp:
        err = await error_of(resp, 502)
    assert "a failed (connect)" in err["message"] and "b failed (connect)" in err["message"]


async def test_upstream_error_status_is_relayed_with_its_openai_body(
    gateway: GatewayFactory, http: aiohttp.ClientSession, up: FakeLLM
) -> None:
    gw = await gateway(route_config([instance("a", up.url)]))
    async with http.post(f"{gw.url}{CHAT}", json=chat("status:400")) as resp:
        err = await error_of(resp, 400)
    assert "steered status 400" in err["message"]


async def test_non_json_200_from_upstream_is_relayed_as_is(
    gateway: GatewayFactory, http: aiohttp.ClientSession, up: FakeLLM
) -> None:
    gw = await gateway(route_config([instance("a", up.url)]))
    async with http.post(f"{gw.url}{CHAT}", json=chat("garbage")) as resp:
        assert resp.status == 200
        assert resp.content_type == "text/html"
        assert await resp.text() == "<html>definitely not json"


async def test_credentials_in_the_endpoint_url_never_reach_an_error_body(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    url = (await closed_port_url()).replace("http://", f"http://user:{SECRET}@")
    gw = await gateway(route_config([instance("a", url)]))
    async with http.post(f"{gw.url}{CHAT}", json=chat("hi")) as resp:
        await error_of(resp, 502)
