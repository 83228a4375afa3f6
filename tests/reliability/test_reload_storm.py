"""A config file rewritten every 100 ms, valid and invalid in turn, while traffic flows.

Not one request fails, and the version served at the end is the last valid one.
`SEMPROXY_STORM_SECONDS` stretches the storm (the soak command runs it for 60 s).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from tests.conftest import chat

from semproxy.admin.run import start
from semproxy.config.loader import load_data
from semproxy.config.source import FileSource

from .conftest import CHAT, echo, semantic_route

STORM_SECONDS = float(os.environ.get("SEMPROXY_STORM_SECONDS", "8"))


def version(n: int) -> dict[str, Any]:
    """Valid: a semantic route whose catchall answers with model `v{n}`."""
    route = semantic_route()
    route["plugins"]["ai-proxy-multi"]["instances"][2] = echo("default", catchall=True,
                                                              options={"model": f"v{n}"})
    return {"listen": "127.0.0.1:0", "routes": [route]}


def broken(n: int) -> bytes:
    """Invalid in a different way each time: bad field, bad JSON, half a file, empty."""
    bad = version(n)
    bad["routes"][0]["plugins"]["ai-proxy-multi"]["instances"][0]["weight"] = -1
    kinds = [orjson.dumps(bad), b'{"routes": [', orjson.dumps(version(n))[:40], b""]
    return kinds[n % len(kinds)]


async def client_loop(url: str, stop: asyncio.Event, tally: dict[str, int]) -> None:
    async with aiohttp.ClientSession() as http:
        while not stop.is_set():
            async with http.post(url + CHAT, json=chat("what is the weather")) as resp:
                await resp.read()
                tally[str(resp.status)] = tally.get(str(resp.status), 0) + 1


async def served_model(url: str) -> str:
    async with aiohttp.ClientSession() as http, \
            http.post(url + CHAT, json=chat("what is the weather")) as resp:
        model: str = (await resp.json())["model"]
        return model


async def test_a_reload_storm_fails_no_request_and_ends_on_the_last_valid_version(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL, logger="semproxy")  # hundreds of expected reload errors
    path = tmp_path / "semproxy.json"
    path.write_bytes(orjson.dumps(version(0)))
    source = FileSource(path, interval_s=0.05)
    gw = await start(await source.load(), "127.0.0.1:0", source=source)
    stop, tally = asyncio.Event(), {}
    clients = [asyncio.create_task(client_loop(gw.url, stop, tally)) for _ in range(4)]
    try:
        n, deadline = 0, time.monotonic() + STORM_SECONDS
        while time.monotonic() < deadline:
            n += 1
            # Plain (non-atomic) writes: the watcher may well read half a file.
            path.write_bytes(orjson.dumps(version(n)) if n % 2 else broken(n))
            await asyncio.sleep(0.1)
        last = n + 1
        path.write_bytes(orjson.dumps(version(last)))
        async with asyncio.timeout(10):
            while await served_model(gw.url) != f"v{last}":
                await asyncio.sleep(0.05)
        assert load_data(version(last), {}).version == gw.gateway.table.version
    finally:
        stop.set()
        await asyncio.gather(*clients)
        await gw.close()
    assert set(tally) == {"200"}, tally
    # At least 2 writes a second even on a loaded machine (10 a second when idle).
    assert tally["200"] > 100 and n > STORM_SECONDS * 2
