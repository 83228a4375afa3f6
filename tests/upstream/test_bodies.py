"""Upstream bodies are bounded after decompression: bombs and endless bodies are 502s.

Routes here set `debug_headers`, so the error body says why the attempt failed.

The gateway's memory is measured around each case: its peak resident size
(VmHWM, reset through /proc/self/clear_refs) grows by far less than the body
the upstream tried to make it hold.
"""

from __future__ import annotations

import asyncio
import gzip
import zlib
from pathlib import Path

import aiohttp
import pytest
from tests.conftest import GatewayFactory, instance, route_config
from tests.fakes.raw import answer

from .conftest import Raw, ask, completion

MIB = 1024 * 1024


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def peak_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def bomb(size: int, wrap: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, wrap)
    head = packer.compress(b'{"x": "') + packer.flush(zlib.Z_FULL_FLUSH)  # gzip header too
    block = packer.compress(b"a" * MIB) + packer.flush(zlib.Z_FULL_FLUSH)
    # After a full flush the compressor starts afresh: the same bytes inflate the same.
    return head + block * (size // MIB) + packer.compress(b'"}') + packer.flush()


@pytest.mark.parametrize(("encoding", "wrap"), [("gzip", 16 + 15), ("deflate", 15)])
async def test_a_compression_bomb_is_cut_at_the_cap_without_inflating_it(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw, encoding: str, wrap: int
) -> None:
    body = bomb(1024 * MIB, wrap)  # 1 GiB of JSON in about 1 MiB
    assert len(body) < 2 * MIB

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     n: int) -> None:
        writer.write(answer(body, "Content-Type: application/json",
                            f"Content-Encoding: {encoding}"))

    up = await raw(script)
    gw = await gateway(route_config([instance("a", up.url)], debug_headers=True))
    reset_peak()
    before = peak_bytes()
    status, reply = await ask(http, gw)
    assert status == 502 and b"max_resp_body_size" in reply
    assert b"upstream_error" in reply
    assert peak_bytes() - before < 200 * MIB


async def test_a_1_gib_chunked_body_is_cut_at_the_cap_and_the_connection_dropped(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    sent = [0]

    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      n: int) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        piece = b"%x\r\n%s\r\n" % (MIB, b"x" * MIB)
        for _ in range(1024):
            writer.write(piece)
            await writer.drain()
            sent[0] += MIB
        writer.write(b"0\r\n\r\n")

    up = await raw(endless)
    gw = await gateway(route_config([instance("a", up.url)], debug_headers=True))
    reset_peak()
    before = peak_bytes()
    status, reply = await ask(http, gw)
    assert status == 502 and b"max_resp_body_size" in reply
    assert peak_bytes() - before < 200 * MIB
    await asyncio.sleep(0.2)
    assert sent[0] < 128 * MIB  # the gateway hung up instead of reading 1 GiB


async def test_the_cap_is_the_routes_max_resp_body_size(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     n: int) -> None:
        writer.write(answer(completion("x" * 2000), "Content-Type: application/json"))

    up = await raw(script)
    gw = await gateway(route_config([instance("a", up.url)], max_resp_body_size=1000,
                                    debug_headers=True))
    status, reply = await ask(http, gw)
    assert status == 502 and b"more than 1000 bytes" in reply


async def test_a_truncated_gzip_body_is_a_502_not_an_empty_200(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    whole = gzip.compress(completion("zipped") * 50)

    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     n: int) -> None:
        body = whole if n == 1 else whole[: len(whole) // 2]
        writer.write(answer(body, "Content-Type: application/json", "Content-Encoding: gzip"))

    up = await raw(script)
    gw = await gateway(route_config([instance("a", up.url)], debug_headers=True))
    assert await ask(http, gw) == (200, completion("zipped") * 50)
    status, reply = await ask(http, gw)
    assert status == 502 and b"truncated" in reply


@pytest.mark.parametrize("code", [b"999", b"000"])
async def test_a_status_outside_100_to_599_is_a_502(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw, code: bytes
) -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     n: int) -> None:
        writer.write(b"HTTP/1.1 %s Whatever\r\nContent-Length: 2\r\n\r\n{}" % code)

    up = await raw(script)
    gw = await gateway(route_config([instance("a", up.url)], debug_headers=True))
    status, reply = await ask(http, gw)
    assert status == 502 and b"upstream_error" in reply
