"""Failover on a semantic route (in-process embeddings): cleared instances, then the catchall.

Scores with the local model for the coding prompt below are about code 0.75,
code2 0.58, translate 0.11; with threshold 0.4 code and code2 clear, in that order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiohttp
from tests.conftest import GatewayFactory, chat, instance, route_config
from tests.fakes import FakeLLM

from .conftest import Upstreams, post, served_by

CODING = "write a python function that reverses a string"
SMALL_TALK = "what is the weather like today"


def semantic_config(code: FakeLLM, code2: FakeLLM, translate: FakeLLM, general: FakeLLM
                    ) -> dict[str, Any]:
    return route_config(
        [instance("code", code.url, examples=["write a python function", "debug this code"]),
         instance("code2", code2.url, examples=["python programming help", "write some code"]),
         instance("translate", translate.url, priority=1,
                  examples=["translate this sentence into french"]),
         instance("general", general.url, catchall=True)],
        balancer={"algorithm": "semantic", "threshold": 0.4, "expose_scores": True},
        embeddings={"provider": "local"}, fallback_strategy="http_5xx", debug_headers=True)


async def test_the_next_best_cleared_instance_serves_when_the_pick_fails(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
    fallbacks: Callable[[], list[str]],
) -> None:
    code, code2, translate, general = await upstreams("code", "code2", "translate", "general")
    code.fail_next = [503]
    gw = await gateway(semantic_config(code, code2, translate, general))
    status, headers, body = await post(http, gw, chat(CODING))
    assert (status, served_by(body)) == (200, "code2")
    assert headers["X-AI-Semantic-Route"] == "code"  # still the semantic pick
    assert headers["X-AI-Instance"] == "code2"
    assert headers["X-AI-Failover"] == "code>code2"
    assert fallbacks() == ["instance code returned 503, falling back to code2"]


async def test_the_catchall_serves_once_every_cleared_instance_failed(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    code, code2, translate, general = await upstreams("code", "code2", "translate", "general")
    code.fail_next, code2.fail_next = [503], [500]
    gw = await gateway(semantic_config(code, code2, translate, general))
    status, headers, body = await post(http, gw, chat(CODING))
    assert (status, served_by(body)) == (200, "general")
    assert headers["X-AI-Failover"] == "code>code2>general"
    assert translate.calls == 0


async def test_an_unmatched_prompt_goes_to_the_catchall_then_the_others_by_priority(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    code, code2, translate, general = await upstreams("code", "code2", "translate", "general")
    general.fail_next = [502]
    gw = await gateway(semantic_config(code, code2, translate, general))
    status, headers, body = await post(http, gw, chat(SMALL_TALK))
    assert (status, served_by(body)) == (200, "translate")  # priority 1 beats the others
    assert headers["X-AI-Semantic-Route"] == "fallback"
    assert headers["X-AI-Failover"] == "general>translate"


async def test_a_matched_prompt_served_first_time_shows_no_failover(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    fakes = await upstreams("code", "code2", "translate", "general")
    gw = await gateway(semantic_config(*fakes))
    status, headers, body = await post(http, gw, chat(CODING))
    assert (status, served_by(body), headers["X-AI-Instance"]) == (200, "code", "code")
    assert "X-AI-Failover" not in headers
