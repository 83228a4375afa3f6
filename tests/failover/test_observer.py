"""The RequestObserver hooks see every attempt, fallback and semantic decision."""

from __future__ import annotations

import aiohttp
from tests.conftest import GatewayFactory, chat, instance, route_config

from semproxy.observability.observer import SilentObserver
from semproxy.semantic.decision import Decision

from .conftest import Upstreams, post


class RecordingObserver(SilentObserver):
    """Records the failover and semantic moments; ignores the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str, ...]] = []

    def on_attempt(self, route: str, instance: str, outcome: str, seconds: float) -> None:
        assert seconds >= 0
        self.events.append(("attempt", route, instance, outcome))

    def on_failover(self, route: str, source: str, target: str, cause: str) -> None:
        self.events.append(("fallback", route, source, target, cause))

    def on_semantic(self, route: str, decision: Decision, prompt: str | None = None) -> None:
        self.events.append(("semantic", route, decision.pick, decision.reason))


async def test_attempts_and_fallbacks_are_reported_in_order(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    a, b = await upstreams("a", "b")
    a.fail_next = [503]
    gw = await gateway(route_config([instance("a", a.url), instance("b", b.url)],
                                    fallback_strategy="http_5xx"))
    observer = RecordingObserver()
    gw.gateway.observer = observer
    await post(http, gw, chat("hello"))
    assert observer.events == [
        ("attempt", "r1", "a", "http_503"),
        ("fallback", "r1", "a", "b", "http_503"),
        ("attempt", "r1", "b", "ok"),
    ]


async def test_semantic_decisions_are_reported_before_the_attempt(
    gateway: GatewayFactory, http: aiohttp.ClientSession, upstreams: Upstreams,
) -> None:
    code, general = await upstreams("code", "general")
    config = route_config(
        [instance("code", code.url, examples=["write a python function"]),
         instance("general", general.url, catchall=True)],
        balancer={"algorithm": "semantic", "threshold": 0.4}, embeddings={"provider": "local"})
    gw = await gateway(config)
    observer = RecordingObserver()
    gw.gateway.observer = observer
    await post(http, gw, chat("write a python function that reverses a string"))
    assert observer.events == [("semantic", "r1", "code", "matched"),
                               ("attempt", "r1", "code", "ok")]
