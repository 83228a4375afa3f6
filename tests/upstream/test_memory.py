"""Answers that clients abandon leave no memory behind, with the worker's GC tuning on.

The gateway runs as `semproxy serve` in its own process (so its GC freeze and
young-generation threshold are the ones production uses). Clients ask for big
answers, streamed and whole, and hang up part way; the gateway's resident
size must come back near where it was once the abandoned answers are gone
and some ordinary traffic has run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
from tests.conftest import chat, instance, route_config
from tests.fakes.raw import RawServer, answer
from tests.reliability.process import GatewayProcess

from .conftest import URI, completion, ok

MIB = 1024 * 1024
SLACK = 48 * MIB  # one abandoned answer held would be 30 MiB; eight would be 240
EVENT = b"data: " + b"y" * (64 * 1024 - 8) + b"\n\n"


async def abandon(http: aiohttp.ClientSession, url: str, stream: bool, text: str) -> None:
    async with http.post(url, json=chat(text, stream=stream)) as resp:
        await resp.content.readexactly(1024)
        resp.close()  # the client hangs up with most of the answer unread


async def test_abandoned_answers_are_freed_with_the_workers_gc_tuning(tmp_path: Path) -> None:
    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                       n: int) -> None:
        kind = b"big" if b'"big whole"' in raw.bodies[-1] else (
            b"stream" if b'"big stream"' in raw.bodies[-1] else b"small")
        if kind == b"big":
            writer.write(answer(b'{"x": "' + b"z" * (30 * MIB) + b'"}',
                                "Content-Type: application/json"))
        elif kind == b"stream":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         b"Content-Length: %d\r\n\r\n" % (len(EVENT) * 3200))
            for _ in range(100):  # 200 MiB, far more than the client will take
                writer.write(EVENT * 32)
                await writer.drain()
        else:
            writer.write(ok("small"))
        await writer.drain()

    raw = RawServer(upstream)
    async with raw:
        config = route_config([instance("a", raw.url)])
        gw = await GatewayProcess(config, tmp_path).astart()
        try:
            url = f"{gw.url}{URI}"
            async with aiohttp.ClientSession() as http:
                async def normal(count: int) -> None:
                    for _ in range(count):
                        async with http.post(url, json=chat("small")) as resp:
                            assert await resp.read() == completion("small")

                # warm up: one of each, so allocator pools and caches exist already
                await abandon(http, url, False, "big whole")
                await abandon(http, url, True, "big stream")
                await normal(300)
                await asyncio.sleep(0.5)
                baseline = gw.rss_bytes()
                for _ in range(4):
                    await abandon(http, url, False, "big whole")
                    await abandon(http, url, True, "big stream")
                await normal(300)
                await asyncio.sleep(0.5)
                after = gw.rss_bytes()
        finally:
            gw.stop()
    assert after - baseline < SLACK, (baseline // MIB, after // MIB)
