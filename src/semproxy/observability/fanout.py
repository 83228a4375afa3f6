"""One `RequestObserver` that passes every call on to several others, in order.

The request path holds a single observer; this lets metrics and the admin
playground's decision log listen at once without the path knowing either.
"""

from __future__ import annotations

from semproxy.observability.observer import DecisionView, RequestObserver
from semproxy.types import Usage

SILENT = RequestObserver()
MOMENTS = tuple(name for name in vars(RequestObserver) if name.startswith("on_"))


class FanoutObserver(RequestObserver):
    def __init__(self, *observers: RequestObserver) -> None:
        self.observers = observers
        # A moment that only one observer records is bound straight to it, and one that
        # none records to the base no-op: a call less on the request path (the decision
        # log hears only the semantic and response moments, metrics nearly all).
        for moment in MOMENTS:
            hearing = [o for o in observers if _records(o, moment)]
            if len(hearing) <= 1:
                setattr(self, moment, getattr(hearing[0] if hearing else SILENT, moment))

    def on_attempt(self, route: str, instance: str, outcome: str, seconds: float) -> None:
        for o in self.observers:
            o.on_attempt(route, instance, outcome, seconds)

    def on_failover(self, route: str, source: str, target: str, cause: str) -> None:
        for o in self.observers:
            o.on_failover(route, source, target, cause)

    def on_semantic(self, route: str, decision: DecisionView, prompt: str | None = None
                    ) -> None:
        for o in self.observers:
            o.on_semantic(route, decision, prompt)

    def on_budget(self, route: str, tier: int, pick: str, served: str) -> None:
        for o in self.observers:
            o.on_budget(route, tier, pick, served)

    def on_embedding(self, route: str, seconds: float | None, decision_cached: bool | None
                     ) -> None:
        for o in self.observers:
            o.on_embedding(route, seconds, decision_cached)

    def on_embedding_cache(self, hit: bool) -> None:
        for o in self.observers:
            o.on_embedding_cache(hit)

    def on_response(self, route: str, instance: str, status: int, seconds: float,
                    ttft: float | None, usage: Usage | None, protocol: str = "chat") -> None:
        for o in self.observers:
            o.on_response(route, instance, status, seconds, ttft, usage, protocol)

    def on_health(self, route: str, instance: str, healthy: bool) -> None:
        for o in self.observers:
            o.on_health(route, instance, healthy)

    def on_shadow(self, route: str, serving: str, decision: DecisionView) -> None:
        for o in self.observers:
            o.on_shadow(route, serving, decision)

    def on_shadow_dropped(self, route: str) -> None:
        for o in self.observers:
            o.on_shadow_dropped(route)

    def on_cache(self, route: str, status: str, layer: str | None) -> None:
        for o in self.observers:
            o.on_cache(route, status, layer)

    def on_cache_store(self, route: str, outcome: str) -> None:
        for o in self.observers:
            o.on_cache_store(route, outcome)

    def on_cache_saved(self, route: str, usage: Usage, money: float) -> None:
        for o in self.observers:
            o.on_cache_saved(route, usage, money)

    def on_cache_shadow(self, route: str, layer: str, similarity: float | None,
                        wrong: bool) -> None:
        for o in self.observers:
            o.on_cache_shadow(route, layer, similarity, wrong)


def _records(observer: RequestObserver, moment: str) -> bool:
    """`observer`'s class does something at `moment` (overrides the base no-op)."""
    return getattr(type(observer), moment) is not getattr(RequestObserver, moment)
