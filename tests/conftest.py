"""Shared fixtures: the gateway on a real loopback socket, built from a config dict."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import aiohttp
import pytest
from tests.fakes.redis_server import RedisServer, redis_available

from semproxy.admin.run import RunningGateway, start
from semproxy.config.loader import load_data

GatewayFactory = Callable[..., Awaitable[RunningGateway]]


def instance(name: str, url: str | None = None, **fields: Any) -> dict[str, Any]:
    """An instance block: openai-compatible at `url`, or `echo` when no url is given."""
    inst: dict[str, Any] = {"name": name, "weight": fields.pop("weight", 1)}
    if url is None:
        inst["provider"] = "echo"
    else:
        inst["provider"] = "openai-compatible"
        inst["override"] = {"endpoint": url}
    inst.setdefault("options", {"model": f"{name}-model"})
    inst.update(fields)
    return inst


def route_config(instances: list[dict[str, Any]], uri: str = "/v1/chat/completions",
                 route_id: str = "r1", **plugin: Any) -> dict[str, Any]:
    return {
        "listen": "127.0.0.1:0",
        "routes": [{"id": route_id, "uri": uri,
                    "plugins": {"ai-proxy-multi": {"instances": instances, **plugin}}}],
    }


def chat(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "auto", "messages": [{"role": "user", "content": text}], **extra}


@pytest.fixture
async def gateway() -> AsyncIterator[GatewayFactory]:
    running: list[RunningGateway] = []

    async def factory(config: dict[str, Any], env: dict[str, str] | None = None
                      ) -> RunningGateway:
        gw = await start(load_data(config, env or {}), "127.0.0.1:0")
        running.append(gw)
        return gw

    yield factory
    for gw in running:
        await gw.close()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One real redis-server for the session (tests/fakes/redis_server.py)."""
    if not redis_available():
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis(redis_server: RedisServer) -> Iterator[RedisServer]:
    """The session redis-server, running and empty."""
    if not redis_server.is_answering():
        redis_server.start()
    redis_server.flush()
    yield redis_server
    if not redis_server.is_answering():
        redis_server.start()


@pytest.fixture(autouse=True)
def _root_log_level() -> Iterator[None]:
    """A command run in-process (cli.main) sets the root level for its own run (ERROR for
    the offline commands); later tests must see the level the session started with."""
    root = logging.getLogger()
    level = root.level
    yield
    root.setLevel(level)
