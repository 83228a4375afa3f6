"""Failover on a round-robin route: real FakeLLM upstreams behind a real gateway."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config

from .conftest import URI, BlackHole, Upstreams, post, served_by

RETRY_ALL = {"fallback_strategy": ["http_429", "http_5xx"], "debug_headers": True}


def two(a_url: str, b_url: str, **plugin: Any) -> dict[str, Any]:
    return route_config([instance("a", a_url), instance("b", b_url)], **{**RETRY_ALL, **plugin})


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_a_retryable_status_is_served_by_the_next_candidate(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
    fallbacks: Callable[[], list[str]], status: int,
) -> None:
    a, b = await upstreams("a", "b")
    a.fail_next = [status]
    gw = await gateway(two(a.url, b.url))
    code, headers, body = await post(http, gw, chat("hello"))
    assert (code, served_by(body)) == (200, "b")
    assert headers["X-AI-Instance"] == "b"
    assert headers["X-AI-Failover"] == "a>b"
    assert fallbacks() == [f"instance a returned {status}, falling back to b"]


async def test_a_refused_connection_is_served_by_the_next_candidate(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
    refused_url: str, fallbacks: Callable[[], list[str]],
) -> None:
    (b,) = await upstreams("b")
    gw = await gateway(two(refused_url, b.url))
    code, headers, body = await post(http, gw, chat("hello"))
    assert (code, served_by(body), headers["X-AI-Failover"]) == (200, "b", "a>b")
    assert fallbacks() == ["instance a failed (connect), falling back to b"]


async def test_an_upstream_that_hangs_past_the_timeout_is_abandoned_for_the_next(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
    black_hole: BlackHole, fallbacks: Callable[[], list[str]],
) -> None:
    (b,) = await upstreams("b")
    gw = await gateway(two(black_hole.url, b.url, timeout=300))
    code, _, body = await post(http, gw, chat("hello"))
    assert (code, served_by(body)) == (200, "b")
    assert black_hole.accepted == 1
    assert fallbacks() == ["instance a failed (timeout), falling back to b"]


async def test_transport_errors_fail_over_even_without_a_fallback_strategy(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams, refused_url: str,
) -> None:
    (b,) = await upstreams("b")
    gw = await gateway(route_config([instance("a", refused_url), instance("b", b.url)]))
    code, _, body = await post(http, gw, chat("hello"))
    assert (code, served_by(body)) == (200, "b")


async def test_a_status_outside_the_policy_is_relayed_without_retry(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    a, b = await upstreams("a", "b")
    a.fail_next = [503]
    gw = await gateway(two(a.url, b.url, fallback_strategy="http_429"))
    code, headers, body = await post(http, gw, chat("hello"))
    assert code == 503
    assert body["error"]["message"] == "[a] forced status 503"
    assert "X-AI-Failover" not in headers
    assert b.calls == 0


async def test_fallback_http_statuses_add_to_the_strategy(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    a, b = await upstreams("a", "b")
    a.fail_next = [401]
    gw = await gateway(two(a.url, b.url, fallback_http_statuses=[401]))
    code, _, body = await post(http, gw, chat("hello"))
    assert (code, served_by(body)) == (200, "b")


async def test_max_retries_zero_stops_after_the_first_failure(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
    fallbacks: Callable[[], list[str]],
) -> None:
    a, b = await upstreams("a", "b")
    a.fail_next = [503]
    gw = await gateway(two(a.url, b.url, max_retries=0))
    code, _, body = await post(http, gw, chat("hello"))
    assert code == 503  # the upstream's own answer, relayed
    assert body["error"]["message"] == "[a] forced status 503"
    assert (b.calls, fallbacks()) == (0, [])


async def test_max_retries_caps_the_extra_attempts(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    a, b, c = await upstreams("a", "b", "c")
    a.fail_next, b.fail_next = [500], [502]
    config = route_config([instance("a", a.url), instance("b", b.url), instance("c", c.url)],
                          max_retries=1, **RETRY_ALL)
    gw = await gateway(config)
    code, headers, _ = await post(http, gw, chat("hello"))
    assert (code, headers["X-AI-Failover"], c.calls) == (502, "a>b", 0)


async def test_a_failure_slower_than_retry_on_failure_within_ms_is_not_retried(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
    fallbacks: Callable[[], list[str]],
) -> None:
    a, b = await upstreams("a", "b")
    gw = await gateway(two(a.url, b.url, retry_on_failure_within_ms=100))
    code, _, _ = await post(http, gw, chat("slow:250 status:503"))
    assert (code, b.calls, fallbacks()) == (503, 0, [])


async def test_a_failure_faster_than_retry_on_failure_within_ms_is_retried(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    a, b = await upstreams("a", "b")
    a.fail_next = [503]
    gw = await gateway(two(a.url, b.url, retry_on_failure_within_ms=2000))
    code, _, body = await post(http, gw, chat("hello"))
    assert (code, served_by(body)) == (200, "b")


async def test_a_stream_that_breaks_midway_ends_with_an_error_event_and_no_retry(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    a, b = await upstreams("a", "b")
    gw = await gateway(two(a.url, b.url))
    async with http.post(f"{gw.url}{URI}", json=chat("breakstream:2", stream=True)) as resp:
        assert resp.status == 200
        assert resp.headers["X-AI-Instance"] == "a"
        text = (await resp.read()).decode()
    events = [line for line in text.split("\n\n") if line.startswith("data: ")]
    assert '"content":"' in events[1] and '"content":"' in events[2]
    assert '"upstream_error"' in events[-1]
    assert "[DONE]" not in text
    assert (a.streams_broken, b.calls) == (1, 0)


async def test_when_every_instance_fails_in_transport_the_body_lists_each_and_why(
    gateway: GatewayFactory, http: aiohttp.ClientSession, black_hole: BlackHole,
    refused_url: str,
) -> None:
    config = route_config([instance("a", refused_url, auth={"header": {"Authorization":
                                                                       "Bearer sk-secret"}}),
                           instance("b", black_hole.url)], timeout=200, **RETRY_ALL)
    gw = await gateway(config)
    code, headers, body = await post(http, gw, chat("hello"))
    assert code == 502
    assert body["error"]["message"] == (
        "no instance could serve the request; tried: a failed (connect), b failed (timeout)")
    assert body["error"]["type"] == "upstream_error"
    assert headers["X-AI-Failover"] == "a>b"
    assert "sk-secret" not in str(body) and "127.0.0.1" not in str(body)


async def test_when_the_last_attempt_got_an_answer_that_answer_is_relayed(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
    refused_url: str,
) -> None:
    (b,) = await upstreams("b")
    b.fail_next = [429]
    gw = await gateway(two(refused_url, b.url))
    code, headers, body = await post(http, gw, chat("hello"))
    assert code == 429
    assert body["error"]["code"] == "rate_limit_exceeded"
    assert (headers["X-AI-Instance"], headers["X-AI-Failover"]) == ("b", "a>b")


async def test_the_rest_of_the_priority_tier_is_tried_before_a_lower_tier(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    a, b, c = await upstreams("a", "b", "c")
    a.default_status = b.default_status = 503
    config = route_config([instance("c", c.url, priority=0), instance("a", a.url, priority=5),
                           instance("b", b.url, priority=5)], **RETRY_ALL)
    gw = await gateway(config)
    code, headers, body = await post(http, gw, chat("hello"))
    assert (code, served_by(body), headers["X-AI-Failover"]) == (200, "c", "a>b>c")


async def test_a_client_error_is_relayed_without_any_warning(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
    caplog: pytest.LogCaptureFixture,
) -> None:
    a, b = await upstreams("a", "b")
    gw = await gateway(two(a.url, b.url))
    with caplog.at_level(logging.WARNING, logger="semproxy.proxy"):
        code, _, _ = await post(http, gw, chat("status:400"))
    assert (code, b.calls) == (400, 0)
    assert [r for r in caplog.records if r.name == "semproxy.proxy"] == []


async def test_giving_up_is_logged_once_with_every_attempt(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
    caplog: pytest.LogCaptureFixture,
) -> None:
    a, b = await upstreams("a", "b")
    gw = await gateway(two(a.url, b.url))
    with caplog.at_level(logging.WARNING, logger="semproxy.proxy"):
        code, _, _ = await post(http, gw, chat("status:503"))
    assert code == 503
    giving_up = [r.getMessage() for r in caplog.records if "giving up" in r.getMessage()]
    assert giving_up == ["route r1: giving up after 2 attempt(s): a (http_503), b (http_503)"]
