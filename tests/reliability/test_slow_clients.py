"""Slow and idle clients: a trickled body is cut off, idle sockets neither pile up
nor block anyone else."""

from __future__ import annotations

import asyncio
import contextlib
import resource
import time

import aiohttp
import orjson
from tests.conftest import GatewayFactory, chat

from .conftest import CHAT, semantic_route
from .rawhttp import chat_head

BODY = orjson.dumps(chat("write a python function"))


def config(**root: float) -> dict[str, object]:
    return {"listen": "127.0.0.1:0", "routes": [semantic_route()], **root}


async def test_a_body_trickled_one_byte_a_second_gets_408(gateway: GatewayFactory) -> None:
    gw = await gateway(config(client_body_timeout=1.5))
    host, port = gw.url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    started = time.monotonic()
    writer.write(chat_head(CHAT, BODY) + b"\r\n\r\n")

    async def trickle() -> None:
        for byte in BODY:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(1.0)

    sender = asyncio.create_task(trickle())
    try:
        async with asyncio.timeout(5):
            answer = await reader.read(65536)
    finally:
        sender.cancel()
        writer.close()
        await asyncio.gather(sender, writer.wait_closed(), return_exceptions=True)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408")
    assert orjson.loads(body)["error"]["code"] == "request_timeout"
    assert 1.4 < time.monotonic() - started < 4


async def test_an_idle_connection_is_closed_after_the_keepalive_timeout(
    gateway: GatewayFactory
) -> None:
    gw = await gateway(config(client_keepalive_timeout=0.5))
    host, port = gw.url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        async with asyncio.timeout(3):
            assert await reader.read(1) == b""  # the server hung up, unprompted
    finally:
        writer.close()
        await writer.wait_closed()


async def test_headers_trickled_forever_are_cut_off_by_the_keepalive_timeout(
    gateway: GatewayFactory
) -> None:
    gw = await gateway(config(client_keepalive_timeout=0.5))
    host, port = gw.url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(b"POST " + CHAT.encode() + b" HTTP/1.1\r\nHost: x\r\n")
    started = time.monotonic()
    try:
        async with asyncio.timeout(3):
            while not reader.at_eof():
                writer.write(b"X-Slow: 1\r\n")
                await asyncio.sleep(0.1)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.01):
                        await reader.read(1)
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    assert time.monotonic() - started < 2


async def test_a_thousand_idle_connections_do_not_block_a_normal_request(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    # Both ends of every idle socket live in this process: 2,000 descriptors and more.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))
    gw = await gateway(config())
    host, port = gw.url.removeprefix("http://").rsplit(":", 1)
    idle = await asyncio.gather(*(asyncio.open_connection(host, int(port))
                                  for _ in range(1000)))
    try:
        idle[0][1].write(b"POST " + CHAT.encode() + b" HTTP/1.1\r\nHost: x\r\n")  # half a head
        started = time.monotonic()
        async with http.post(gw.url + CHAT, json=chat("write a python function")) as resp:
            assert resp.status == 200
            assert (await resp.json())["model"] == "code-model"
        assert time.monotonic() - started < 1.0
    finally:
        for _, writer in idle:
            writer.close()
        await asyncio.gather(*(w.wait_closed() for _, w in idle), return_exceptions=True)
