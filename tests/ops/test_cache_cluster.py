"""The response cache shared through one real redis-server: an answer stored through one
gateway process is a hit on another within a second, and a redis-server that stops mid-run
turns lookups into misses, never into errors or waits past the deadline."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from tests.fakes import FakeLLM
from tests.fakes.redis_server import RedisServer
from tests.server.cache_env import PATHS, Answer, body, cached_config

from semproxy.admin.run import RunningGateway

from .conftest import cli_env, free_port

DEADLINE_MS = 100


def redis_config(url: str, port: int, listen: str = "127.0.0.1:0") -> dict[str, Any]:
    config = cached_config(url, {"layers": ["exact", "semantic"], "redis_host": "127.0.0.1",
                                 "redis_port": port, "deadline": DEADLINE_MS})
    return {**config, "listen": listen}


async def serve(config: dict[str, Any], path: Path) -> tuple[asyncio.subprocess.Process, str]:
    """`semproxy serve --config path` in its own process, once it listens."""
    path.write_text(yaml.safe_dump(config))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "semproxy", "--log-level", "WARNING", "serve", "--config",
        str(path), env=cli_env(), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
    assert "semproxy listening on" in line, line
    return proc, config["listen"]


@pytest.fixture
async def up() -> AsyncIterator[FakeLLM]:
    async with FakeLLM("up") as server:
        yield server


@pytest.fixture
async def two_gateways(tmp_path: Path, redis: RedisServer, up: FakeLLM
                       ) -> AsyncIterator[list[str]]:
    procs = []
    try:
        for i in range(2):
            proc, listen = await serve(redis_config(up.url, redis.port,
                                                    f"127.0.0.1:{free_port()}"),
                                       tmp_path / f"gw{i}.yaml")
            procs.append((proc, f"http://{listen}"))
        yield [url for _, url in procs]
    finally:
        for proc, _ in procs:
            proc.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(proc.wait(), 20) == 0


async def post(http: aiohttp.ClientSession, base: str, text: str, stream: bool = False
               ) -> Answer:
    async with http.post(base + PATHS["chat"], json=body("chat", text, stream)) as resp:
        return Answer(resp.status, dict(resp.headers), await resp.read())


async def test_an_answer_stored_through_one_gateway_process_hits_on_another_within_a_second(
        two_gateways: list[str], up: FakeLLM, http: aiohttp.ClientSession) -> None:
    first, second = two_gateways
    for stream, text in ((False, "what is the capital of chile"),
                         (True, "how tall is mount everest")):
        stored = await post(http, first, text, stream)
        assert stored.cache == "MISS"
        answered = time.monotonic()
        while True:
            other = await post(http, second, text, not stream)
            if other.cache == "HIT-L1" or time.monotonic() - answered > 1.0:
                break
            await asyncio.sleep(0.02)
        assert other.cache == "HIT-L1", "no hit on the other process within 1 s"
    reworded = await post(http, second, "tell me the capital of chile")
    assert reworded.cache == "HIT-L2"
    assert len(up.posts) == 2


async def test_a_stopped_redis_server_gives_misses_without_errors_or_waits(
        gateway: Any, http: aiohttp.ClientSession, redis: RedisServer, up: FakeLLM) -> None:
    gw: RunningGateway = await gateway(redis_config(up.url, redis.port))
    assert (await post(http, gw.url, "what is the answer")).cache == "MISS"
    await gw.gateway.caches.drain()
    assert (await post(http, gw.url, "what is the answer")).cache == "HIT-L1"
    baseline = []
    for i in range(10):
        started = time.monotonic()
        await post(http, gw.url, f"question number {i} without a cache entry")
        baseline.append(time.monotonic() - started)
    await gw.gateway.caches.drain()
    redis.stop()
    for i in range(30):
        started = time.monotonic()
        answer = await post(http, gw.url, "what is the answer" if i % 2 else f"new {i}",
                            stream=i % 3 == 0)
        took = time.monotonic() - started
        assert answer.status == 200 and answer.cache == "MISS"
        assert took < max(baseline) + DEADLINE_MS / 1000 + 0.1, took
    await gw.gateway.caches.drain()
    redis.start()
    await asyncio.sleep(1.1)  # the breaker lets one call probe again
    deadline = time.monotonic() + 5
    found = None
    while time.monotonic() < deadline and found != "HIT-L1":
        found = (await post(http, gw.url, "what is the answer")).cache
        await asyncio.sleep(0.1)
    assert found == "HIT-L1"  # the entry survived in Redis (saved on shutdown)
