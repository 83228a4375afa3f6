"""What the request path reports about itself, for metrics and tracing to listen to.

The failover loop calls a `RequestObserver` at three moments; it never knows who
listens. The gateway holds `SilentObserver` until a metrics backend replaces it.
Observers run on the request path: they must be cheap and must not raise.
"""

from __future__ import annotations

from typing import Protocol

from semproxy.balancer.semantic import Decision


class RequestObserver(Protocol):
    def on_attempt(self, route: str, instance: str, outcome: str, seconds: float) -> None:
        """One upstream attempt ended; ``outcome`` is "ok", "http_503", "timeout", ..."""

    def on_fallback(self, route: str, source: str, target: str, cause: str) -> None:
        """The loop moves from instance ``source`` to ``target`` because of ``cause``."""

    def on_semantic(self, route: str, decision: Decision) -> None:
        """Semantic routing decided (before any attempt)."""


class SilentObserver:
    """The default observer: hears everything, records nothing."""

    def on_attempt(self, route: str, instance: str, outcome: str, seconds: float) -> None:
        pass

    def on_fallback(self, route: str, source: str, target: str, cause: str) -> None:
        pass

    def on_semantic(self, route: str, decision: Decision) -> None:
        pass
