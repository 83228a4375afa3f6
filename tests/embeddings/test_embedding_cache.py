"""CachedEmbedder with a counting fake embedder."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from semproxy.embeddings import Embedder, Vectors
from semproxy.embeddings.cache import CachedEmbedder
from semproxy.errors import EmbeddingError


class CountingEmbedder:
    """Maps a text to [len(text), first char code]; records every batch it receives."""

    fingerprint = "fake:counting"

    def __init__(self, delay: float = 0.0) -> None:
        self.batches: list[list[str]] = []
        self.delay = delay
        self.fail_with: EmbeddingError | None = None

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.batches.append(list(texts))
        await asyncio.sleep(self.delay)
        if self.fail_with is not None:
            raise self.fail_with
        rows = [[float(len(t)), float(ord(t[0])) if t else 0.0] for t in texts]
        return np.array(rows, dtype=np.float32).reshape(len(texts), 2)

    async def aclose(self) -> None:
        pass


def make(max_entries: int = 4096, delay: float = 0.0) -> tuple[CachedEmbedder, CountingEmbedder]:
    inner = CountingEmbedder(delay)
    return CachedEmbedder(inner, max_entries), inner


def test_cached_embedder_meets_the_protocol() -> None:
    cached, inner = make()
    checked: Embedder = cached
    assert checked.fingerprint == inner.fingerprint


async def test_hit_does_not_call_inner() -> None:
    cached, inner = make()
    first = await cached.embed(["abc"])
    second = await cached.embed(["abc"])
    np.testing.assert_array_equal(first, second)
    assert inner.batches == [["abc"]]
    assert (cached.hits, cached.misses) == (1, 1)


async def test_only_misses_are_sent_as_one_batch_and_rows_keep_input_order() -> None:
    cached, inner = make()
    await cached.embed(["bb"])
    vectors = await cached.embed(["a", "bb", "ccc", "a"])
    assert inner.batches == [["bb"], ["a", "ccc"]]
    np.testing.assert_array_equal(vectors[:, 0], [1, 2, 3, 1])
    assert vectors.dtype == np.float32


async def test_least_recently_used_entry_is_evicted() -> None:
    cached, inner = make(max_entries=2)
    await cached.embed(["a"])
    await cached.embed(["b"])
    await cached.embed(["a"])  # a is now the most recent; b is next out
    await cached.embed(["c"])
    assert len(cached) == 2
    await cached.embed(["a"])
    assert inner.batches == [["a"], ["b"], ["c"]]
    await cached.embed(["b"])
    assert inner.batches[-1] == ["b"]


async def test_concurrent_identical_requests_share_one_inner_call() -> None:
    cached, inner = make(delay=0.01)
    results = await asyncio.gather(*(cached.embed(["same prompt"]) for _ in range(5)))
    assert inner.batches == [["same prompt"]]
    for vectors in results:
        np.testing.assert_array_equal(vectors, results[0])
    assert (cached.hits, cached.misses) == (4, 1)


async def test_failure_reaches_every_waiter_and_is_not_cached() -> None:
    cached, inner = make(delay=0.01)
    inner.fail_with = EmbeddingError("upstream down", reason="embedding_timeout")
    results = await asyncio.gather(*(cached.embed(["p"]) for _ in range(3)), return_exceptions=True)
    assert all(isinstance(r, EmbeddingError) for r in results)
    assert {r.reason for r in results if isinstance(r, EmbeddingError)} == {"embedding_timeout"}
    assert len(inner.batches) == 1 and len(cached) == 0
    inner.fail_with = None
    await cached.embed(["p"])
    assert len(inner.batches) == 2 and len(cached) == 1


async def test_cancelled_owner_fails_waiters_instead_of_hanging() -> None:
    cached, _ = make(delay=10)
    owner = asyncio.create_task(cached.embed(["p"]))
    await asyncio.sleep(0)
    waiter = asyncio.create_task(cached.embed(["p"]))
    await asyncio.sleep(0)
    owner.cancel()
    with pytest.raises(EmbeddingError):
        await asyncio.wait_for(waiter, 1)


async def test_cached_rows_cannot_be_corrupted_by_callers() -> None:
    cached, _ = make()
    vectors = await cached.embed(["abc"])
    vectors[0, 0] = 999.0
    again = await cached.embed(["abc"])
    assert again[0, 0] == 3.0


async def test_wrong_shape_from_inner_is_an_embedding_error() -> None:
    class ShortEmbedder(CountingEmbedder):
        async def embed(self, texts: Sequence[str]) -> Vectors:
            return np.zeros((len(texts) - 1, 2), dtype=np.float32)

    cached = CachedEmbedder(ShortEmbedder())
    with pytest.raises(EmbeddingError):
        await cached.embed(["a", "b"])
    assert len(cached) == 0


def test_max_entries_must_be_positive() -> None:
    with pytest.raises(ValueError):
        CachedEmbedder(CountingEmbedder(), max_entries=0)


async def test_cancelled_waiter_does_not_break_the_shared_call() -> None:
    cached, inner = make(delay=0.01)
    owner = asyncio.create_task(cached.embed(["p"]))
    await asyncio.sleep(0)
    quitter = asyncio.create_task(cached.embed(["p"]))
    patient = asyncio.create_task(cached.embed(["p"]))
    await asyncio.sleep(0)
    quitter.cancel()
    owned, waited = await asyncio.gather(owner, patient)
    np.testing.assert_array_equal(owned, waited)
    assert quitter.cancelled() and len(inner.batches) == 1
