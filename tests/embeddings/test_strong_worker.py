"""StrongWorker: one thread, a bounded queue that sheds, batching, failures remembered."""

from __future__ import annotations

import asyncio
import threading
import time
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


async def test_batch_work_waits_behind_every_live_prompt() -> None:
    model = GatedModel()
    worker = StrongWorker(lambda: model.embed, batch=2)
    batch = StrongEmbedder(worker, "strong-test").for_batches()
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    work = asyncio.create_task(batch.embed(texts))
    await asyncio.sleep(0.05)  # the first chunk is now blocked in the thread
    live = [worker.submit(t) for t in ("L1", "L2", "L3")]
    model.gate.set()
    vectors = await work
    assert vectors[:, 0].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]  # the caller's order
    assert all(f is not None and f.done() for f in live)
    # One chunk was running; every live prompt went before the next chunk.
    assert model.passes == [["a", "bb"], ["L1", "L2"], ["L3"], ["ccc", "dddd"], ["eeeee"]]
    await worker.aclose()


async def test_live_prompts_keep_a_bounded_latency_while_batch_work_runs() -> None:
    # An eval of thousands of prompts from the playground ran in one pass on the
    # strong thread: live requests waited for all of it (p99 38 s for 3,000 prompts).
    def slow(texts: Sequence[str]) -> np.ndarray:
        time.sleep(0.002 * len(texts))  # 2 ms a text, as the int8 model on a busy box
        return np.zeros((len(texts), 2), np.float32)

    worker = StrongWorker(lambda: slow, capacity=16, batch=16)
    batch = StrongEmbedder(worker, "strong-test").for_batches()
    live = StrongEmbedder(worker, "strong-test")
    await worker.warm()
    work = asyncio.create_task(batch.embed([f"prompt {i}" for i in range(1500)]))  # 3 s
    waits = []
    await asyncio.sleep(0.05)
    for _ in range(15):
        started = time.perf_counter()
        await live.embed(["a live prompt"])
        waits.append(time.perf_counter() - started)
        await asyncio.sleep(0.03)
    assert not work.done()  # the batch really ran meanwhile
    assert max(waits) < 0.5, waits  # one chunk (32 ms) ahead at most, plus a loaded box
    assert len(await work) == 1500
    await worker.aclose()
