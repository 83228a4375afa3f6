"""Shadow routing through the real gateway: a shadow table decides, never serves."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp
import pytest
from tests.conftest import GatewayFactory, chat, instance, route_config
from tests.fakes import FakeEmbeddings

from semproxy.admin.run import RunningGateway
from semproxy.config.loader import load_data
from semproxy.errors import ConfigError
from semproxy.observability.metrics import Metrics
from semproxy.observability.observer import SilentObserver
from semproxy.server.shadow import BATCH, QUEUE_CAP

from .conftest import ask, remote_embeddings, semantic_config

SHADOW_EXAMPLES = {"code": ["write a python function"], "translate": ["translate into french"]}


def roundrobin_with_shadow(embeddings: dict[str, Any], **shadow: Any) -> dict[str, Any]:
    """general, code, translate served round-robin; the shadow routes on meaning."""
    block = {"threshold": 0.5, "examples": SHADOW_EXAMPLES, "catchall": "general",
             "embeddings": embeddings, **shadow}
    return route_config([instance("general"), instance("code"), instance("translate")],
                        balancer={"algorithm": "roundrobin", "shadow": block})


def metrics(gw: RunningGateway) -> Metrics:
    found = [o for o in getattr(gw.gateway.observer, "observers", ()) if isinstance(o, Metrics)]
    assert found
    return found[0]


def sample(gw: RunningGateway, name: str, **labels: str) -> float:
    return metrics(gw).registry.get_sample_value(name, labels) or 0.0


async def settle(gw: RunningGateway, name: str, total: float, **labels: str) -> None:
    """Wait (bounded) until the background shadow task has counted `total`."""
    for _ in range(200):
        if sample(gw, name, **labels) >= total:
            return
        await asyncio.sleep(0.01)


async def test_shadow_picks_and_agreement_are_counted_while_round_robin_serves(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(roundrobin_with_shadow(remote_embeddings(embed.url)))
    served = [(await ask(http, gw, chat("please write python code"))).served_by
              for _ in range(3)]
    assert sorted(served) == ["code", "general", "translate"]  # round-robin, untouched
    await settle(gw, "semproxy_shadow_picks_total", 3, route="r1", instance="code")
    assert sample(gw, "semproxy_shadow_picks_total", route="r1", instance="code") == 3
    assert sample(gw, "semproxy_shadow_agreement_total", route="r1", agree="true") == 1
    assert sample(gw, "semproxy_shadow_agreement_total", route="r1", agree="false") == 2


async def test_the_shadow_line_names_request_serving_pick_shadow_pick_and_score(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings,
    caplog: pytest.LogCaptureFixture
) -> None:
    gw = await gateway(roundrobin_with_shadow(remote_embeddings(embed.url)))
    with caplog.at_level(logging.INFO, logger="semproxy.shadow"):
        answer = await ask(http, gw, chat("translate hello to french"),
                           headers={"X-Request-Id": "shadow-req-1"})
        await settle(gw, "semproxy_shadow_picks_total", 1, route="r1", instance="translate")
    assert "X-AI-Shadow-Route" not in answer.headers  # not exposed: decided after the answer
    fields = [r.fields for r in caplog.records if r.name == "semproxy.shadow"]  # type: ignore[attr-defined]
    assert fields and fields[-1]["request_id"] == "shadow-req-1"
    assert fields[-1]["serving_pick"] == answer.served_by
    assert fields[-1]["shadow_pick"] == "translate"
    assert fields[-1]["shadow_score"] > 0.5


async def test_a_broken_shadow_embedder_never_affects_serving(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(roundrobin_with_shadow(remote_embeddings(embed.url)))
    for word in ("EMB_500", "EMB_NAN", "EMB_NOTJSON"):
        answer = await ask(http, gw, chat(f"python code {word}"))
        assert answer.status == 200
    await settle(gw, "semproxy_shadow_errors_total", 3, route="r1", reason="embedding_error")
    errors = sum(sample(gw, "semproxy_shadow_errors_total", route="r1", reason=r)
                 for r in ("embedding_error", "dimension_mismatch", "circuit_open"))
    assert errors == 3
    assert sample(gw, "semproxy_shadow_agreement_total", route="r1", agree="true") == 0


async def test_an_unreachable_shadow_embedder_never_delays_serving(
    gateway: GatewayFactory, http: aiohttp.ClientSession
) -> None:
    dead = remote_embeddings("http://127.0.0.1:9/v1", timeout=2000)
    gw = await gateway(roundrobin_with_shadow(dead))
    answer = await ask(http, gw, chat("python code"))
    assert answer.status == 200 and answer.seconds < 1.0


async def test_a_full_queue_drops_and_counts_while_serving_goes_on(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    gw = await gateway(roundrobin_with_shadow(remote_embeddings(embed.url, timeout=3000)))
    sent = QUEUE_CAP + BATCH + 40
    sem = asyncio.Semaphore(32)

    async def one(i: int) -> int:
        async with sem:
            return (await ask(http, gw, chat(f"python code {i} EMB_HANG"))).status

    statuses = await asyncio.gather(*(one(i) for i in range(sent)))
    assert statuses == [200] * sent
    # One batch is being decided (hanging), QUEUE_CAP wait: the rest were dropped.
    assert sample(gw, "semproxy_shadow_dropped_total", route="r1") >= sent - QUEUE_CAP - BATCH


async def test_a_shadow_threshold_on_a_semantic_route_reuses_its_examples(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings
) -> None:
    # vec:0.6,0.8: cosine 0.6 with code's axis; serving threshold 0.5 picks code, 0.7 does not.
    config = semantic_config(remote_embeddings(embed.url), shadow={"threshold": 0.7})
    gw = await gateway(config)
    answer = await ask(http, gw, chat("vec:0.6,0,0,0,0,0,0,0.8"))
    assert answer.served_by == "code"
    assert answer.headers["X-AI-Shadow-Route"] == "fallback"  # expose_scores: decided inline
    await settle(gw, "semproxy_shadow_agreement_total", 1, route="r1", agree="false")
    assert sample(gw, "semproxy_shadow_picks_total", route="r1", instance="default") == 1


@pytest.mark.parametrize(("shadow", "path", "message"), [
    ({"examples": {"nope": ["x"]}}, "balancer.shadow.examples.nope", "no instance named"),
    ({"examples": {"code": ["x"]}}, "balancer.shadow.embeddings", "required"),
    ({"threshold": 0.3}, "balancer.shadow.examples", "required on a roundrobin route"),
    ({"examples": {"code": ["x"]}, "catchall": "code"}, "balancer.shadow.catchall",
     "cannot have shadow examples"),
    ({"examples": {"code": ["x"]}, "thresholds": {"general": 0.2}},
     "balancer.shadow.thresholds.general", "no shadow examples"),
    ({"examples": {"code": []}}, "balancer.shadow.examples.code", ""),
    ({"threshold": 2}, "balancer.shadow.threshold", ""),
])
def test_config_errors_name_the_shadow_field(shadow: dict[str, Any], path: str,
                                             message: str) -> None:
    config = route_config([instance("general"), instance("code")],
                          balancer={"algorithm": "roundrobin", "shadow": shadow})
    with pytest.raises(ConfigError) as err:
        load_data(config, {})
    text = str(err.value)
    assert f"routes[0].plugins.ai-proxy-multi.{path}" in text
    assert message in text


async def test_debug_mode_decides_inline_and_puts_the_shadow_in_header_and_access_line(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings,
    caplog: pytest.LogCaptureFixture
) -> None:
    config = roundrobin_with_shadow(remote_embeddings(embed.url))
    config["routes"][0]["plugins"]["ai-proxy-multi"]["balancer"]["expose_scores"] = True
    gw = await gateway(config)
    with caplog.at_level(logging.INFO, logger="semproxy.access"):
        answer = await ask(http, gw, chat("translate hello to french"),
                           headers={"X-Request-Id": "shadow-inline-1"})
    assert answer.status == 200
    assert answer.headers["X-AI-Shadow-Route"] == "translate"
    access = [r.fields for r in caplog.records  # type: ignore[attr-defined]
              if r.name == "semproxy.access" and r.fields["request_id"] == "shadow-inline-1"]
    assert access and access[0]["shadow_pick"] == "translate"
    assert access[0]["shadow_score"] > 0.5


class FailsOnce(SilentObserver):
    """An observer with a bug that shows once: its first shadow report raises."""

    def __init__(self) -> None:
        self.shadows: list[str] = []

    def on_shadow(self, route: str, serving: str, decision: Any) -> None:
        self.shadows.append(decision.pick)
        if len(self.shadows) == 1:
            raise RuntimeError("observer bug")


async def test_a_dead_shadow_task_is_reported_and_started_again(
    gateway: GatewayFactory, http: aiohttp.ClientSession, embed: FakeEmbeddings,
    caplog: pytest.LogCaptureFixture
) -> None:
    gw = await gateway(roundrobin_with_shadow(remote_embeddings(embed.url)))
    observer = gw.gateway.observer = FailsOnce()
    await ask(http, gw, chat("please write python code"))
    for _ in range(200):  # the first decision is made, and kills the task
        if observer.shadows:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    assert any("shadow decisions stopped" in r.getMessage() for r in caplog.records)
    await ask(http, gw, chat("please translate this"))
    for _ in range(200):  # ...and the next request's decision is still made
        if len(observer.shadows) == 2:
            break
        await asyncio.sleep(0.01)
    assert observer.shadows == ["code", "translate"]
