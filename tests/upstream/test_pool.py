"""Connections per origin are capped (requests beyond wait in a queue) and reused;
credentials in an endpoint URL become Basic auth, never silently dropped."""

from __future__ import annotations

import asyncio
import base64

import aiohttp
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config

from semproxy.config.loader import load_data
from semproxy.errors import ConfigError

from .conftest import URI, Raw, ask, completion, ok


async def test_500_concurrent_requests_use_at_most_the_cap_of_connections(
    gateway: GatewayFactory, raw: Raw
) -> None:
    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await asyncio.sleep(0.02)
        writer.write(ok("fine"))

    up = await raw(slow)
    gw = await gateway(route_config([instance("a", up.url)], max_connections_per_origin=20))
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as http:
        async def one() -> int:
            async with http.post(f"{gw.url}{URI}", json=chat("hi")) as resp:
                await resp.read()
                return resp.status

        statuses = await asyncio.gather(*(one() for _ in range(500)))
    assert statuses == [200] * 500
    assert up.peak_open <= 20
    assert up.connections <= 20  # and the ones opened were kept and reused


async def test_keep_alive_reuses_one_connection_for_sequential_requests(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def fine(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        writer.write(ok(f"answer {n}"))

    up = await raw(fine)
    gw = await gateway(route_config([instance("a", up.url)]))
    for n in range(1, 6):
        assert await ask(http, gw) == (200, completion(f"answer {n}"))
    assert up.connections == 1


async def test_user_and_password_in_the_endpoint_are_sent_as_basic_auth(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def fine(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        writer.write(ok("fine"))

    up = await raw(fine)
    url = up.url.replace("http://", "http://alice:s%3Acret@")
    gw = await gateway(route_config([instance("a", url)]))
    assert await ask(http, gw) == (200, completion("fine"))
    expected = base64.b64encode(b"alice:s:cret").decode()
    assert f"Authorization: Basic {expected}\r\n".encode() in up.heads[0]
    assert b"alice" not in up.heads[0].split(b"\r\n")[0]  # not in the request line


def test_user_and_password_beside_an_authorization_header_are_refused_at_load() -> None:
    config = route_config([instance("a", "http://alice:pw@127.0.0.1:1/v1",
                                    auth={"header": {"Authorization": "Bearer k"}})])
    with pytest.raises(ConfigError) as caught:
        load_data(config, {})
    assert any(e.startswith("routes[0].plugins.ai-proxy-multi.instances[0]:")
               and "user:password" in e for e in caught.value.errors)


async def test_at_most_keepalive_pool_idle_connections_stay_open_per_origin(
    gateway: GatewayFactory, raw: Raw
) -> None:
    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        await asyncio.sleep(0.1)
        writer.write(ok("fine"))

    up = await raw(slow)
    gw = await gateway(route_config([instance("a", up.url)], keepalive_pool=2))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        async def one() -> int:
            async with http.post(f"{gw.url}{URI}", json=chat("hi")) as resp:
                await resp.read()
                return resp.status

        assert await asyncio.gather(*(one() for _ in range(6))) == [200] * 6
    assert up.connections == 6  # six at once: six connections
    for _ in range(100):  # the surplus ones are closed as they come back to the pool
        if up.open <= 2:
            break
        await asyncio.sleep(0.01)
    assert up.open == 2
