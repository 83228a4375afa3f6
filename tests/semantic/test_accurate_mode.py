"""`model: accurate` and `threshold: auto` end to end: the real gateway, the in-process
wordllama + int8 MiniLM cascade, echo instances.

Skipped without the `accurate` extra or the MiniLM weights package.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config

from semproxy.embeddings import minilm_onnx
from semproxy.semantic.explain import explain_with
from semproxy.semantic.query import RoutingInput

from .conftest import BANKING, COOKING, ask

pytestmark = pytest.mark.skipif(minilm_onnx.missing_requirement() is not None,
                                reason=str(minilm_onnx.missing_requirement()))


def accurate_route(threshold: Any = "auto") -> dict[str, Any]:
    instances = [
        instance("banking", examples=BANKING),
        instance("cooking", examples=COOKING),
        instance("default", catchall=True),
    ]
    return route_config(instances, embeddings={"provider": "local", "model": "accurate"},
                        balancer={"algorithm": "semantic", "threshold": threshold,
                                  "expose_scores": True})


async def _settled(http: aiohttp.ClientSession, gw: Any) -> None:
    """First prompt builds the references; the strong ones build in the background."""
    await ask(http, gw, chat("hello"))
    selector = gw.gateway.table.routes[0].semantic
    for _ in range(100):
        if selector.cascade.strong.current is not None:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the strong references were never built")


async def test_accurate_mode_routes_in_scope_prompts_and_rejects_off_topic_ones(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    gw = await gateway(accurate_route())
    await _settled(http, gw)
    cases = {"i think someone stole my debit card number": "banking",
             "how do i make pancakes without eggs": "cooking",
             "who won the chess world championship in 1972": "default"}
    for prompt, want in cases.items():
        answer = await ask(http, gw, chat(prompt))
        assert (answer.status, answer.served_by) == (200, want), (prompt, answer.headers)
    selector = gw.gateway.table.routes[0].semantic
    thresholds = selector.cascade.strong.current.thresholds
    assert all(0 < t < 1 for t in thresholds)  # learned, not the 0 fallback
    assert selector.cascade.fast.current.thresholds != thresholds  # each stage its own


async def test_a_repeated_prompt_is_answered_from_the_decision_cache(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    gw = await gateway(accurate_route())
    await _settled(http, gw)
    router = gw.gateway.table.routes[0].semantic
    text = "is my paycheck in my checking account yet"
    first = await router.route(RoutingInput(text))
    again = await router.route(RoutingInput(text))
    assert (first.cached, again.cached) == (False, True)
    assert again.decision is first.decision
    assert sum(router.stages.values()) == 2  # the repeat never reached the scorers


async def test_explain_shows_the_thresholds_of_the_stage_that_decided(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    gw = await gateway(accurate_route())
    await _settled(http, gw)
    router = gw.gateway.table.routes[0].semantic
    strong = dict(zip(router.names, router.cascade.strong.current.thresholds, strict=True))
    fast = dict(zip(router.names, router.cascade.fast.current.thresholds, strict=True))
    seen = set()
    for prompt in ("i think someone stole my debit card number", "how do i make pancakes",
                   "who won the chess world championship in 1972", "money for dinner",
                   "is my paycheck in my checking account yet", "what should i cook tonight"):
        before = router.stages.copy()
        explained = await explain_with(router, RoutingInput(prompt))
        stage = next(iter(router.stages - before))
        shown = {row["instance"]: row["threshold"] for row in explained["scores"]}
        assert shown == (strong if stage == "strong" else fast), (prompt, stage)
        seen.add(stage)
    assert seen == {"fast", "strong"}  # both stages decided some of the prompts
