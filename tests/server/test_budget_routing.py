"""Budget-aware semantic routing through the gateway: past a tier of the consumer's budget a
weak match of the dear instance moves to a cheaper one, a strong match stays; the choice
shows in the debug headers, the access line, the decision feed, the metrics and explain."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from tests.conftest import GatewayFactory
from tests.fakes import FakeEmbeddings
from tests.semantic.conftest import remote_embeddings
from tests.server.governed import AUTH, CHEAP, PRICE, chat, echo, governed

from semproxy.config.loader import load_data
from semproxy.errors import ConfigError
from semproxy.observability.decisions import DecisionLog
from semproxy.observability.fanout import FanoutObserver
from semproxy.observability.logging import JsonFormatter
from semproxy.observability.metrics import Metrics
from semproxy.semantic.explain import explain_with, render
from semproxy.semantic.query import prompt_input

# FakeEmbeddings: `code`/`python` are axis 0, `translate`/`french` axis 1; `vec:` pins a
# prompt's vector. `code` is dear; `translate` and the catchall `default` are cheap.
WEAK = "vec:0.55,0.2,0.81"  # scores code 0.55: clears 0.5 by only 0.05
STRONG = "write a python function"  # scores code 1.0


@pytest.fixture
async def embed() -> Any:
    async with FakeEmbeddings() as server:
        yield server


def config(tmp: Path, embed_url: str) -> dict[str, Any]:
    instances = [echo("default", catchall=True, pricing=CHEAP),
                 echo("code", examples=["write a python function", "fix my code"],
                      pricing=PRICE),
                 echo("translate", examples=["translate this into french"], pricing=CHEAP)]
    balancer = {"algorithm": "semantic", "threshold": 0.5, "expose_scores": True,
                "budget_routing": {"keep_margin": [0.1, 0.4]}}
    # A request with max_tokens 1000 holds about 0.008 at the dear instance's prices: more
    # than half of a 0.012 budget, so it crosses the 0.5 tier; max_tokens 10 does not.
    groups = [{"id": "team", "plugins": {"ai-rate-limiting": {"limits": [
        {"money": 0.012, "window": "month", "tiers": [0.5, 0.9]}]}}}]
    return governed(tmp, instances, groups=groups, balancer=balancer,
                    embeddings=remote_embeddings(embed_url))


async def ask(http: aiohttp.ClientSession, url: str, text: str, max_tokens: int
              ) -> tuple[str, dict[str, str]]:
    async with http.post(url + "/v1/chat/completions", headers=AUTH,
                         json=chat(text, max_tokens=max_tokens)) as resp:
        body = await resp.json()
        assert resp.status == 200, body
        return body["model"], dict(resp.headers)


async def test_past_a_tier_a_weak_match_moves_and_a_strong_one_stays(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path,
        embed: FakeEmbeddings, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    gw = await gateway(config(tmp_path, embed.url))
    served, headers = await ask(http, gw.url, WEAK, max_tokens=10)  # below the tier
    assert served == "code" and "X-AI-Budget-Route" not in headers
    served, headers = await ask(http, gw.url, WEAK, max_tokens=1000)
    assert served == "default"  # translate did not clear; the cheaper catchall serves
    assert headers["X-AI-Budget-Route"] == "default; tier=1; pick=code"
    served, headers = await ask(http, gw.url, STRONG, max_tokens=1000)
    assert served == "code" and headers["X-AI-Budget-Route"] == "code; tier=1; pick=code"
    lines = [json.loads(JsonFormatter().format(r)) for r in caplog.records
             if r.name == "semproxy.access"]
    assert "budget" not in lines[0]
    assert lines[1]["budget"] == {"tier": 1, "pick": "code", "served": "default",
                                  "strength": pytest.approx(0.05, abs=0.001),
                                  "keep_margin": 0.1}
    assert lines[2]["budget"]["served"] == "code"


async def test_the_decision_feed_and_the_metrics_show_the_budget_choice(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path,
        embed: FakeEmbeddings) -> None:
    gw = await gateway(config(tmp_path, embed.url))
    feed = DecisionLog()
    metrics = Metrics()
    gw.gateway.observer = FanoutObserver(feed, metrics)
    await ask(http, gw.url, WEAK, max_tokens=1000)
    (entry,) = feed.entries
    assert entry["pick"] == "code" and entry["instance"] == "default"
    assert entry["budget"] == {"tier": 1, "pick": "code", "served": "default", "moved": True}
    text = (await metrics.render())[0].decode()
    assert ('semproxy_budget_routing_total{pick="code",route="r",served="default",tier="1"} '
            '1.0') in text


async def test_explain_shows_who_serves_at_each_tier(
        gateway: GatewayFactory, tmp_path: Path, embed: FakeEmbeddings) -> None:
    gw = await gateway(config(tmp_path, embed.url))
    (router,) = list(gw.gateway.table.semantic_routers())
    weak = await explain_with(router, prompt_input(WEAK))
    assert weak["budget"] == [
        {"tier": 1, "keep_margin": 0.1, "serves": "default", "moved": True},
        {"tier": 2, "keep_margin": 0.4, "serves": "default", "moved": True}]
    strong = await explain_with(router, prompt_input(STRONG))  # clears by 0.5
    assert [row["serves"] for row in strong["budget"]] == ["code", "code"]
    assert "budget tier 1 (keep margin 0.1): default (moved)" in render(weak)


async def test_budget_routing_is_checked_when_the_config_loads(tmp_path: Path) -> None:
    doc = config(tmp_path, "http://127.0.0.1:9")
    multi = doc["routes"][0]["plugins"]["ai-proxy-multi"]
    multi["balancer"]["budget_routing"] = {"keep_margin": [0.3, 0.1]}
    del multi["instances"][2]["pricing"]
    with pytest.raises(ConfigError) as caught:
        load_data(doc)
    path = "routes[0].plugins.ai-proxy-multi.balancer.budget_routing"
    assert any(e.startswith(f"{path}.keep_margin: margins grow") for e in caught.value.errors)
    assert any(e.startswith(f"{path}: needs pricing") and "translate" in e
               for e in caught.value.errors)
    multi["balancer"] = {"algorithm": "roundrobin", "budget_routing": {"keep_margin": [0.1]}}
    with pytest.raises(ConfigError) as caught:
        load_data(doc)
    assert f"{path}: only valid with balancer.algorithm semantic" in caught.value.errors
