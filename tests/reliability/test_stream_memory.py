"""A translated stream holds bounded memory however much the upstream sends.

A Responses client over a Chat upstream gets its answer translated event by
event, and the final events repeat the whole text: the gateway keeps what it
must for them up to `max_resp_body_size`, then ends the stream with an error
event. Here the upstream sends up to 256 MiB of text, gzipped (a few hundred KB
on the wire), to a `semproxy serve` process; a tracer inside it
(`traced/sitecustomize.py`) gives the Python-level peak while the stream runs.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from pathlib import Path

import aiohttp
import orjson
from tests.fakes.raw import RawServer

from .process import GatewayProcess, TracedMemory

MB = 1024 * 1024
CAP = 4 * MB  # the route's max_resp_body_size
# Measured: 6 MB at the peak with a 4 MB cap (the text kept for the final events, the
# event being translated, the decoder's buffers). The code before the cap peaked at
# 699 MB for an upstream stream of 32 MiB.
PEAK_LIMIT = 4 * CAP
PIECE = b"data: " + orjson.dumps({"model": "m", "choices": [
    {"index": 0, "delta": {"content": "x" * 60_000}, "finish_reason": None}]}) + b"\n\n"
HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
        b"Connection: close\r\n\r\n")


def gzipped_stream(total: int):  # type: ignore[no-untyped-def]
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     n: int) -> None:
        gzip = zlib.compressobj(1, zlib.DEFLATED, 31)
        writer.write(HEAD)
        for _ in range(total // len(PIECE)):  # until done, or the gateway hangs up
            writer.write(gzip.compress(PIECE))
            await writer.drain()
        writer.write(gzip.flush())
        await writer.drain()
        writer.close()
    return script


async def test_a_responses_stream_peaks_near_its_cap_whatever_the_upstream_sends(
        tmp_path: Path) -> None:
    raw = RawServer(gzipped_stream(256 * MB))
    traced = TracedMemory(tmp_path)
    async with raw:
        config = {"listen": "127.0.0.1:0", "routes": [{"id": "r", "uri": "/v1/*", "plugins": {
            "ai-proxy-multi": {"max_resp_body_size": CAP, "instances": [
                {"name": "a", "provider": "openai-compatible", "weight": 1,
                 "options": {"model": "m"}, "override": {"endpoint": raw.url}}]}}}]}
        gw = await GatewayProcess(config, tmp_path, env=traced.env).astart()
        try:
            await asyncio.to_thread(traced.current)
            started = time.monotonic()
            async with aiohttp.ClientSession() as http, http.post(
                    f"{gw.url}/v1/responses", timeout=aiohttp.ClientTimeout(total=120),
                    json={"model": "auto", "input": "x", "stream": True}) as resp:
                got = await resp.read()
            peak = await asyncio.to_thread(traced.peak, started)
            idle = await asyncio.to_thread(traced.current)
        finally:
            gw.stop()
    assert peak - idle < PEAK_LIMIT, f"{(peak - idle) / MB:.0f} MB at the peak"
    tail = got.strip().split(b"\n\n")[-1]
    assert tail.startswith(b"event: error") and b"max_resp_body_size" in tail
