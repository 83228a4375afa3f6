"""The client connection cap under busy clients (issue 24's probe).

At the cap the oldest busy connections can only leave after their answer, so a
cap that admitted every newcomer while asking them to leave held twice its
size, and under a 1024 open-file limit 480 requests in flight plus 50 idle
connections left `/healthz` reset with nothing logged. Now idle connections
leave first, the connections open never pass the cap's small headroom (those
beyond get a logged 503 at once), and `/healthz` keeps answering.
"""

from __future__ import annotations

import asyncio
import resource
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from tests.fakes import FakeLLM

from semproxy.server.listener import ConnectionCap

from .process import GatewayProcess

SLOW = orjson.dumps({"model": "auto", "messages": [{"role": "user", "content": "slow:6000"}]})


def config(url: str) -> dict[str, Any]:
    return {"listen": "127.0.0.1:0", "routes": [{"id": "r", "uri": "/v1/chat/completions",
            "plugins": {"ai-proxy-multi": {"instances": [{
                "name": "a", "provider": "openai-compatible", "weight": 1,
                "override": {"endpoint": url}}]}}}]}


async def connect(gw: GatewayProcess) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = gw.url.removeprefix("http://").rsplit(":", 1)
    return await asyncio.open_connection(host, int(port))


async def busy(gw: GatewayProcess) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await connect(gw)
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                 b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(SLOW), SLOW))
    await writer.drain()
    return reader, writer


async def status_within(reader: asyncio.StreamReader, seconds: float) -> int | None:
    """The status of an answer that arrives within `seconds`, else None; -1 for a reset
    (a shed client whose socket could not wait for it to read its 503)."""
    try:
        async with asyncio.timeout(seconds):
            line = await reader.readline()
    except TimeoutError:
        return None
    except ConnectionResetError:
        return -1
    return int(line.split()[1]) if line.startswith(b"HTTP/1.1 ") else 0


async def healthz(gw: GatewayProcess) -> int | None:
    reader, writer = await connect(gw)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    status = await status_within(reader, 5)
    writer.close()
    return status


async def test_busy_clients_beyond_the_cap_are_shed_not_admitted_twice_over(
        tmp_path: Path) -> None:
    async with FakeLLM("up") as up:
        gw = GatewayProcess(config(up.url), tmp_path, args=("--max-connections", "20"))
        await gw.astart()
        clients = []
        try:
            for _ in range(40):
                clients.append(await busy(gw))
                await asyncio.sleep(0.01)  # arrive one by one, as clients do
            await asyncio.sleep(1.0)
            shed = [await status_within(r, 0.2) for r, _ in clients]
            in_flight = up.calls
        finally:
            for _, writer in clients:
                writer.close()
            gw.stop()
    # The cap (20) plus its headroom (4) got in; the others were told 503 at once.
    assert shed.count(503) + shed.count(-1) >= 40 - 24 and shed.count(503) >= 12, shed
    assert in_flight <= 24, in_flight  # the old cap let all 40 in: twice its size
    assert "client connections shed" in gw.logs()


@pytest.mark.skipif(resource.getrlimit(resource.RLIMIT_NOFILE)[0] < 2048,
                    reason="the test itself holds about 1,100 sockets")
async def test_under_a_1024_file_limit_requests_in_flight_and_idle_ones_leave_healthz_up(
        tmp_path: Path) -> None:
    async with FakeLLM("up") as up:
        gw = GatewayProcess(config(up.url), tmp_path, open_files=(1024, 1024))
        await gw.astart()
        clients: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        try:
            for _ in range(480):
                clients.append(await busy(gw))
            async with asyncio.timeout(30):
                while up.calls < 480:  # every request holds its upstream connection
                    await asyncio.sleep(0.1)
            for _ in range(50):
                clients.append(await connect(gw))
            await asyncio.sleep(0.5)
            status = await healthz(gw)
            fds = gw.fd_count()
        finally:
            for _, writer in clients:
                writer.close()
            gw.stop()
    assert status == 200
    assert fds < 1024
    logs = gw.logs()
    assert "client connection cap reached" in logs
    assert "Too many open files" not in logs


class CountingServer(web.Server):
    """aiohttp's server, counting the copies its public `connections` makes."""

    copies = 0

    @property
    def connections(self) -> list[web.RequestHandler]:
        type(self).copies += 1
        return super().connections


class ListTable(MutableMapping[Any, Any]):
    """A connection table that is no dict: how a future aiohttp might keep it."""

    def __init__(self) -> None:
        self._data: dict[Any, Any] = {}

    def __getitem__(self, key: Any) -> Any:
        return self._data[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._data[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


async def handler(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def open_idle(server: web.Server, limit: int, n: int) -> tuple[ConnectionCap, int]:
    """`n` idle clients against a capped listener of `server`; the connections it kept."""
    cap = ConnectionCap(server, limit)
    listener = await asyncio.get_running_loop().create_server(cap, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    clients = [await asyncio.open_connection("127.0.0.1", port) for _ in range(n)]
    await asyncio.sleep(0.2)
    kept = len(server.connections)
    for _, writer in clients:
        writer.close()
    listener.close()
    await server.shutdown(0)
    return cap, kept


async def test_an_accept_reads_the_connection_count_without_copying_the_list() -> None:
    CountingServer.copies = 0
    server = CountingServer(handler)
    _, kept = await open_idle(server, 50, 120)
    assert kept <= 50 + 4
    assert CountingServer.copies == 1  # the test's own; none per accept (it was one each)


async def test_an_aiohttp_keeping_connections_otherwise_is_noticed_and_still_capped(
        caplog: pytest.LogCaptureFixture) -> None:
    CountingServer.copies = 0
    server = CountingServer(handler)
    server._connections = ListTable()  # type: ignore[assignment]
    cap, kept = await open_idle(server, 50, 120)
    assert kept <= 50 + 4
    assert CountingServer.copies > 1  # the public, copying list stands in
    assert "aiohttp keeps its connections differently" in caplog.text
    assert cap.limit == 50
