"""The admit phase through the real gateway: refusals in each client protocol, rate-limit
headers, APISIX's answer fields, the max_tokens clamp, and what a client cannot change."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from tests.conftest import GatewayFactory
from tests.fakes import FakeAnthropic, FakeLLM
from tests.server.governed import (
    AUTH,
    BOB,
    PRICE,
    chat,
    committed,
    echo,
    governed,
    post,
    upstream,
)

MESSAGES = {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
ANTHROPIC_AUTH = {"x-api-key": "alice-key-0123", "apikey": "alice-key-0123",
                  "anthropic-version": "2023-06-01"}


async def test_a_requests_limit_refuses_with_429_in_each_protocol(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    gw = await gateway(governed(tmp_path, [echo("a")],
                                consumer_limits=[{"requests": 2, "window": "hour"}]))
    status, headers, _ = await post(http, gw, chat())
    assert status == 200
    assert headers["x-ratelimit-limit-requests"] == "2"
    assert headers["x-ratelimit-remaining-requests"] == "1"
    assert headers["x-ratelimit-reset-requests"].endswith(("s", "ms"))
    assert (await post(http, gw, chat()))[0] == 200
    status, headers, body = await post(http, gw, chat())
    assert status == 429 and int(headers["Retry-After"]) >= 1 and "retry-after-ms" in headers
    assert body["error"]["code"] == "rate_limit_exceeded" and body["error"]["type"] == "requests"
    assert headers["x-ratelimit-remaining-requests"] == "0"
    status, headers, body = await post(http, gw, MESSAGES, "/v1/messages", ANTHROPIC_AUTH)
    assert status == 429 and int(headers["Retry-After"]) >= 1
    assert body == {"type": "error", "error": {"type": "rate_limit_error",
                                               "message": body["error"]["message"]}}
    assert headers["anthropic-ratelimit-requests-limit"] == "2"
    assert headers["anthropic-ratelimit-requests-remaining"] == "0"
    status, _, body = await post(http, gw, {"model": "m", "input": "hi"}, "/v1/responses")
    assert status == 429 and body["error"]["code"] == "rate_limit_exceeded"
    # Another consumer has its own counter: bob has no limit.
    assert (await post(http, gw, chat(), headers={"Authorization": f"Bearer {BOB}"}))[0] == 200


async def test_a_spent_money_budget_is_insufficient_quota_and_not_to_be_retried(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    # A request holds its input bound (39 tokens) at 2 per million and 150 output tokens at
    # 8: 78,000 + 1,200,000 nanos. A budget of 0.0013 (1,300,000) fits one; its answer
    # uses 4 + 4 tokens (40,000), and the second hold no longer fits.
    gw = await gateway(governed(tmp_path, [echo("a", pricing=PRICE)],
                                consumer_limits=[{"money": 0.0013, "window": "month"}]))
    assert (await post(http, gw, chat(max_tokens=150)))[0] == 200
    status, headers, body = await post(http, gw, chat(max_tokens=150))
    assert status == 429 and headers["x-should-retry"] == "false"
    assert body["error"]["code"] == "insufficient_quota"
    assert body["error"]["type"] == "insufficient_quota"


async def test_apisix_fields_answer_a_pasted_ai_rate_limiting_route(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    # APISIX: `limit` tokens per `time_window` seconds per instance, 503 by default, and
    # X-AI-RateLimit-* headers (show_limit_quota_header is on by default).
    limiting = {"limit": 60, "time_window": 3600}
    gw = await gateway(governed(tmp_path, [echo("a")], limiting, key_auth=False))
    status, headers, _ = await post(http, gw, chat(max_tokens=10))
    assert status == 200
    assert headers["X-AI-RateLimit-Limit-a"] == "60"
    assert int(headers["X-AI-RateLimit-Remaining-a"]) < 60
    status, _, body = await post(http, gw, chat(max_tokens=50))
    assert status == 503 and body["error"]["message"]
    gw2 = await gateway(governed(tmp_path / "2", [echo("a")],
                                 {**limiting, "rejected_code": 429, "rejected_msg": "slow down",
                                  "show_limit_quota_header": False}, key_auth=False))
    await post(http, gw2, chat(max_tokens=10))
    status, headers, body = await post(http, gw2, chat(max_tokens=50))
    assert (status, body["error"]["message"]) == (429, "slow down")
    assert not [h for h in headers if h.lower().startswith("x-ai-ratelimit")]


async def test_an_instance_over_its_own_quota_is_skipped_and_the_next_serves(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    limiting = {"instances": [{"name": "a", "limit": 40, "time_window": 3600},
                              {"name": "b", "limit": 40, "time_window": 3600}],
                "rejected_code": 429}
    gw = await gateway(governed(tmp_path, [echo("a", priority=1), echo("b")], limiting,
                                key_auth=False))
    served = []
    for _ in range(3):
        status, _, body = await post(http, gw, chat("hi", max_tokens=10))
        served.append(body["model"] if status == 200 else status)
    # a (priority 1) takes the first; over its quota it is skipped and b serves; then
    # both are out and the refusal answers (rejected_code).
    assert served == ["a", "b", 429]
    assert gw.gateway.governance.current is not None
    refusals = gw.gateway.governance.current.governor.refusals
    assert refusals[("a", "skipped")] >= 1


async def test_clamp_writes_the_lowered_max_tokens_into_the_upstream_body(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    async with FakeLLM("up") as up:
        gw = await gateway(governed(
            tmp_path, [upstream("a", up.url)], {"clamp_max_tokens": True, "limits": [
                {"scope": "consumer", "output_tokens": 300, "window": "hour"}]}))
        assert (await post(http, gw, chat(max_tokens=200)))[0] == 200
        assert up.requests[-1].json["max_tokens"] == 200
        # 300 - what the first answer used is left: the next is clamped to it, not refused.
        status, _, _ = await post(http, gw, chat(max_tokens=1000))
        assert status == 200
        used = up.requests[-1].json["max_tokens"]
        assert 200 < used < 300
        # Without max_tokens, the granted default is written so the hold stays true.
        await post(http, gw, chat(max_completion_tokens=5))
        assert up.requests[-1].json["max_completion_tokens"] == 5


async def test_clamp_reaches_a_native_messages_body(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    async with FakeAnthropic("c") as up:
        inst = {"name": "c", "provider": "anthropic-messages", "weight": 1,
                "options": {"model": "claude"}, "override": {"endpoint": up.url}}
        gw = await gateway(governed(tmp_path, [inst], {"clamp_max_tokens": True, "limits": [
            {"scope": "consumer", "output_tokens": 50, "window": "hour"}]}))
        status, _, _ = await post(http, gw, {**MESSAGES, "max_tokens": 4000}, "/v1/messages",
                                  ANTHROPIC_AUTH)
        assert status == 200
        assert up.requests[-1].json["max_tokens"] == 50


async def test_a_client_cannot_raise_its_own_limit_with_headers_or_body_fields(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    limiting = {"rules": [{"count": 10_000, "time_window": 3600, "key": "$consumer_name"}],
                "rejected_code": 429, "limits": [{"scope": "consumer", "requests": 2,
                                                  "window": "hour"}]}
    gw = await gateway(governed(tmp_path, [echo("a")], limiting))
    forged = {**AUTH, "x-ratelimit-limit-requests": "1000", "X-AI-RateLimit-Limit-a": "1000",
              "consumer_name": "bob", "X-Consumer-Username": "bob", "apikey": BOB,
              "anthropic-ratelimit-requests-limit": "1000", "X-Real-IP": "10.9.9.9"}
    extra = {"user": "someone-else", "metadata": {"user_id": "x"}, "max_tokens": 10,
             "ai-rate-limiting": {"limits": [{"requests": 1000, "window": "hour"}]},
             "limit": 1000, "consumer": "bob"}
    statuses = [(await post(http, gw, chat(f"try {i}", **extra), headers=forged))[0]
                for i in range(4)]
    assert statuses == [200, 200, 429, 429]
    # Bob's key in `apikey` did not make these requests bob's: alice's counter holds them.
    assert await committed(gw, "consumer.requests.3600s", "alice") == 2
    assert (await post(http, gw, chat(), headers={"Authorization": f"Bearer {BOB}"}))[0] == 200


async def test_a_route_without_limits_or_prices_has_no_admit_phase(
        gateway: GatewayFactory, tmp_path: Path) -> None:
    doc = governed(tmp_path, [echo("a")], key_auth=False)
    gw = await gateway(doc)
    assert gw.gateway.version.governed is None
    pipeline = gw.gateway.version.pipelines["r"]
    assert [type(p).__name__ for p in pipeline.phases] == ["RoutePhase", "CallPhase"]
    priced = await gateway(governed(tmp_path / "p", [echo("a", pricing=PRICE)], key_auth=False))
    assert type(priced.gateway.version.pipelines["r"].phases[0]).__name__ == "LimitAdmission"
