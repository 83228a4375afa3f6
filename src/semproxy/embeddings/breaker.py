"""A circuit breaker for the embedding endpoint.

When a remote embedding endpoint is down, every routed request would wait for
its timeout before falling back to the catchall. The breaker notices repeated
failures and fails fast instead, then lets a single probe through now and
then to find out whether the endpoint is back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Literal

from semproxy.embeddings import Embedder, Vectors
from semproxy.errors import EmbeddingError

BreakerState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """closed -> open after `failure_threshold` consecutive failures.

    While open, `allow()` is False until `cooldown_s` has passed; then the
    breaker is half-open and `allow()` admits exactly one probe at a time. The
    probe's success closes the breaker; its failure re-opens it for another
    cooldown. `clock` is the time source in seconds (monotonic).
    """

    def __init__(
        self,
        failure_threshold: int = 5,
        cooldown_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be at least 1")
        if cooldown_s < 0:
            raise ValueError("cooldown_s must not be negative")
        self._threshold = failure_threshold
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at >= self._cooldown_s:
            return "half_open"
        return "open"

    def allow(self) -> bool:
        """May a call go through now? In half-open state, True claims the probe slot."""
        state = self.state
        if state == "closed":
            return True
        if state == "open" or self._probing:
            return False
        self._probing = True
        return True

    def record_success(self) -> None:
        """Any success closes the breaker: the endpoint evidently works."""
        self._failures = 0
        self._opened_at = None
        self._probing = False

    def record_failure(self) -> None:
        if self._probing:
            self._open()
        elif self._opened_at is None:
            self._failures += 1
            if self._failures >= self._threshold:
                self._open()
        # Otherwise: a call admitted before the breaker opened failed late. It
        # tells us nothing new and must not extend the cooldown.

    def _open(self) -> None:
        self._opened_at = self._clock()
        self._failures = 0
        self._probing = False


class BreakerEmbedder:
    """Wraps `inner` so calls fail fast with reason "circuit_open" while the breaker is open."""

    def __init__(self, inner: Embedder, breaker: CircuitBreaker) -> None:
        self.fingerprint = inner.fingerprint
        self._inner = inner
        self._breaker = breaker

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not self._breaker.allow():
            raise EmbeddingError("embedding endpoint circuit is open", reason="circuit_open")
        try:
            vectors = await self._inner.embed(texts)
        except BaseException:
            # Cancellation counts too: callers enforce the embedding timeout by
            # cancelling, and a slow endpoint is exactly what the breaker is for.
            # It also guarantees a cancelled probe frees the half-open slot.
            self._breaker.record_failure()
            raise
        self._breaker.record_success()
        return vectors

    async def aclose(self) -> None:
        await self._inner.aclose()
