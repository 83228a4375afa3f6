"""Health in the failover loop: passive trips and probes, active checks, checker lifecycle."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import aiohttp
from tests.conftest import GatewayFactory, chat, instance, route_config
from tests.fakes import FakeLLM

from semproxy.admin.run import RunningGateway
from semproxy.config.loader import load_data

from .conftest import Upstreams, post, served_by

PASSIVE = {"failures": 2, "window": 5, "cooldown": 0.3}
FAST_ACTIVE = {"timeout": 0.3, "unhealthy": {"tcp_failures": 1, "http_failures": 1}}


def health_of(gw: RunningGateway, name: str) -> bool:
    return gw.gateway.table.routes[0].health.is_healthy(name)


async def until(condition: Callable[[], bool], timeout: float = 2.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


def passive_pair(a: FakeLLM, b: FakeLLM) -> dict[str, Any]:
    return route_config([instance("a", a.url, checks={"passive": PASSIVE}),
                         instance("b", b.url)],
                        fallback_strategy="http_5xx", debug_headers=True)


async def tripped_pair(gateway: GatewayFactory, http: aiohttp.ClientSession,
                       upstreams: Upstreams) -> tuple[FakeLLM, RunningGateway]:
    """A gateway over a (503 on everything, passive checks) and b; a tripped already."""
    a, b = await upstreams("a", "b")
    a.default_status = 503
    gw = await gateway(passive_pair(a, b))
    while a.calls < PASSIVE["failures"]:
        status, _, body = await post(http, gw, chat("hello"))
        assert (status, served_by(body)) == (200, "b")
    return a, gw


async def test_an_instance_failing_n_times_stops_receiving_traffic(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    a, gw = await tripped_pair(gateway, http, upstreams)
    assert not health_of(gw, "a")
    for _ in range(6):
        _, headers, _ = await post(http, gw, chat("hello"))
        assert "X-AI-Failover" not in headers  # a is skipped, not tried and failed
    assert a.calls == PASSIVE["failures"]


async def test_a_tripped_instance_comes_back_after_the_cooldown_probe(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    a, gw = await tripped_pair(gateway, http, upstreams)
    a.default_status = 200
    await asyncio.sleep(PASSIVE["cooldown"] + 0.05)
    served = [served_by((await post(http, gw, chat("hello")))[2]) for _ in range(4)]
    assert "a" in served
    assert health_of(gw, "a")


async def test_a_failed_probe_keeps_the_instance_out_for_another_cooldown(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    a, gw = await tripped_pair(gateway, http, upstreams)
    await asyncio.sleep(PASSIVE["cooldown"] + 0.05)
    for _ in range(4):
        await post(http, gw, chat("hello"))
    assert a.calls == PASSIVE["failures"] + 1  # exactly one probe, which failed
    assert not health_of(gw, "a")


async def test_when_every_instance_is_unhealthy_all_are_tried_anyway(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    a, b = await upstreams("a", "b")
    gw = await gateway(passive_pair(a, b))
    health = gw.gateway.table.routes[0].health
    health.mark("a", False)
    health.mark("b", False)
    status, _, body = await post(http, gw, chat("hello"))
    assert (status, served_by(body)) == (200, "a")


async def test_active_checks_mark_a_dead_instance_before_any_request_reaches_it(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    a, b = await upstreams("a", "b")
    await a.close()
    config = route_config([instance("a", a.url, checks={"active": FAST_ACTIVE}),
                           instance("b", b.url, checks={"active": FAST_ACTIVE})],
                          debug_headers=True)
    gw = await gateway(config)
    await until(lambda: not health_of(gw, "a"))
    for _ in range(4):
        status, headers, _ = await post(http, gw, chat("hello"))
        assert (status, headers["X-AI-Instance"]) == (200, "b")
        assert "X-AI-Failover" not in headers
    assert health_of(gw, "b")


async def test_active_checks_follow_the_table_and_stop_on_shutdown(
    gateway: GatewayFactory, upstreams: Upstreams,
) -> None:
    a, c = await upstreams("a", "c")
    gw = await gateway(route_config([instance("a", a.url, checks={"active": FAST_ACTIVE})]))
    await until(lambda: len(a.requests) >= 1)  # the first probe goes out at start
    new = route_config([instance("c", c.url, checks={"active": FAST_ACTIVE})])
    await gw.gateway.apply(load_data(new, {}))
    await until(lambda: len(c.requests) >= 1)
    probes_of_a = len(a.requests)
    await asyncio.sleep(1.2)  # longer than the 1 s probe interval
    assert len(a.requests) == probes_of_a
    await gw.close()
    assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("health-probe:")]
