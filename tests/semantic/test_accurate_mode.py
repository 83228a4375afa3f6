"""`model: accurate` and `threshold: auto` end to end: the real gateway, the in-process
wordllama + int8 MiniLM cascade, echo instances.

Skipped without the `accurate` extra or the MiniLM weights package.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer
from tests.conftest import GatewayFactory, chat, instance, route_config

from semproxy.config.loader import load_data
from semproxy.embeddings import minilm_onnx
from semproxy.runtime.compile import explain, router_for
from semproxy.semantic.explain import explain_with
from semproxy.semantic.query import RoutingInput, prompt_input
from semproxy.server.app import Gateway, build_app

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


# Close calls under wordllama that MiniLM decides otherwise ("cheap meals on a budget":
# wordllama says default, MiniLM cooking), and clear ones.
CLOSE_CALLS = ["cheap meals on a budget", "tell me a joke", "money for dinner",
               "what should i cook tonight", "buy groceries with credit", "split the bill",
               "i think someone stole my debit card number"]


async def test_the_first_prompt_after_start_is_decided_by_the_strong_stage(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    gw = await gateway(accurate_route())
    router = gw.gateway.table.routes[0].semantic
    assert router.strong_state == "ready"  # start() waited for it
    async with http.get(f"{gw.url}/healthz") as resp:
        assert resp.status == 200
        assert (await resp.json())["strong_stage"] == "ready"
    answer = await ask(http, gw, chat("cheap meals on a budget"))
    assert (answer.served_by, router.stages["strong"]) == ("cooking", 1)


async def test_healthz_says_starting_until_the_strong_stage_is_loaded() -> None:
    gateway = Gateway(load_data(accurate_route(), {}))
    async with TestClient(TestServer(build_app(gateway))) as client:
        early = await client.get("/healthz")
        assert early.status == 503
        assert (await early.json())["strong_stage"] == "loading"
        await gateway.start()
        ready = await client.get("/healthz")
        assert (ready.status, (await ready.json())["status"]) == (200, "ok")


async def test_explain_and_eval_decide_every_prompt_alike() -> None:
    config = load_data(accurate_route(), {})
    explained = [(await explain(config, "r1", p))["pick"] for p in CLOSE_CALLS]
    async with router_for(config, "r1") as router:
        evaluated = [d.pick for d in await router.route_many(
            [prompt_input(p) for p in CLOSE_CALLS])]
    assert explained == evaluated
    assert explained[0] == "cooking"  # the strong stage's pick; wordllama alone says default


async def test_live_close_calls_keep_their_latency_while_a_batch_eval_runs(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    gw = await gateway(accurate_route())
    live = gw.gateway.table.routes[0].semantic.cascade.strong  # the live router's strong stage
    texts = [f"{CLOSE_CALLS[i % len(CLOSE_CALLS)]} number {i}" for i in range(1200)]
    async with router_for(gw.gateway.config, "r1") as batch_router:
        await batch_router.references()
        work = asyncio.create_task(batch_router.cascade.strong.score_turns(texts))
        await asyncio.sleep(0.1)
        waits = []
        for n in range(10):
            started = time.perf_counter()
            await live.score_turns([f"pay for dinner with my card, take {n}"])
            waits.append(time.perf_counter() - started)
        # One chunk of 16 ahead at most (a few ms a prompt); before, the whole eval was.
        assert max(waits) < 1.0, waits
        assert not work.done()  # the eval was running all along
        scores = (await work)[1]
    assert scores.shape == (1200, 2)
