"""What the request path reports about itself, for metrics and tracing to listen to.

The request path calls a `RequestObserver` at a few moments; it never knows who
listens. The gateway holds `SilentObserver` until a metrics backend replaces it.
Observers run on the request path: they must be cheap and must not raise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from semproxy.semantic.decision import Decision


class RequestObserver(Protocol):
    def on_attempt(self, route: str, instance: str, outcome: str, seconds: float) -> None:
        """One upstream attempt ended; ``outcome`` is "ok", "http_503", "timeout", ..."""

    def on_fallback(self, route: str, source: str, target: str, cause: str) -> None:
        """The loop moves from instance ``source`` to ``target`` because of ``cause``."""

    def on_semantic(self, route: str, decision: Decision, prompt: str | None = None) -> None:
        """Semantic routing decided (before any attempt). `prompt` is the routed text,
        given only when the route's `logging.payloads` allows recording it."""

    def on_embedding(self, route: str, seconds: float, decision_cached: bool | None) -> None:
        """The prompt was scored, or its decision came from the router's decision cache
        (`decision_cached`, None when that cache is off)."""

    def on_embedding_cache(self, hit: bool) -> None:
        """One text was looked up in a prompt-embedding cache (remote embedders)."""

    def on_response(self, route: str, instance: str, status: int, seconds: float,
                    ttft: float | None, usage: Mapping[str, int] | None,
                    protocol: str = "chat") -> None:
        """The request is over: final status, total time, stream TTFT, token usage, and
        the client protocol it spoke ("chat", "messages", "responses", "embeddings")."""

    def on_health(self, route: str, instance: str, healthy: bool) -> None:
        """An instance changed health (passive or active)."""


class SilentObserver:
    """The default observer: hears everything, records nothing."""

    def on_attempt(self, route: str, instance: str, outcome: str, seconds: float) -> None:
        pass

    def on_fallback(self, route: str, source: str, target: str, cause: str) -> None:
        pass

    def on_semantic(self, route: str, decision: Decision, prompt: str | None = None) -> None:
        pass

    def on_embedding(self, route: str, seconds: float, decision_cached: bool | None) -> None:
        pass

    def on_embedding_cache(self, hit: bool) -> None:
        pass

    def on_response(self, route: str, instance: str, status: int, seconds: float,
                    ttft: float | None, usage: Mapping[str, int] | None,
                    protocol: str = "chat") -> None:
        pass

    def on_health(self, route: str, instance: str, healthy: bool) -> None:
        pass
