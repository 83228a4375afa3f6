"""The phase seams the next features plug into, exercised through the real request path:
an early answer relayed in the client's protocol and mode, a refusal rendered in it,
an instance gate and response headers, a stream tap, and accounting after all of them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from tests.conftest import chat, instance, route_config

from semproxy.config.loader import load_data
from semproxy.errors import GatewayError
from semproxy.observability.observer import SilentObserver
from semproxy.protocols.registry import conversion
from semproxy.runtime.compile import compile_table
from semproxy.server.call import CallPhase
from semproxy.server.exchange import Answer, Exchange
from semproxy.server.pipeline import Phase, Pipeline, Version, handle
from semproxy.server.route import RoutePhase
from semproxy.transport.memory import MemoryReply
from semproxy.transport.schemes import SchemeTransport
from semproxy.types import Usage

STORED = {"id": "chatcmpl-stored", "object": "chat.completion", "created": 0, "model": "m",
          "choices": [{"index": 0, "message": {"role": "assistant", "content": "stored answer"},
                       "finish_reason": "stop"}],
          "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}


def stored_events() -> list[bytes]:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
             "choices": [{"index": 0, "delta": {"content": "stored answer"},
                          "finish_reason": "stop"}]}
    final = {**chunk, "choices": [], "usage": STORED["usage"]}
    return [b"data: " + orjson.dumps(chunk) + b"\n\n", b"data: " + orjson.dumps(final) + b"\n\n",
            b"data: [DONE]\n\n"]


class StoredAnswer:
    """A lookup that always hits, with an answer stored in Chat Completions form."""

    async def run(self, exchange: Exchange) -> Answer | None:
        assert exchange.parsed is not None
        speaks, back = conversion(exchange.protocol.name, "chat") or (None, None)
        assert speaks is not None
        exchange.source = "cache"
        if exchange.parsed.payload.get("stream") is True:
            return Answer(MemoryReply(stored_events(), "text/event-stream"), speaks, back)
        return Answer(MemoryReply([orjson.dumps(STORED)], "application/json"), speaks, back)


class RateLimited(GatewayError):
    status = 429
    type = "rate_limit_exceeded"
    code = "rate_limit_exceeded"


class Refuse:
    async def run(self, exchange: Exchange) -> Answer | None:
        raise RateLimited("over the limit", headers={"Retry-After": "7"})


class NotA:
    async def allows(self, exchange: Exchange, instance: str) -> bool:
        return instance != "a"


class Admit:
    """Adds a response header and keeps instance `a` out of the failover loop."""

    async def run(self, exchange: Exchange) -> Answer | None:
        exchange.headers = {"x-ratelimit-remaining-requests": "41"}
        exchange.gates = [NotA()]
        return None


class Tap:
    def __init__(self) -> None:
        self.seen = b""
        self.ended: tuple[Usage | None, bool] | None = None

    def events(self, data: bytes, protocol: str) -> None:
        self.seen += data

    def end(self, usage: Usage | None, complete: bool) -> None:
        self.ended = (usage, complete)


class Tapping:
    def __init__(self, tap: Tap) -> None:
        self.tap = tap

    async def run(self, exchange: Exchange) -> Answer | None:
        exchange.taps = [self.tap]
        return None


class Ledger:
    """An accounting half: what every request left behind."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, int, Usage | None]] = []

    async def account(self, exchange: Exchange) -> None:
        self.rows.append((exchange.source, exchange.status, exchange.usage))


Serve = Callable[[Callable[[Any], list[Phase]], Ledger], Awaitable[str]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """A gateway whose only route (`/v1/*`, echo instances a and b, round-robin) runs the
    phases a test names, built on the route the way the compile step builds them."""
    servers: list[TestServer] = []
    transport = SchemeTransport()

    async def start(phases: Callable[[Any], list[Phase]], ledger: Ledger) -> str:
        config = load_data(route_config([instance("a"), instance("b")], uri="/v1/*"), env={})
        table = compile_table(config, transport)
        route = table.routes[0]
        version = Version(table, {route.spec.id: Pipeline(tuple(phases(route)), (ledger,))})

        async def proxy(request: web.Request) -> web.StreamResponse:
            return await handle(request, version, SilentObserver())

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", proxy)
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        servers.append(server)
        return f"http://127.0.0.1:{server.port}"

    yield start
    for server in servers:
        await server.close()
    await transport.aclose()


MESSAGES = {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}


async def test_an_early_answer_is_relayed_in_the_clients_protocol_and_mode(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    ledger = Ledger()
    url = await serve(lambda route: [StoredAnswer()], ledger)
    async with http.post(url + "/v1/messages", json={**MESSAGES, "stream": True}) as resp:
        assert resp.status == 200 and resp.content_type == "text/event-stream"
        text = (await resp.read()).decode()
    assert "event: message_start" in text and '"text":"stored answer"' in text
    assert text.rstrip().endswith('data: {"type":"message_stop"}')
    async with http.post(url + "/v1/chat/completions", json=chat("hi")) as resp:
        assert await resp.json() == STORED
    async with http.post(url + "/v1/responses", json={"model": "m", "input": "hi"}) as resp:
        body = await resp.json()
    assert body["output"][0]["content"][0]["text"] == "stored answer"
    # Accounting ran for each, with the usage the stored answer reports.
    assert ledger.rows == [("cache", 200, Usage(input=3, output=2))] * 3


async def test_a_refusal_is_an_error_in_the_clients_protocol_and_is_accounted(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    ledger = Ledger()
    url = await serve(lambda route: [Refuse(), RoutePhase(route)], ledger)
    async with http.post(url + "/v1/messages", json=MESSAGES) as resp:
        assert resp.status == 429 and resp.headers["Retry-After"] == "7"
        body = await resp.json()
    assert body["error"] == {"type": "rate_limit_error", "message": "over the limit"}
    async with http.post(url + "/v1/chat/completions", json=chat("hi")) as resp:
        assert (await resp.json())["error"]["code"] == "rate_limit_exceeded"
    assert ledger.rows == [("upstream", 429, None)] * 2


async def test_a_gate_keeps_an_instance_out_and_headers_reach_every_answer(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    ledger = Ledger()
    transport = SchemeTransport()
    url = await serve(lambda route: [Admit(), RoutePhase(route), CallPhase(route, transport)],
                      ledger)
    for _ in range(2):  # round-robin would give `a` one of the two
        async with http.post(url + "/v1/chat/completions", json=chat("hi")) as resp:
            assert resp.headers["x-ratelimit-remaining-requests"] == "41"
            text = (await resp.json())["choices"][0]["message"]["content"]
        assert text.startswith("[b] ")
    assert [status for _, status, _ in ledger.rows] == [200, 200]


async def test_a_tap_sees_the_upstream_events_and_the_final_usage(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    tap, ledger, transport = Tap(), Ledger(), SchemeTransport()
    url = await serve(lambda route: [Tapping(tap), RoutePhase(route),
                                     CallPhase(route, transport)], ledger)
    async with http.post(url + "/v1/messages", json={**MESSAGES, "stream": True}) as resp:
        await resp.read()
    assert b"chat.completion.chunk" in tap.seen and b"data: [DONE]" in tap.seen
    assert tap.ended is not None and tap.ended[1] is True
    assert tap.ended[0] == ledger.rows[0][2] and ledger.rows[0][2] is not None
