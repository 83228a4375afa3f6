"""Bytes an upstream sends that no request asked for never reach another client.

HTTP/1.1 answers carry no request id: whatever arrives on a pooled connection
is taken as the answer of the next request sent on it. Each test here makes the
upstream send stray bytes, then checks that the next request (another client)
gets its own answer and never a piece of the stray one.
"""

from __future__ import annotations

import asyncio

import aiohttp
from tests.conftest import GatewayFactory, instance, route_config
from tests.fakes.raw import answer

from .conftest import Raw, ask, completion, ok

STRAY = answer(b'{"meant for": "nobody"}', "Content-Type: application/json")


async def test_a_full_answer_then_the_head_of_a_second_never_reaches_the_next_client(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     n: int) -> None:
        if n == 1:  # the answer, then the head and first bytes of another, in one write
            writer.write(ok("first") + b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n"
                         b"...meant for nobody...")
        else:
            writer.write(ok(f"answer {n}"))

    up = await raw(script)
    gw = await gateway(route_config([instance("a", up.url)]))
    assert await ask(http, gw) == (200, completion("first"))
    for _ in range(3):
        status, body = await ask(http, gw)
        assert status == 200 and b"nobody" not in body and b"answer" in body


async def test_stray_bytes_arriving_while_the_connection_is_idle_close_it(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     n: int) -> None:
        writer.write(ok(f"answer {n}"))
        if n == 1:  # later, while the gateway holds the connection idle in its pool
            await writer.drain()
            await asyncio.sleep(0.1)
            writer.write(STRAY)

    up = await raw(script)
    gw = await gateway(route_config([instance("a", up.url)]))
    assert await ask(http, gw) == (200, completion("answer 1"))
    await asyncio.sleep(0.3)
    assert await ask(http, gw) == (200, completion("answer 2"))
    assert up.connections == 2  # the spoken-on connection was dropped, not reused


async def test_two_answers_in_one_write_relay_only_the_first(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     n: int) -> None:
        writer.write(ok(f"answer {n}") + (STRAY if n == 1 else b""))

    up = await raw(script)
    gw = await gateway(route_config([instance("a", up.url)]))
    assert await ask(http, gw) == (200, completion("answer 1"))
    assert await ask(http, gw) == (200, completion("answer 2"))


async def test_a_204_followed_by_a_stray_200_relays_an_empty_204(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     n: int) -> None:
        if n == 1:
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n" + STRAY)
        else:
            writer.write(ok(f"answer {n}"))

    up = await raw(script)
    gw = await gateway(route_config([instance("a", up.url)]))
    assert await ask(http, gw) == (204, b"")
    assert await ask(http, gw) == (200, completion("answer 2"))


async def test_extra_bytes_after_an_answer_do_not_break_the_next_request(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     n: int) -> None:
        writer.write(ok(f"answer {n}") + (b"garbage\r\n\r\n" if n == 1 else b""))

    up = await raw(script)
    gw = await gateway(route_config([instance("a", up.url)]))
    # aiohttp's parser rejects the whole read that ends in garbage: the broken
    # exchange is a 502, and nothing of it is left on a connection for later.
    status, _ = await ask(http, gw)
    assert status == 502
    for n in (2, 3):
        assert await ask(http, gw) == (200, completion(f"answer {n}"))
