"""The account half of admission through the real gateway: what a request is charged (a
whole answer, a stream the client left, an upstream error, nothing reached, a cache hit),
the cost in the access line and the metrics, reloads and shutdown."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from tests.conftest import GatewayFactory
from tests.fakes import FakeLLM
from tests.fakes.redis_server import free_port
from tests.server.governed import (
    AUTH,
    PRICE,
    chat,
    committed,
    echo,
    governed,
    post,
    upstream,
)
from tests.server.test_phases import StoredAnswer

from semproxy.config.loader import load_data
from semproxy.governance.counts import SpendCounts
from semproxy.governance.governor import Governor
from semproxy.governance.governor_stores import StoreSet
from semproxy.governance.spend import spend
from semproxy.observability.logging import JsonFormatter
from semproxy.observability.metrics import Metrics
from semproxy.server.admit import LimitAdmission
from semproxy.server.pipeline import Pipeline, Version
from semproxy.server.route import RoutePhase
from semproxy.types import Usage

OUTPUT = {"scope": "consumer", "output_tokens": 100_000, "window": "hour"}
REQUESTS = {"scope": "consumer", "requests": 100, "window": "hour"}


def access_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    fmt = JsonFormatter()
    return [json.loads(fmt.format(r)) for r in caplog.records if r.name == "semproxy.access"]


def output_label(gw: Any) -> str:
    return next(x.label for x in gw.gateway.governance.current.governor.plan.routes["r"].admit
                if x.unit.value == "output_tokens")


async def test_a_whole_answer_is_charged_its_usage_at_its_instances_price(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with FakeLLM("up") as up:
        gw = await gateway(governed(tmp_path, [upstream("a", up.url, pricing=PRICE)],
                                    {"limits": [OUTPUT]}))
        status, _, body = await post(http, gw, chat("one two three", max_tokens=50))
    assert status == 200
    usage = body["usage"]
    assert await committed(gw, output_label(gw), "alice") == usage["completion_tokens"]
    (line,) = access_lines(caplog)
    cost = (usage["prompt_tokens"] * 2 + usage["completion_tokens"] * 8) / 1e6
    assert line["cost"] == pytest.approx(cost)
    assert "charged_tokens" not in line  # the upstream's own counts were charged


async def test_a_stream_the_client_leaves_is_charged_for_what_was_generated(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with FakeLLM("up") as up:
        gw = await gateway(governed(tmp_path, [upstream("a", up.url, pricing=PRICE)],
                                    {"limits": [OUTPUT]}))
        text = "alpha beta gamma delta epsilon zeta eta theta chunks:8 interval:150"
        async with http.post(gw.url + "/v1/chat/completions", headers=AUTH,
                             json=chat(text, stream=True, max_tokens=500)) as resp:
            seen = b""
            while b"[up]" not in seen:  # the first content chunk, then hang up
                data = await resp.content.readany()
                assert data, "the stream ended before its first content chunk"
                seen += data
        await up.wait_stream_cancelled(timeout=5)
        for _ in range(100):  # the gateway accounts once it notices the client left
            if access_lines(caplog):
                break
            await asyncio.sleep(0.02)
    (line,) = access_lines(caplog)
    charged = line["charged_tokens"]
    assert line["tokens"] is None  # the upstream's usage event never came
    # The bytes generated before the hang-up (at least the first chunk), bounded by 500.
    assert 0 < charged["completion"] <= 500
    assert await committed(gw, output_label(gw), "alice") == charged["completion"]
    assert line["cost"] > 0


async def test_a_refused_connection_gives_the_holds_back(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    dead = upstream("a", f"http://127.0.0.1:{free_port()}")
    gw = await gateway(governed(tmp_path, [dead], {"limits": [
        {"scope": "consumer", "requests": 1, "window": "hour"}]}))
    for _ in range(3):  # each fails to connect: none counts against the one request
        assert (await post(http, gw, chat()))[0] == 502
    assert await committed(gw, "consumer.requests.3600s", "alice") == 0


async def test_an_upstream_error_counts_the_request_and_no_tokens(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    async with FakeLLM("up") as up:
        gw = await gateway(governed(tmp_path, [upstream("a", up.url)],
                                    {"limits": [OUTPUT, REQUESTS]}))
        assert (await post(http, gw, chat("status:500")))[0] == 500
    assert await committed(gw, "consumer.requests.3600s", "alice") == 1
    assert await committed(gw, output_label(gw), "alice") == 0


async def test_a_cache_hit_counts_the_request_but_no_tokens_and_no_money(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    gw = await gateway(governed(tmp_path, [echo("a", pricing=PRICE)],
                                {"limits": [OUTPUT, REQUESTS]}))
    version = gw.gateway.version
    route, governed_version = version.table.routes[0], version.governed
    assert governed_version is not None
    admission = LimitAdmission(route, governed_version)
    # The lookup phase answering, as the response cache will (exchange.source = "cache").
    gw.gateway.version = Version(version.table, {"r": Pipeline(
        (admission, RoutePhase(route), StoredAnswer()), (admission,))}, governed_version)
    status, _, body = await post(http, gw, chat())
    assert status == 200 and body["usage"]["completion_tokens"] == 2
    assert await committed(gw, "consumer.requests.3600s", "alice") == 1
    assert await committed(gw, output_label(gw), "alice") == 0
    assert not gw.gateway.governance.spend.rows  # nothing spent upstream


async def test_spend_and_refusals_reach_the_metrics(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    gw = await gateway(governed(tmp_path, [echo("a", pricing=PRICE)], {"limits": [
        {"scope": "consumer", "requests": 1, "window": "hour"}]}))
    usage = (await post(http, gw, chat("one two")))[2]["usage"]
    assert (await post(http, gw, chat()))[0] == 429
    metrics = Metrics()
    gw.gateway.report(metrics)
    gw.gateway.report(metrics)  # a second scrape adds nothing that did not happen
    text = (await metrics.render())[0].decode()
    labels = 'consumer="alice",instance="a"'
    assert f'semproxy_spend_tokens_total{{{labels},kind="input",route="r"}}' in text
    made, cost = usage["completion_tokens"], (usage["prompt_tokens"] * 2000
                                              + usage["completion_tokens"] * 8000) / 1e9
    assert f'semproxy_spend_tokens_total{{{labels},kind="output",route="r"}} {made}.0' in text
    assert f'semproxy_spend_money_total{{{labels},route="r"}} {cost!r}' in text
    assert ('semproxy_governance_refusals_total{limit="consumer.requests.3600s",'
            'reason="rate"} 1.0') in text
    assert 'semproxy_governance_syncs_total{store="sqlite"}' in text
    assert 'semproxy_governance_store_errors_total{store="sqlite"} 0.0' in text


def test_consumer_labels_are_bounded() -> None:
    counts = SpendCounts(max_consumers=2)
    for name in ("a", "b", "c", "d", None):
        counts.add(name, "r", "i", Usage(1, 1), 10)
    consumers = {dict(row.labels)["consumer"] for row in counts.counts()}
    assert consumers == {"a", "b", "other", "-"}


async def test_a_reload_keeps_the_counts_and_applies_the_new_limit(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    limit = {"scope": "consumer", "requests": 2, "window": "hour", "name": "calls"}
    doc = governed(tmp_path, [echo("a")], {"limits": [limit]})
    gw = await gateway(doc)
    assert [(await post(http, gw, chat()))[0] for _ in range(3)] == [200, 200, 429]
    doc["routes"][0]["plugins"]["ai-rate-limiting"]["limits"][0]["requests"] = 3
    await gw.gateway.apply(load_data(doc))
    assert [(await post(http, gw, chat()))[0] for _ in range(2)] == [200, 429]
    assert await committed(gw, "calls", "alice") == 3


async def test_a_reload_to_another_sqlite_file_closes_the_old_one_after_its_requests(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    doc = governed(tmp_path, [echo("a", pricing=PRICE)], {"limits": [REQUESTS]})
    gw = await gateway(doc)
    await post(http, gw, chat())
    old = gw.gateway.governance.current
    assert old is not None
    doc["governance"]["sqlite_path"] = str(tmp_path / "other.db")
    await gw.gateway.apply(load_data(doc))
    for _ in range(50):
        if not gw.gateway.governance._retiring:
            break
        await asyncio.sleep(0.02)
    store = old.governor.stores.store("sqlite")
    assert store._db is None  # closed
    assert (await post(http, gw, chat()))[0] == 200
    assert await committed(gw, "consumer.requests.3600s", "alice") == 1  # a new file


async def test_shutdown_writes_the_ledger_and_a_restart_reads_it(
        gateway: GatewayFactory, http: aiohttp.ClientSession, tmp_path: Path) -> None:
    doc = governed(tmp_path, [echo("a", pricing=PRICE)], {"limits": [REQUESTS]})
    gw = await gateway(doc)
    for _ in range(3):
        await post(http, gw, chat())
    await gw.close()
    plan = load_data(doc).governance
    assert plan is not None
    gov = Governor(plan, StoreSet.for_plan(plan))
    try:
        (row,) = await spend(gov, "consumer", "all")
    finally:
        await gov.stores.close()
    assert (row.key, row.requests) == ("alice", 3) and row.cost > 0
