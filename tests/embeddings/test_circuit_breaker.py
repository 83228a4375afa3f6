"""CircuitBreaker and BreakerEmbedder, driven by a hand-cranked clock."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from semproxy.embeddings import Embedder, Vectors
from semproxy.embeddings.breaker import BreakerEmbedder, CircuitBreaker
from semproxy.errors import EmbeddingError


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class SwitchableEmbedder:
    """Succeeds or fails on demand; counts calls."""

    fingerprint = "fake:switchable"

    def __init__(self) -> None:
        self.calls = 0
        self.is_down = False
        self.delay = 0.0

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        await asyncio.sleep(self.delay)
        if self.is_down:
            raise EmbeddingError("endpoint down")
        return np.ones((len(texts), 4), dtype=np.float32)

    async def aclose(self) -> None:
        pass


def opened_breaker(clock: FakeClock, threshold: int = 3) -> CircuitBreaker:
    breaker = CircuitBreaker(failure_threshold=threshold, cooldown_s=10.0, clock=clock)
    for _ in range(threshold):
        breaker.record_failure()
    return breaker


def test_breaker_stays_closed_below_the_threshold() -> None:
    breaker = CircuitBreaker(failure_threshold=3, clock=FakeClock())
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.state == "closed" and breaker.allow()


def test_a_success_resets_the_consecutive_failure_count() -> None:
    breaker = CircuitBreaker(failure_threshold=3, clock=FakeClock())
    for _ in range(2):
        breaker.record_failure()
    breaker.record_success()
    for _ in range(2):
        breaker.record_failure()
    assert breaker.state == "closed"


def test_threshold_failures_open_the_breaker_until_cooldown() -> None:
    clock = FakeClock()
    breaker = opened_breaker(clock)
    seen = [breaker.state]
    clock.now += 9.99
    seen.append(breaker.state)
    clock.now += 0.01
    seen.append(breaker.state)
    assert seen == ["open", "open", "half_open"]


def test_half_open_admits_exactly_one_probe_at_a_time() -> None:
    clock = FakeClock()
    breaker = opened_breaker(clock)
    clock.now += 10
    assert breaker.allow()
    assert not breaker.allow()
    assert not breaker.allow()


def test_probe_success_closes_the_breaker() -> None:
    clock = FakeClock()
    breaker = opened_breaker(clock)
    clock.now += 10
    assert breaker.allow()
    breaker.record_success()
    assert breaker.state == "closed" and breaker.allow() and breaker.allow()


def test_probe_failure_reopens_for_another_full_cooldown() -> None:
    clock = FakeClock()
    breaker = opened_breaker(clock)
    clock.now += 15
    assert breaker.allow()
    breaker.record_failure()
    assert breaker.state == "open"
    clock.now += 9
    assert not breaker.allow()
    clock.now += 1
    assert breaker.allow()


def test_late_failure_while_open_does_not_extend_the_cooldown() -> None:
    clock = FakeClock()
    breaker = opened_breaker(clock)
    clock.now += 5
    breaker.record_failure()  # a call admitted before opening, failing late
    clock.now += 5
    assert breaker.state == "half_open"


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValueError):
        CircuitBreaker(failure_threshold=0)
    with pytest.raises(ValueError):
        CircuitBreaker(cooldown_s=-1)


def test_breaker_embedder_meets_the_protocol() -> None:
    inner = SwitchableEmbedder()
    checked: Embedder = BreakerEmbedder(inner, CircuitBreaker())
    assert checked.fingerprint == inner.fingerprint


async def test_open_circuit_fails_fast_without_calling_inner() -> None:
    clock = FakeClock()
    inner = SwitchableEmbedder()
    inner.is_down = True
    embedder = BreakerEmbedder(inner, CircuitBreaker(failure_threshold=2, clock=clock))
    for _ in range(2):
        with pytest.raises(EmbeddingError) as caught:
            await embedder.embed(["x"])
        assert caught.value.reason == "embedding_error"
    with pytest.raises(EmbeddingError) as caught:
        await embedder.embed(["x"])
    assert caught.value.reason == "circuit_open"
    assert inner.calls == 2


async def test_successful_probe_through_the_embedder_closes_the_circuit() -> None:
    clock = FakeClock()
    inner = SwitchableEmbedder()
    breaker = opened_breaker(clock)
    embedder = BreakerEmbedder(inner, breaker)
    clock.now += 10
    vectors = await embedder.embed(["x", "y"])
    assert vectors.shape == (2, 4)
    assert breaker.state == "closed"


async def test_cancelled_probe_frees_the_slot_after_another_cooldown() -> None:
    clock = FakeClock()
    inner = SwitchableEmbedder()
    inner.delay = 10
    breaker = opened_breaker(clock)
    embedder = BreakerEmbedder(inner, breaker)
    clock.now += 10
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(embedder.embed(["x"]), 0.01)
    assert breaker.state == "open"
    clock.now += 10
    assert breaker.allow()
