"""Streams and slow bodies: back-pressure holds for compressed streams, every wait ends.

- A compressed event stream whose client stops reading is not inflated ahead:
  the gateway's peak memory stays far below what the upstream sent.
- One SSE event is at most `max_sse_event_size`; an event dripped slower than
  the route timeout is cut; a non-streamed body must be complete within the
  attempt deadline (`attempt_timeout`, default the route timeout), however
  steadily it drips.
"""

from __future__ import annotations

import asyncio
import time
import zlib

import aiohttp
from tests.conftest import GatewayFactory, chat, instance, route_config

from .conftest import URI, Raw, ask
from .test_bodies import MIB, peak_bytes, reset_peak

SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n")


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def test_a_stalled_client_does_not_make_the_gateway_inflate_a_compressed_stream(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + 15)
    event = b"data: " + b"a" * (64 * 1024) + b"\n\n"
    first = packer.compress(event) + packer.flush(zlib.Z_FULL_FLUSH)  # with the gzip header
    # After a full flush the compressor starts afresh, so this block can be repeated:
    # 1 MiB of events in about 1 KiB, 1 GiB in all.
    block = packer.compress(event * 16) + packer.flush(zlib.Z_FULL_FLUSH)

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     n: int) -> None:
        writer.write(SSE_HEAD + b"Content-Encoding: gzip\r\n\r\n" + chunk(first))
        for _ in range(1024):
            writer.write(chunk(block))
            await writer.drain()
        await reader.read()

    up = await raw(script)
    gw = await gateway(route_config([instance("a", up.url)]))
    reset_peak()
    before = peak_bytes()
    async with http.post(f"{gw.url}{URI}", json=chat("hi", stream=True)) as resp:
        assert resp.status == 200
        await resp.content.readexactly(1024)
        await asyncio.sleep(1.5)  # the client stops reading; all 1 GiB has been sent
        peak = peak_bytes() - before
        assert not resp.content.is_eof()
    assert peak < 100 * MIB


async def test_an_event_over_max_sse_event_size_ends_the_stream_with_an_error_event(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     n: int) -> None:
        writer.write(SSE_HEAD + b"\r\n" + chunk(b"data: {\"ok\": 1}\n\n"))
        for _ in range(64):  # one event that never ends
            writer.write(chunk(b"data: " + b"x" * 16 * 1024))
            await writer.drain()
        await reader.read()

    up = await raw(script)
    gw = await gateway(route_config([instance("a", up.url)], max_sse_event_size=100_000))
    async with http.post(f"{gw.url}{URI}", json=chat("hi", stream=True)) as resp:
        body = await asyncio.wait_for(resp.read(), 10)
    assert body.startswith(b'data: {"ok": 1}\n\n')
    assert b"upstream stream ended unexpectedly" in body
    assert len(body) < 1000


async def test_a_body_dripped_one_byte_at_a_time_is_cut_at_the_attempt_deadline(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   n: int) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1000\r\n\r\n")
        for _ in range(1000):  # every read succeeds well inside the timeout
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(0.1)

    up = await raw(drip)
    gw = await gateway(route_config([instance("a", up.url)], timeout=500))
    started = time.monotonic()
    status, body = await ask(http, gw)
    assert status == 504 and b"upstream_timeout" in body
    assert time.monotonic() - started < 2.0


async def test_attempt_timeout_is_its_own_setting(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   n: int) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n")
        for _ in range(10):
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(0.1)

    up = await raw(slow)
    gw = await gateway(route_config([instance("a", up.url)], timeout=500,
                                    attempt_timeout=3000))
    assert await ask(http, gw) == (200, b" " * 10)


async def test_an_event_dripped_slower_than_the_timeout_is_cut(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   n: int) -> None:
        writer.write(SSE_HEAD + b"\r\n" + chunk(b"data: {\"ok\": 1}\n\n"))
        for _ in range(1000):
            writer.write(chunk(b"x"))
            await writer.drain()
            await asyncio.sleep(0.1)

    up = await raw(drip)
    gw = await gateway(route_config([instance("a", up.url)], timeout=500))
    started = time.monotonic()
    async with http.post(f"{gw.url}{URI}", json=chat("hi", stream=True)) as resp:
        body = await asyncio.wait_for(resp.read(), 10)
    assert b"upstream stream ended unexpectedly" in body
    assert time.monotonic() - started < 2.0


async def test_a_stream_of_timely_events_outlives_the_attempt_deadline(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def steady(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     n: int) -> None:
        writer.write(SSE_HEAD + b"\r\n")
        for i in range(15):  # 1.5 s in all, one event every 0.1 s
            writer.write(chunk(b"data: {\"i\": %d}\n\n" % i))
            await writer.drain()
            await asyncio.sleep(0.1)
        writer.write(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")

    up = await raw(steady)
    gw = await gateway(route_config([instance("a", up.url)], timeout=500))
    async with http.post(f"{gw.url}{URI}", json=chat("hi", stream=True)) as resp:
        body = await asyncio.wait_for(resp.read(), 10)
    assert body.count(b"data: {") == 15 and body.endswith(b"data: [DONE]\n\n")
