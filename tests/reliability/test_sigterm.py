"""SIGTERM under load, on a gateway process: requests in flight finish, new
connections are refused, and the process exits 0 within the grace period."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp
import pytest
from tests.conftest import chat, instance, route_config
from tests.fakes import FakeLLM

from .conftest import CHAT
from .process import GatewayProcess

GRACE = 5.0


async def test_sigterm_drains_in_flight_requests_refuses_new_ones_and_exits_in_time(
    tmp_path: Path
) -> None:
    async with FakeLLM("up") as llm:
        config = {**route_config([instance("up", llm.url)]), "shutdown_grace": GRACE}
        gw = await GatewayProcess(config, tmp_path).astart()
        try:
            async with aiohttp.ClientSession() as http:
                async def slow(i: int) -> int:
                    body = chat(f"request {i} slow:1500", stream=i % 2 == 0)
                    async with http.post(gw.url + CHAT, json=body) as resp:
                        await resp.read()
                        return resp.status

                in_flight = [asyncio.create_task(slow(i)) for i in range(32)]
                async with asyncio.timeout(5):
                    while llm.calls < 32:
                        await asyncio.sleep(0.02)
                gw.signal()
                signalled = time.monotonic()
                await asyncio.sleep(0.3)
                with pytest.raises(aiohttp.ClientConnectorError):
                    async with aiohttp.ClientSession() as fresh:
                        await fresh.post(gw.url + CHAT, json=chat("too late"))
                assert await asyncio.gather(*in_flight) == [200] * 32
            code = await asyncio.to_thread(gw.wait, GRACE + 5)
            assert code == 0
            assert time.monotonic() - signalled < GRACE + 2
            assert llm.stream_cancelled == 0
        finally:
            gw.stop()
