"""Hostile upstreams for the gateway: raw sockets that send exactly the bytes a test names."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from tests.conftest import chat
from tests.fakes.raw import RawServer, Script, answer

from semproxy.admin.run import RunningGateway

URI = "/v1/chat/completions"
Raw = Callable[..., Awaitable[RawServer]]


def completion(text: str) -> bytes:
    return b'{"object": "chat.completion", "choices": [{"message": {"content": "%s"}}]}' % (
        text.encode())


def ok(text: str) -> bytes:
    """A complete 200 answer whose body names `text`."""
    return answer(completion(text), "Content-Type: application/json")


@pytest.fixture
async def raw() -> AsyncIterator[Raw]:
    """``await raw(script)`` starts a RawServer; every one is closed at teardown."""
    started: list[RawServer] = []

    async def factory(script: Script, **options: Any) -> RawServer:
        server = await RawServer(script, **options).__aenter__()
        started.append(server)
        return server

    yield factory
    for server in started:
        await server.__aexit__(None, None, None)


async def ask(http: aiohttp.ClientSession, gw: RunningGateway, text: str = "hi",
              **extra: Any) -> tuple[int, bytes]:
    async with http.post(f"{gw.url}{URI}", json=chat(text, **extra)) as resp:
        return resp.status, await resp.read()


async def sleep_forever(reader: asyncio.StreamReader) -> None:
    """Hold the connection open until the client leaves."""
    await reader.read()
