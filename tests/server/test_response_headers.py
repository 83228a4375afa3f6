"""What every answer says about itself: `Server: semproxy` (no versions), nosniff,
and `100 Continue` only for a body the route would accept."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import aiohttp.test_utils
import aiohttp.web
import orjson
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config
from tests.reliability.rawhttp import chat_head

from semproxy.admin.run import RunningGateway

from .playground_env import ADMIN_KEY, start_playground

CHAT = "/v1/chat/completions"
LIMIT = 4096


@pytest.fixture
async def gw(gateway: GatewayFactory) -> RunningGateway:
    return await gateway(route_config([instance("echo")], max_req_body_size=LIMIT))


@pytest.fixture
async def admin_gw(tmp_path: Path) -> AsyncIterator[RunningGateway]:
    running = await start_playground(tmp_path)
    yield running
    await running.close()


def assert_stamped(headers: dict[str, str] | aiohttp.typedefs.LooseHeaders) -> None:
    h = {k.lower(): v for k, v in dict(headers).items()}
    assert h["server"] == "semproxy"
    assert h["x-content-type-options"] == "nosniff"


async def test_public_answers_name_semproxy_without_versions_and_forbid_sniffing(
    gw: RunningGateway,
) -> None:
    async with aiohttp.ClientSession() as http:
        for method, path, body in [("GET", "/healthz", None), ("POST", CHAT, chat("hi")),
                                   ("POST", "/nope", chat("hi")), ("POST", CHAT, {"x": 1})]:
            async with http.request(method, gw.url + path, json=body) as resp:
                assert_stamped(resp.headers)
                assert "aiohttp" not in resp.headers["Server"].lower()


async def test_a_request_aiohttp_refuses_before_routing_names_semproxy_too(
    gw: RunningGateway,
) -> None:
    # A header line without a colon: aiohttp's parser answers 400 itself, before
    # any route or response hook runs.
    reader, writer = await asyncio.open_connection(gw.host, gw.port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n")
    await writer.drain()
    head = (await asyncio.wait_for(reader.read(4096), 5)).split(b"\r\n\r\n")[0].lower()
    writer.close()
    assert head.startswith((b"http/1.0 400", b"http/1.1 400"))
    assert b"\r\nserver: semproxy\r\n" in head + b"\r\n"
    assert b"\r\nx-content-type-options: nosniff\r\n" in head + b"\r\n"
    assert b"aiohttp" not in head and b"python" not in head


async def test_other_aiohttp_servers_in_the_process_are_left_as_they_are(
    gw: RunningGateway,
) -> None:
    # semproxy stamps the answers of its own listeners only: an application embedding
    # it, or a test server beside it, keeps aiohttp's own error answers.
    other = aiohttp.test_utils.TestServer(aiohttp.web.Application(), host="127.0.0.1")
    await other.start_server()
    try:
        for server in (gw, other):
            reader, writer = await asyncio.open_connection(server.host, server.port)
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n")
            await writer.drain()
            head = (await asyncio.wait_for(reader.read(4096), 5)).split(b"\r\n\r\n")[0]
            writer.close()
            stamped = b"\r\nserver: semproxy\r\n" in head.lower() + b"\r\n"
            assert stamped is (server is gw)
    finally:
        await other.close()


async def test_admin_and_playground_answers_are_stamped_too(admin_gw: RunningGateway) -> None:
    assert admin_gw.admin_url is not None
    async with aiohttp.ClientSession() as http:
        for path in ("/admin/config", "/ui/", "/admin/nope"):
            async with http.get(admin_gw.admin_url + path,
                                headers={"X-API-KEY": ADMIN_KEY}) as resp:
                assert_stamped(resp.headers)


async def interim(url: str, head: bytes) -> bytes:
    """The first status line the gateway sends after a head with `Expect: 100-continue`."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(head + b"\r\n\r\n")
        await writer.drain()
        async with asyncio.timeout(5):
            return await reader.readline()
    finally:
        writer.close()
        await writer.wait_closed()


async def test_an_oversized_declared_body_gets_413_instead_of_100_continue(
    gw: RunningGateway,
) -> None:
    big = b"x" * (LIMIT + 1)
    line = await interim(gw.url, chat_head(CHAT, big, b"Expect: 100-continue"))
    assert line.startswith(b"HTTP/1.1 413"), line


async def test_an_unknown_path_gets_no_100_continue(gw: RunningGateway) -> None:
    line = await interim(gw.url, chat_head("/nope", b"{}", b"Expect: 100-continue"))
    assert line.startswith(b"HTTP/1.1 404"), line


async def test_an_acceptable_body_gets_100_continue_then_its_answer(gw: RunningGateway) -> None:
    body = orjson.dumps(chat("hi"))
    line = await interim(gw.url, chat_head(CHAT, body, b"Expect: 100-continue"))
    assert line.startswith(b"HTTP/1.1 100"), line


async def test_echo_completion_ids_are_unique(gw: RunningGateway) -> None:
    async with aiohttp.ClientSession() as http:
        ids = set()
        for _ in range(3):
            async with http.post(gw.url + CHAT, json=chat("hi")) as resp:
                ids.add((await resp.json())["id"])
    assert len(ids) == 3
