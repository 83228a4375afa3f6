"""StrongWorker: one thread, a bounded queue that sheds, batching, failures remembered."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import numpy as np
import pytest

from semproxy.embeddings.strong import StrongEmbedder, StrongWorker
from semproxy.errors import EmbeddingError


class GatedModel:
    """Embeds a text as [len(text), 0]; each pass waits until the test opens the gate."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.passes: list[list[str]] = []
        self.threads: set[str] = set()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.gate.wait(5)
        self.passes.append(list(texts))
        self.threads.add(threading.current_thread().name)
        return np.array([[len(t), 0.0] for t in texts], np.float32)


async def test_a_full_queue_refuses_at_once_and_counts_the_refusal() -> None:
    model = GatedModel()
    worker = StrongWorker(lambda: model.embed, capacity=3, batch=2)
    await worker.warm()
    first = worker.submit("a")  # taken by the drain task at its next step
    await asyncio.sleep(0.05)  # the first pass is now blocked in the thread
    queued = [worker.submit(t) for t in ("bb", "ccc", "dddd")]
    assert worker.submit("eeeee") is None
    assert worker.shed == 1 and worker.waiting == 3
    model.gate.set()
    assert first is not None and all(f is not None for f in queued)
    results = await asyncio.gather(first, *[f for f in queued if f is not None])
    assert [float(r[0, 0]) for r in results] == [1.0, 2.0, 3.0, 4.0]
    assert model.passes == [["a"], ["bb", "ccc"], ["dddd"]]  # batches of at most 2
    assert len(model.threads) == 1 and next(iter(model.threads)).startswith("semproxy-strong")
    await worker.aclose()


async def test_a_failing_pass_fails_its_callers_with_an_embedding_error() -> None:
    def broken(texts: Sequence[str]) -> np.ndarray:
        raise RuntimeError("boom")

    worker = StrongWorker(lambda: broken)
    future = worker.submit("x")
    assert future is not None
    with pytest.raises(EmbeddingError, match="boom"):
        await future
    await worker.aclose()


async def test_a_failed_load_is_remembered() -> None:
    loads = []

    def load() -> None:
        loads.append(1)
        raise OSError("weights missing")

    worker = StrongWorker(load)  # type: ignore[arg-type]
    for _ in range(2):
        with pytest.raises(EmbeddingError, match="weights missing"):
            await worker.warm()
    assert loads == [1]
    await worker.aclose()


async def test_the_embedder_sheds_with_a_reason_and_embeds_batches_outside_the_queue() -> None:
    model = GatedModel()
    model.gate.set()
    embedder = StrongEmbedder(StrongWorker(lambda: model.embed, capacity=0), "strong-test")
    with pytest.raises(EmbeddingError) as caught:
        await embedder.embed(["one"])
    assert caught.value.reason == "strong_shed"
    many = await embedder.embed(["a", "bb"])  # reference examples: not subject to the queue
    assert many[:, 0].tolist() == [1.0, 2.0]
    await embedder.worker.aclose()
