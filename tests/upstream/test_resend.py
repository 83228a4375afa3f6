"""A POST the upstream may have received is never sent again unless the route asks.

Each request is a billed LLM call. A connection that breaks after the request
went out (a reused one closed before any answer, a reset, a timeout) may mean
the upstream is working on it: only a route with a failover policy
(`fallback_strategy`, `fallback_http_statuses`, `max_retries`) re-sends it. A
connection that could not be made sent nothing, and that is always retried.
"""

from __future__ import annotations

import asyncio

import aiohttp
from tests.conftest import GatewayFactory, instance, route_config

from .conftest import Raw, ask, completion, ok


def hang_up_on_second(calls: list[int]):  # type: ignore[no-untyped-def]
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     n: int) -> None:
        calls.append(n)
        if n == 2:  # read the request, then close the kept-alive connection unanswered
            writer.close()
        else:
            writer.write(ok(f"answer {n}"))
    return script


async def test_a_reused_connection_closed_before_any_answer_is_not_resent(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    calls: list[int] = []
    up = await raw(hang_up_on_second(calls))
    other = await raw(hang_up_on_second([]))
    gw = await gateway(route_config([instance("a", up.url), instance("b", other.url,
                                                                       weight=0)],
                                    debug_headers=True))  # the error body says why
    assert await ask(http, gw) == (200, completion("answer 1"))
    status, body = await ask(http, gw)
    assert status == 502 and b"reset" in body
    assert calls == [1, 2]  # the upstream saw the POST once
    assert other.heads == []  # and no other instance got it either


async def test_with_a_failover_policy_the_request_moves_to_the_next_instance(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    calls: list[int] = []
    up = await raw(hang_up_on_second(calls))

    async def fine(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        writer.write(ok("from b"))

    other = await raw(fine)
    config = route_config([instance("a", up.url, priority=1), instance("b", other.url)],
                          max_retries=1)
    gw = await gateway(config)
    assert await ask(http, gw) == (200, completion("answer 1"))
    assert await ask(http, gw) == (200, completion("from b"))
    assert calls == [1, 2] and len(other.heads) == 1


async def test_a_refused_connection_sent_nothing_and_fails_over_without_a_policy(
    gateway: GatewayFactory, http: aiohttp.ClientSession, raw: Raw
) -> None:
    async def fine(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, n: int) -> None:
        writer.write(ok("from b"))

    gone = await raw(fine)
    refused = gone.url
    await gone.__aexit__(None, None, None)
    other = await raw(fine)
    gw = await gateway(route_config([instance("a", refused, priority=1),
                                     instance("b", other.url)]))
    assert await ask(http, gw) == (200, completion("from b"))
