"""Every wait on an upstream ends, through the gateway, on real sockets.

- connecting: bounded by the route's `timeout`, and by the attempt deadline;
- the answer's headers, and a whole answer's body: the attempt deadline
  (`attempt_timeout`, default `timeout`), however steadily the bytes drip; and
  when the attempt may last longer than `timeout`, `timeout` of silence ends it
  too;
- a stream: `timeout` of silence between events, and `timeout` for one event
  to complete (test_streams.py has the dripped event and the long stream).

One timer per attempt does all of the whole answer's bounding (transport/deadline.py);
these tests hold each bound where it was before it.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator

import aiohttp
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config

from .conftest import URI, Raw, ask, ok, sleep_forever

SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")


@pytest.fixture
def unanswered() -> Iterator[str]:
    """The URL of a listener whose accept queue is full: a connection is never made."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    queued = []
    for _ in range(4):  # fills the queue; later SYNs are dropped, so connect() hangs
        client = socket.socket()
        client.setblocking(False)
        client.connect_ex(("127.0.0.1", port))
        queued.append(client)
    yield f"http://127.0.0.1:{port}/v1/chat/completions"
    for s in (*queued, listener):
        s.close()


async def timed(coro: object) -> tuple[object, float]:
    started = time.monotonic()
    result = await coro  # type: ignore[misc]
    return result, time.monotonic() - started


async def test_connecting_is_bounded_by_the_attempt_deadline(
    gateway: GatewayFactory, http: aiohttp.ClientSession, unanswered: str
) -> None:
    gw = await gateway(route_config([instance("a", unanswered)], timeout=300))
    (status, body), took = await timed(ask(http, gw))
    assert status == 504 and b"upstream_timeout" in body
    assert 0.25 < took < 2.0


async def test_a_connection_not_made_within_timeout_fails_over_as_nothing_was_sent(
    gateway: GatewayFactory, http: aiohttp.ClientSession, unanswered: str, raw: Raw
) -> None:
    async def good(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   n: int) -> None:
        writer.write(ok("from b"))

    up = await raw(good)
    # The attempt may last 3 s, but connecting only `timeout`; no failover policy is
    # set, and the request still moves on: it never left.
    gw = await gateway(route_config([instance("a", unanswered), instance("b", up.url)],
                                    timeout=300, attempt_timeout=3000))
    (status, body), took = await timed(ask(http, gw))
    assert status == 200 and b"from b" in body
    assert 0.25 < took < 2.0


async def test_headers_later_than_the_attempt_deadline_are_a_504(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def late(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   n: int) -> None:
        await sleep_forever(reader)

    up = await raw(late)
    gw = await gateway(route_config([instance("a", up.url)], timeout=300))
    (status, body), took = await timed(ask(http, gw))
    assert status == 504 and b"upstream_timeout" in body
    assert 0.25 < took < 2.0


async def test_headers_dripped_within_each_read_are_cut_at_the_attempt_deadline(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   n: int) -> None:
        for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0.05)

    up = await raw(drip)
    gw = await gateway(route_config([instance("a", up.url)], timeout=300,
                                    attempt_timeout=800))
    (status, _), took = await timed(ask(http, gw))
    assert status == 504
    assert 0.7 < took < 2.5


async def test_silence_longer_than_timeout_ends_an_attempt_allowed_longer(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     n: int) -> None:
        if n == 2:  # the second request: headers and part of the body, then nothing
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345")
        await sleep_forever(reader)

    up = await raw(silent)
    gw = await gateway(route_config([instance("a", up.url)], timeout=300,
                                    attempt_timeout=5000))
    for _ in range(2):  # silent before the headers, then silent mid-body
        (status, body), took = await timed(ask(http, gw))
        assert status == 504 and b"upstream_timeout" in body
        assert 0.25 < took < 2.0


async def test_a_body_that_stops_is_cut_at_the_attempt_deadline(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def stops(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    n: int) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345")
        await sleep_forever(reader)

    up = await raw(stops)
    gw = await gateway(route_config([instance("a", up.url)], timeout=300))
    (status, _), took = await timed(ask(http, gw))
    assert status == 504
    assert 0.25 < took < 2.0


async def test_a_stream_silent_between_events_ends_with_an_error_event(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def stalls(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     n: int) -> None:
        event = b'data: {"ok": 1}\n\n'
        writer.write(SSE_HEAD + b"%x\r\n%s\r\n" % (len(event), event))
        await sleep_forever(reader)

    up = await raw(stalls)
    gw = await gateway(route_config([instance("a", up.url)], timeout=400))
    started = time.monotonic()
    async with http.post(f"{gw.url}{URI}", json=chat("hi", stream=True)) as resp:
        assert resp.status == 200
        body = await asyncio.wait_for(resp.read(), 10)
    took = time.monotonic() - started
    assert body.startswith(b'data: {"ok": 1}\n\n')
    assert b"upstream stream ended unexpectedly" in body
    assert 0.35 < took < 2.5


async def test_a_slow_answer_within_its_deadline_is_served_whole(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   n: int) -> None:
        await asyncio.sleep(0.2)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nab")
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.write(b"cd")

    up = await raw(slow)
    gw = await gateway(route_config([instance("a", up.url)], timeout=1500))
    assert await ask(http, gw) == (200, b"abcd")
