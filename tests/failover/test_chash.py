"""Failover on a consistent-hash route: a key's owner fails, the ring's next instance serves."""

from __future__ import annotations

from typing import Any

import aiohttp
from tests.conftest import GatewayFactory, chat, instance, route_config
from tests.fakes import FakeLLM

from semproxy.admin.run import RunningGateway

from .conftest import Upstreams, post, served_by

SESSIONS = [f"user-{i}" for i in range(12)]


def chash_config(fakes: list[FakeLLM], **plugin: Any) -> dict[str, Any]:
    return route_config(
        [instance(f.name, f.url) for f in fakes],
        balancer={"algorithm": "chash", "hash_on": "header", "key": "x-session"},
        fallback_strategy="http_5xx", debug_headers=True, **plugin)


async def owners(http: aiohttp.ClientSession, gw: RunningGateway) -> dict[str, str]:
    found = {}
    for session in SESSIONS:
        _, headers, _ = await post(http, gw, chat("hi"), {"x-session": session})
        found[session] = headers["X-AI-Instance"]
    return found


async def test_keys_of_a_failing_owner_move_and_every_other_key_stays(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    fakes = await upstreams("a", "b", "c")
    gw = await gateway(chash_config(fakes))
    before = await owners(http, gw)
    victim = before[SESSIONS[0]]
    next(f for f in fakes if f.name == victim).default_status = 500
    after = await owners(http, gw)
    for session in SESSIONS:
        if before[session] == victim:
            assert after[session] != victim
        else:
            assert after[session] == before[session]
    # The spill-over target is itself stable: same key, same substitute.
    assert await owners(http, gw) == after


async def test_the_first_attempt_goes_to_the_owner_and_the_fallback_is_logged_once(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    fakes = await upstreams("a", "b", "c")
    gw = await gateway(chash_config(fakes))
    _, headers, _ = await post(http, gw, chat("hi"), {"x-session": "user-7"})
    owner = headers["X-AI-Instance"]
    owner_fake = next(f for f in fakes if f.name == owner)
    owner_fake.fail_next = [503]
    calls = owner_fake.calls
    code, headers, body = await post(http, gw, chat("hi"), {"x-session": "user-7"})
    assert code == 200
    assert headers["X-AI-Failover"] == f"{owner}>{served_by(body)}"
    assert owner_fake.calls == calls + 1


async def test_a_lower_priority_tier_serves_once_the_whole_upper_tier_failed(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    a, b, standby = await upstreams("a", "b", "standby")
    a.default_status = b.default_status = 503
    config = route_config(
        [instance("a", a.url, priority=1), instance("b", b.url, priority=1),
         instance("standby", standby.url)],
        balancer={"algorithm": "chash", "hash_on": "header", "key": "x-session"},
        fallback_strategy="http_5xx", debug_headers=True)
    gw = await gateway(config)
    code, headers, body = await post(http, gw, chat("hi"), {"x-session": "user-1"})
    assert (code, served_by(body)) == (200, "standby")
    assert headers["X-AI-Failover"] in ("a>b>standby", "b>a>standby")
