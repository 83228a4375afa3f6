"""A big request is shelved as JSON during its upstream call (`Parsed.shelve`) and parsed
back when it fails over: the next instance gets the same request, translated the same way."""

from __future__ import annotations

import asyncio
import io

import aiohttp
import orjson
import pytest
from tests.conftest import GatewayFactory, instance, route_config

from semproxy.protocols.contract import Parsed

from .conftest import Raw, ok

MB = 1024 * 1024


def small_messages(size: int) -> list[dict[str, str]]:
    turns = [{"role": "user", "content": "hi there"}, {"role": "assistant", "content": "hello"}]
    return [*turns * (size // 60), {"role": "user", "content": "and now?"}]


# aiohttp warns (ResourceWarning, ignored outside tests) when it sends a body over 1 MiB
@pytest.mark.filterwarnings("ignore:Sending a large body directly:ResourceWarning")
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages"])
async def test_a_big_request_fails_over_whole(gateway: GatewayFactory, http: aiohttp.ClientSession,
                                              raw: Raw, path: str) -> None:
    async def failing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      n: int) -> None:
        writer.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()

    async def serving(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      n: int) -> None:
        writer.write(ok("served"))
        await writer.drain()

    first, second = await raw(failing), await raw(serving)
    gw = await gateway(route_config(
        [instance("a", first.url, priority=1), instance("b", second.url)], uri="/v1/*",
        max_req_body_size=16 * MB, fallback_strategy="http_5xx"))
    body = {"model": "auto", "max_tokens": 5, "messages": small_messages(2 * MB)}
    async with http.post(f"{gw.url}{path}", data=io.BytesIO(orjson.dumps(body)),
                         headers={"Content-Type": "application/json"}) as resp:
        assert resp.status == 200, await resp.text()
    sent = [orjson.loads(server.bodies[0]) for server in (first, second)]
    assert sent[0].pop("model") == "a-model" and sent[1].pop("model") == "b-model"
    assert sent[0] == sent[1]
    assert len(sent[1]["messages"]) == len(body["messages"])


def test_a_shelved_request_reads_back_as_it_was() -> None:
    chat = {"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 1.5}
    native = {"model": "m", "system": "s", "messages": chat["messages"]}
    shared, apart = Parsed(chat, None, native=chat), Parsed(dict(chat), None, native=native)
    for parsed in (shared, apart):
        parsed.shelve()
        assert parsed.shelved
        assert parsed.payload_json() == orjson.dumps(chat)
        assert parsed.shelved  # its JSON is read without parsing it back
        assert parsed.payload == chat
        assert not parsed.shelved
    assert shared.native is shared.payload  # still one body, as Chat's is
    assert apart.native == native and apart.native is not apart.payload


def test_a_request_orjson_cannot_write_stays_as_it_is() -> None:
    payload = {"messages": [{"role": "user", "content": "x"}], "bad": {1, 2}}
    parsed = Parsed(payload, None)
    parsed.shelve()
    assert not parsed.shelved and parsed.payload is payload
