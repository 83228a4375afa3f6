"""The usage of a whole answer reaches its consumers (the tokens metric, the access line)
the same in every client protocol, whether the identity read it or the conversion back.

A Messages or Responses client on a Chat upstream has its answer's usage read by the
conversion back (one parse of the body, `Leg.usage_back`); a Chat client's is read by
the identity. An answer that converts no further still counts what it reported.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from prometheus_client import generate_latest
from tests.conftest import GatewayFactory, instance, route_config
from tests.fakes.common import FakeServer, RecordedRequest

from semproxy.admin.run import RunningGateway
from semproxy.observability.fanout import FanoutObserver
from semproxy.observability.logging import JsonFormatter
from semproxy.observability.metrics import Metrics

USAGE = {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15,
         "prompt_tokens_details": {"cached_tokens": 3}}
COMPLETION = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"},
                           "finish_reason": "stop"}], "usage": USAGE}
BODIES = {
    "chat": ("/v1/chat/completions", {"model": "m", "messages": [
        {"role": "user", "content": "hi"}]}),
    "messages": ("/v1/messages", {"model": "m", "max_tokens": 8, "messages": [
        {"role": "user", "content": "hi"}]}),
    "responses": ("/v1/responses", {"model": "m", "input": "hi"}),
}


class FixedLLM(FakeServer):
    """A Chat upstream that answers every POST with `answer` as it is."""

    def __init__(self) -> None:
        super().__init__("fixed")
        self.answer: dict[str, Any] = COMPLETION

    async def handle(self, request: web.Request, rec: RecordedRequest) -> web.StreamResponse:
        return web.Response(body=orjson.dumps(self.answer), content_type="application/json")


@pytest.fixture
async def upstream() -> AsyncIterator[FixedLLM]:
    async with FixedLLM() as server:
        yield server


@pytest.fixture
async def gw(gateway: GatewayFactory, upstream: FixedLLM) -> RunningGateway:
    return await gateway(route_config([instance("a", upstream.url)], uri="/v1/*"))


def tokens_metric(gw: RunningGateway) -> dict[str, float]:
    observer = gw.gateway.observer
    assert isinstance(observer, FanoutObserver)
    metrics = next(o for o in observer.observers if isinstance(o, Metrics))
    out = {}
    for line in generate_latest(metrics.registry).decode().splitlines():
        if line.startswith("semproxy_tokens_total{"):
            kind = line.split('kind="', 1)[1].split('"', 1)[0]
            out[kind] = float(line.rsplit(" ", 1)[1])
    return out


def access_tokens(caplog: pytest.LogCaptureFixture) -> list[Any]:
    fmt = JsonFormatter()
    return [json.loads(fmt.format(r))["tokens"] for r in caplog.records
            if r.name == "semproxy.access"]


@pytest.mark.parametrize("protocol", list(BODIES))
async def test_a_whole_answers_usage_reaches_the_metric_and_the_access_line(
        protocol: str, gw: RunningGateway, http: aiohttp.ClientSession,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    path, body = BODIES[protocol]
    async with http.post(gw.url + path, json=body) as resp:
        assert resp.status == 200
        answer = await resp.json()
    assert "hello" in json.dumps(answer)
    assert tokens_metric(gw) == {"prompt": 11.0, "completion": 4.0, "total": 15.0}
    assert access_tokens(caplog) == [{"prompt": 11, "completion": 4, "total": 15}]


@pytest.mark.parametrize("protocol", ["messages", "responses"])
async def test_an_answer_that_does_not_convert_still_counts_its_usage(
        protocol: str, gw: RunningGateway, upstream: FixedLLM, http: aiohttp.ClientSession,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    upstream.answer = {"choices": 5, "usage": USAGE}  # JSON, but no completion
    path, body = BODIES[protocol]
    async with http.post(gw.url + path, json=body) as resp:
        assert resp.status == 502
        assert "not a chat completion" in await resp.text()
    assert tokens_metric(gw) == {"prompt": 11.0, "completion": 4.0, "total": 15.0}
    assert access_tokens(caplog) == [{"prompt": 11, "completion": 4, "total": 15}]


async def test_only_a_conversion_behind_the_identity_reads_the_usage(gw: RunningGateway) -> None:
    """Which leg leaves the usage to the conversion back: Messages and Responses clients on
    a Chat upstream; a Chat client's identity reads it itself (nothing converts after)."""
    route = gw.gateway.table.by_id["r1"]
    usage_back = {protocol: table.legs["a"].usage_back
                  for protocol, table in route.legs.items() if "a" in table.legs}
    assert {p for p, deferred in usage_back.items() if deferred} == {"messages", "responses"}
    assert {"chat", "embeddings"} <= usage_back.keys()
