"""What a client gets when an upstream's answer breaks translation (issue 24's probe).

A started stream ends with the client protocol's own error event and a clean
end of the body (never a second HTTP answer in the middle of it), and the
access line says why; the same answer unstreamed is a 502. An upstream error
mid-stream reaches Messages and Responses clients as an error; an interim 1xx
status is no answer; a translated stream holds no more than a whole answer may.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import aiohttp
import orjson
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config
from tests.fakes.raw import answer

from semproxy.observability.logging import JsonFormatter

from .conftest import Raw, sleep_forever

SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
DEEP = b"[" * 300 + b"]" * 300  # orjson reads it, but writes at most 255 levels


def chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def anthropic(kind: str, **fields: Any) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (kind.encode(), orjson.dumps({"type": kind, **fields}))


def chat_chunk(**fields: Any) -> bytes:
    return b"data: " + orjson.dumps({"model": "m", "choices": [
        {"index": 0, "delta": fields, "finish_reason": None}]}) + b"\n\n"


def streaming(*events: bytes, end: bool = True) -> Any:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        writer.write(SSE_HEAD + b"".join(chunked(e) for e in events)
                     + (b"0\r\n\r\n" if end else b""))
        await writer.drain()
        if not end:
            writer.close()
            return
        await sleep_forever(reader)
    return script


def access_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    fmt = JsonFormatter()
    return [json.loads(fmt.format(r)) for r in caplog.records if r.name == "semproxy.access"]


def native(url: str) -> dict[str, Any]:
    return {"name": "c", "provider": "anthropic-messages", "weight": 1,
            "options": {"model": "claude-x"}, "override": {"endpoint": url}}


async def read_all(resp: aiohttp.ClientResponse) -> bytes:
    """The whole body: raises if the framing broke (a second answer inside the body)."""
    return await resp.read()


async def test_a_translator_error_inside_a_started_stream_ends_it_with_an_error_event(
        gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "semproxy.access")
    up = await raw(streaming(
        anthropic("message_start", message={"id": "m1", "model": "claude-x", "usage": {}}),
        anthropic("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        anthropic("content_block_delta", index=0, delta={"type": "text_delta", "text": "hi"}),
        b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", '
        b'"detail": ' + DEEP + b"}}\n\n"))
    gw = await gateway(route_config([native(up.url)]))
    async with http.post(f"{gw.url}/v1/chat/completions", json=chat("x", stream=True)) as resp:
        assert resp.status == 200
        body = await read_all(resp)
    events = [line for line in body.split(b"\n\n") if line]
    assert orjson.loads(events[-1].removeprefix(b"data: "))["error"]["type"] == "upstream_error"
    assert b"HTTP/1.1" not in body
    # The body ended cleanly: the same keep-alive connection serves the next request.
    async with http.get(f"{gw.url}/healthz") as again:
        assert again.status == 200
    line = access_lines(caplog)[0]
    assert line["status"] == 200 and line["stream_error"] == "untranslatable"


WRONG_TYPED = {
    # An Anthropic message whose tool input nests past what orjson writes, to a Chat
    # client: it cannot be translated (502).
    "native": (b'{"id": "m", "type": "message", "role": "assistant", "model": "claude-x", '
               b'"content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"d": '
               + DEEP + b'}}], "stop_reason": "tool_use", "usage": {"input_tokens": 1}}'),
    # A completion whose usage count is a string, to a Responses client: the answer is
    # good, the count is not read (it was a 500).
    "chat": b'{"object": "chat.completion", "model": "m", "choices": [{"message": {"content": '
            b'"x"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": "abc"}}',
}


@pytest.mark.parametrize("upstream", sorted(WRONG_TYPED))
async def test_the_same_answers_unstreamed_are_never_a_500(
        gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw, upstream: str) -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        writer.write(answer(WRONG_TYPED[upstream], "Content-Type: application/json"))

    url = (await raw(script)).url
    inst = native(url) if upstream == "native" else instance("a", url)
    gw = await gateway(route_config([inst], uri="/v1/*"))
    path, body = ("/v1/chat/completions", chat("x")) if upstream == "native" else \
        ("/v1/responses", {"model": "auto", "input": "x"})
    async with http.post(f"{gw.url}{path}", json=body) as resp:
        got = await resp.json()
    if upstream == "native":
        assert resp.status == 502 and got["error"]["type"] == "upstream_error"
    else:
        assert resp.status == 200 and got["usage"] is None


@pytest.mark.parametrize(("path", "body", "last"), [
    ("/v1/messages", {"model": "auto", "max_tokens": 9, "stream": True,
                      "messages": [{"role": "user", "content": "x"}]}, b"event: error"),
    ("/v1/responses", {"model": "auto", "input": "x", "stream": True}, b"event: error"),
])
@pytest.mark.parametrize("ending", ["error_event", "cut"])
async def test_an_upstream_error_mid_stream_reaches_the_client_as_an_error(
        gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw,
        caplog: pytest.LogCaptureFixture, path: str, body: dict[str, Any], last: bytes,
        ending: str) -> None:
    caplog.set_level(logging.INFO, "semproxy.access")
    events = [chat_chunk(role="assistant", content=""), chat_chunk(content="half")]
    if ending == "error_event":
        events.append(b'data: {"error": {"message": "model overloaded"}}\n\n')
    up = await raw(streaming(*events, end=ending == "error_event"))
    gw = await gateway(route_config([instance("a", up.url)], uri="/v1/*"))
    async with http.post(f"{gw.url}{path}", json=body) as resp:
        assert resp.status == 200
        got = await resp.read()
    tail = got.strip().split(b"\n\n")[-1]
    assert tail.startswith(last), got[-300:]
    assert b"message_stop" not in got and b"response.completed" not in got
    if ending == "error_event":
        assert b"model overloaded" in tail
    line = access_lines(caplog)[0]
    assert line["stream_error"] in ("upstream_error", "incomplete")


async def test_an_interim_status_is_not_relayed_as_the_answer(
        gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw) -> None:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     b"Connection: Upgrade\r\n\r\n")
        await sleep_forever(reader)

    gw = await gateway(route_config([instance("a", (await raw(script)).url)]))
    async with http.post(f"{gw.url}/v1/chat/completions", json=chat("x")) as resp:
        assert resp.status == 502
        assert "interim status 101" in (await resp.json())["error"]["message"]


async def test_a_responses_stream_holds_no_more_than_a_whole_answer_may(
        gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "semproxy.access")
    piece = chat_chunk(content="x" * 60_000)
    up = await raw(streaming(chat_chunk(role="assistant", content=""), *[piece] * 40))
    gw = await gateway(route_config([instance("a", up.url)], uri="/v1/*",
                                    max_resp_body_size=1_000_000))
    async with http.post(f"{gw.url}/v1/responses",
                         json={"model": "auto", "input": "x", "stream": True}) as resp:
        got = await resp.read()
    tail = got.strip().split(b"\n\n")[-1]
    assert tail.startswith(b"event: error") and b"max_resp_body_size" in tail
    assert len(got) < 2_000_000  # the answer stopped at the cap, not after 2.4 MB more
    assert access_lines(caplog)[0]["stream_error"] == "upstream_error"
