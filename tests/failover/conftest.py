"""Upstreams for failover tests: FakeLLMs, a silent black hole and a closed port."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import aiohttp
import pytest
from tests.fakes import FakeLLM

from semproxy.admin.run import RunningGateway

URI = "/v1/chat/completions"
Upstreams = Callable[..., Awaitable[list[FakeLLM]]]


class BlackHole:
    """Accepts connections, reads the request and never answers: an upstream that hangs."""

    def __init__(self) -> None:
        self.accepted = 0
        self._writers: list[asyncio.StreamWriter] = []
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def start(self) -> BlackHole:
        self._server = await asyncio.start_server(self._hold, "127.0.0.1", 0)
        return self

    async def _hold(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self._writers.append(writer)
        with contextlib.suppress(ConnectionError):
            await reader.read()  # until the client gives up and closes
        writer.close()

    async def close(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for writer in self._writers:
            writer.close()
        await self._server.wait_closed()


@pytest.fixture
async def upstreams() -> AsyncIterator[Upstreams]:
    """``await upstreams("a", "b")`` starts FakeLLMs named a and b; all close at teardown."""
    started: list[FakeLLM] = []

    async def factory(*names: str) -> list[FakeLLM]:
        fakes = [await FakeLLM(name).start() for name in names]
        started.extend(fakes)
        return fakes

    yield factory
    for fake in started:
        await fake.close()


@pytest.fixture
async def black_hole() -> AsyncIterator[BlackHole]:
    hole = await BlackHole().start()
    yield hole
    await hole.close()


@pytest.fixture
def refused_url() -> Iterator[str]:
    """The URL of a loopback port bound but never listening: connections are refused.
    The socket is held for the whole test, so no server started later (the gateway's
    own listener included) can be given that port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def fallbacks(caplog: pytest.LogCaptureFixture) -> Callable[[], list[str]]:
    """The fallback warnings logged so far, as plain strings."""
    caplog.set_level(logging.WARNING, logger="semproxy.proxy")

    def messages() -> list[str]:
        return [r.getMessage() for r in caplog.records
                if r.name == "semproxy.proxy" and "falling back" in r.getMessage()]

    return messages


async def post(http: aiohttp.ClientSession, gw: RunningGateway, body: dict[str, Any],
               headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    async with http.post(f"{gw.url}{URI}", json=body, headers=headers or {}) as resp:
        return resp.status, dict(resp.headers), await resp.json()


def served_by(body: Any) -> str:
    """Which FakeLLM wrote the completion ("[a] a-model: ..." -> "a")."""
    content: str = body["choices"][0]["message"]["content"]
    return content[1:content.index("]")]
