"""The official SDKs' retry logic against the gateway's limits, unchanged: a 429 with
Retry-After is retried once the window opens and then succeeds; a spent budget
(`x-should-retry: false`) is not retried; rate-limit headers read as the SDKs' own."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from tests.conftest import GatewayFactory

from semproxy.admin.run import RunningGateway
from semproxy.governance.tokens import input_bound

KEY = "sdk-key-01234"
PRICE = {"input": 2.0, "output": 8.0}


async def limited(gateway: GatewayFactory, tmp: Path, limit: dict[str, Any]) -> RunningGateway:
    """`/v1/*` on an echo instance; consumer `app` (key in Authorization or x-api-key)
    under `limit`."""
    return await gateway({
        "listen": "127.0.0.1:0",
        "governance": {"sqlite_path": str(tmp / "spend.db")},
        "routes": [{"id": "r", "uri": "/v1/*", "plugins": {
            "key-auth": {"header": "x-api-key"},
            "ai-proxy-multi": {"instances": [{"name": "e", "provider": "echo", "weight": 1,
                                              "options": {"model": "e"}, "pricing": PRICE}]}}}],
        "consumers": [{"username": "app", "plugins": {
            "key-auth": {"key": KEY}, "ai-rate-limiting": {"limits": [limit]}}}]})


def refusals(gw: RunningGateway) -> int:
    governed = gw.gateway.governance.current
    assert governed is not None
    return sum(governed.governor.refusals.values())


def early_in_a_second() -> None:
    """Start just after a whole second, so the next request lands in the same 1 s window."""
    time.sleep(1.02 - time.time() % 1)


async def test_openai_sdk_waits_out_a_rate_limit_and_then_succeeds(
        gateway: GatewayFactory, tmp_path: Path) -> None:
    gw = await limited(gateway, tmp_path, {"requests": 1, "window": 1})
    async with openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key=KEY, max_retries=3) as c:
        early_in_a_second()
        await c.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
        started = time.monotonic()
        raw = await c.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "b"}])
    waited = time.monotonic() - started
    assert raw.parse().choices[0].message.content
    assert refusals(gw) >= 1  # refused first, retried by the SDK
    assert 0.5 < waited < 3  # it slept until the window opened (retry-after-ms), not 8 s
    assert raw.headers["x-ratelimit-limit-requests"] == "1"
    assert raw.headers["x-ratelimit-remaining-requests"] == "0"


async def test_anthropic_sdk_waits_out_a_rate_limit_and_then_succeeds(
        gateway: GatewayFactory, tmp_path: Path) -> None:
    gw = await limited(gateway, tmp_path, {"requests": 1, "window": 1})
    async with anthropic.AsyncAnthropic(base_url=gw.url, api_key=KEY, max_retries=3) as c:
        early_in_a_second()
        await c.messages.create(model="m", max_tokens=16,
                                messages=[{"role": "user", "content": "a"}])
        started = time.monotonic()
        raw = await c.messages.with_raw_response.create(
            model="m", max_tokens=16, messages=[{"role": "user", "content": "b"}])
    assert (await raw.parse()).content
    assert refusals(gw) >= 1
    assert time.monotonic() - started < 4
    assert raw.headers["anthropic-ratelimit-requests-limit"] == "1"
    assert raw.headers["anthropic-ratelimit-requests-remaining"] == "0"


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
async def test_a_spent_budget_is_not_retried_by_either_sdk(
        gateway: GatewayFactory, tmp_path: Path, sdk: str) -> None:
    # The budget fits one request's hold (its input bound at 2 per million plus 64 output
    # tokens at 8) and 5,000 nanos more; its answer costs at least 10,000 (one token in,
    # one out), so the next hold no longer fits.
    messages = [{"role": "user", "content": "hello"}]
    hold = input_bound({"messages": messages}).tokens * 2000 + 64 * 8000
    gw = await limited(gateway, tmp_path, {"money": (hold + 5000) / 1e9, "window": "month"})
    started = time.monotonic()
    if sdk == "openai":
        async with openai.AsyncOpenAI(base_url=gw.url + "/v1", api_key=KEY,
                                      max_retries=3) as oc:
            await oc.chat.completions.create(model="m", messages=messages,  # type: ignore[arg-type]
                                             max_tokens=64)
            with pytest.raises(openai.RateLimitError) as caught:
                await oc.chat.completions.create(model="m", messages=messages,  # type: ignore[arg-type]
                                                 max_tokens=64)
            assert caught.value.code == "insufficient_quota"
    else:
        async with anthropic.AsyncAnthropic(base_url=gw.url, api_key=KEY, max_retries=3) as ac:
            await ac.messages.create(model="m", max_tokens=64, messages=messages)  # type: ignore[arg-type]
            with pytest.raises(anthropic.RateLimitError):
                await ac.messages.create(model="m", max_tokens=64, messages=messages)  # type: ignore[arg-type]
    assert refusals(gw) == 1  # asked once: the SDK obeyed x-should-retry: false
    assert time.monotonic() - started < 2
