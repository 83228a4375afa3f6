"""What the request path reports about itself, for metrics and tracing to listen to.

The request path calls a `RequestObserver` at a few moments; it never knows who
listens. `RequestObserver` itself hears everything and records nothing (the
gateway holds one until metrics replace it); a listener overrides the moments
it records. Observers run on the request path: they must be cheap and must not
raise.

Nothing here imports the semantic room: a decision is read through
`DecisionView`, the few fields every listener needs, so the rooms that report
(semantic routing among them) can all use the logging and metrics below them.
"""

from __future__ import annotations

from typing import Protocol

from semproxy.types import Usage


class DecisionView(Protocol):
    """What observers read of a semantic decision (`semantic.decision.Decision`)."""

    @property
    def pick(self) -> str: ...

    @property
    def reason(self) -> str: ...

    @property
    def ranking(self) -> tuple[tuple[str, float], ...]: ...

    @property
    def context(self) -> tuple[float, ...]: ...

    @property
    def top_score(self) -> float | None: ...


def shadow_fields(decision: DecisionView) -> dict[str, object]:
    """`shadow_pick` and `shadow_score` (None when the shadow could not score): the access
    line, the shadow log line and the playground show a shadow decision alike."""
    top = decision.top_score
    return {"shadow_pick": decision.pick, "shadow_score": None if top is None else round(top, 4)}


class FoldedCount(Protocol):
    """A counter kept as a plain number by another room (governance/counts.py `Count`),
    read at scrape time: its total so far under one set of labels."""

    @property
    def name(self) -> str: ...

    @property
    def help(self) -> str: ...

    @property
    def labels(self) -> tuple[tuple[str, str], ...]: ...

    @property
    def value(self) -> float: ...


class RequestObserver:
    """The moments the request path reports, each a no-op here."""

    def on_attempt(self, route: str, instance: str, outcome: str, seconds: float) -> None:
        """One upstream attempt ended; ``outcome`` is "ok", "http_503", "timeout", ..."""

    def on_failover(self, route: str, source: str, target: str, cause: str) -> None:
        """The loop moves from instance ``source`` to ``target`` because of ``cause``."""

    def on_semantic(self, route: str, decision: DecisionView, prompt: str | None = None
                    ) -> None:
        """Semantic routing decided (before any attempt). `prompt` is the routed text,
        given only when the route's `logging.payloads` allows recording it."""

    def on_budget(self, route: str, tier: int, pick: str, served: str) -> None:
        """A consumer past `tier` of its budget: the budget rule kept the semantic pick
        (`served == pick`) or moved the prompt to a cheaper instance."""

    def on_embedding(self, route: str, seconds: float | None, decision_cached: bool | None
                     ) -> None:
        """The prompt was scored in `seconds`, or its decision came from the router's
        decision cache (`decision_cached`; `seconds` is then None, and
        `decision_cached` is None when that cache is off)."""

    def on_embedding_cache(self, hit: bool) -> None:
        """One text was looked up in a prompt-embedding cache (remote embedders)."""

    def on_response(self, route: str, instance: str, status: int, seconds: float,
                    ttft: float | None, usage: Usage | None, protocol: str = "chat") -> None:
        """The request is over: final status, total time, stream TTFT, token usage, and
        the client protocol it spoke ("chat", "messages", "responses", "embeddings")."""

    def on_health(self, route: str, instance: str, healthy: bool) -> None:
        """An instance changed health (passive or active)."""

    def on_shadow(self, route: str, serving: str, decision: DecisionView) -> None:
        """The route's shadow table decided, off the request path, after the request.
        A decision without a ranking means the shadow could not score the prompt."""

    def on_shadow_dropped(self, route: str) -> None:
        """A shadow decision was not made: the shadow queue was full."""

    def on_cache(self, route: str, status: str, layer: str | None) -> None:
        """The response cache's part in one request: `status` is its X-AI-Cache-Status
        (HIT-L1, HIT-L2, MISS, BYPASS, REFRESH), `layer` the one that hit."""

    def on_cache_store(self, route: str, outcome: str) -> None:
        """An answer the cache was offered: "stored", or why it was not (too_large,
        content_filter, incomplete, error, store_fault, ...)."""

    def on_cache_saved(self, route: str, usage: Usage, money: float) -> None:
        """A hit: the upstream tokens it did not spend and their price (0 unpriced)."""

    def on_cache_shadow(self, route: str, layer: str, similarity: float | None,
                        wrong: bool) -> None:
        """Shadow mode: a request that would have hit, its would-be answer compared with
        the fresh one (`similarity` None: nothing to compare)."""


class SilentObserver(RequestObserver):
    """The default observer: hears everything, records nothing."""
