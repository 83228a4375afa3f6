"""The strong model's worker: one thread, a bounded queue, shedding under overload.

The cascade (`cascade.py`) sends only its ambiguous prompts here. They wait
in a queue of at most `capacity` texts; one drain task at a time hands the
worker thread up to `batch` of them per call (one thread hop for all; the
int8 model embeds each text alone, see minilm_onnx). The event loop never
runs the model.

When the queue is full, `submit` refuses at once (returns None) and counts
the refusal in `shed`: the caller then keeps the fast model's decision. A
slow strong model so degrades routing quality, never latency: a request waits
at most for the texts already queued ahead of it.

Batch work (an eval or calibration of thousands of prompts from the CLI or the
playground) shares the thread but never the live queue's place: `embed_batch`
cuts it into chunks of `batch` texts, queues one chunk at a time, and the drain
takes a chunk only when no live prompt waits. A live prompt so waits at most
for the one chunk being embedded (measured in docs/en/accurate-mode.md).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from semproxy.embeddings import Vectors
from semproxy.errors import EmbeddingError

Embed = Callable[[Sequence[str]], Vectors]  # blocking, thread-compatible
Job = tuple[str, "asyncio.Future[Vectors]"]
Chunk = tuple[list[str], "asyncio.Future[Vectors]"]

# A latency budget more than a memory bound: a prompt that finds the queue full
# would wait for the pass running now plus every batch ahead of it (2-5 ms a
# prompt on this machine), so at most one batch may wait. On the loaded bench
# box a queue of 64 gave a c=64 p50 of 608 ms on new prompts, 16 gave 256 ms at
# the same throughput (docs/en/accurate-mode.md).
DEFAULT_CAPACITY = 16
DEFAULT_BATCH = 16


class StrongWorker:
    """Runs `embed` in its own thread for queued texts; see the module docstring.

    `load` (blocking) returns the embed function; it runs in the worker thread
    on first use, and a failure is remembered: every later submission fails at
    once with the same error instead of loading again.
    """

    def __init__(self, load: Callable[[], Embed], capacity: int = DEFAULT_CAPACITY,
                 batch: int = DEFAULT_BATCH) -> None:
        self._load = load
        self._embed: Embed | None = None
        self._failure: EmbeddingError | None = None
        self.capacity = capacity
        self.batch = batch
        self._queue: list[Job] = []  # live prompts, at most `capacity`
        self._chunks: deque[Chunk] = deque()  # batch work, one chunk per caller
        self._drainer: asyncio.Task[None] | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="semproxy-strong")
        self.shed = 0  # submissions refused because the queue was full

    @property
    def waiting(self) -> int:
        return len(self._queue)

    async def warm(self) -> None:
        """Load the model in the worker thread (the first call; later ones return at once)."""
        if self._embed is not None:
            return
        if self._failure is not None:
            raise self._failure
        try:
            self._embed = await asyncio.get_running_loop().run_in_executor(self._thread, self._load)
        except Exception as exc:  # any load failure becomes this worker's answer
            self._failure = exc if isinstance(exc, EmbeddingError) else \
                EmbeddingError(f"cannot load the strong model: {exc}")
            raise self._failure from exc

    def submit(self, text: str) -> asyncio.Future[Vectors] | None:
        """A future of the text's (1, dim) vector, or None when the queue is full."""
        if len(self._queue) >= self.capacity:
            self.shed += 1
            return None
        future: asyncio.Future[Vectors] = asyncio.get_running_loop().create_future()
        self._queue.append((text, future))
        self._kick()
        return future

    async def embed_batch(self, texts: Sequence[str]) -> Vectors:
        """Embed batch work behind every live prompt, one chunk of `batch` texts at a time.

        Never shed: batch work waits its turn. Only one chunk of a caller is queued
        at a time, so a long eval holds no more of the queue than a short one.
        """
        await self.warm()
        parts = []
        for start in range(0, len(texts), self.batch):
            future: asyncio.Future[Vectors] = asyncio.get_running_loop().create_future()
            self._chunks.append((list(texts[start:start + self.batch]), future))
            self._kick()
            parts.append(await future)
        return np.vstack(parts) if parts else await self.embed_many(texts)

    def _kick(self) -> None:
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        while self._queue or self._chunks:
            if self._queue:  # live prompts first, always; each gets its own row
                jobs, self._queue = self._queue[:self.batch], self._queue[self.batch:]
                texts, futures = [text for text, _ in jobs], [f for _, f in jobs]
                per_row = True
            else:  # a chunk of batch work: its caller gets every row
                texts, whole = self._chunks.popleft()
                futures, per_row = [whole], False
            try:
                vectors = await self._pass(texts)
            except Exception as exc:  # fail-open: callers fall back to the fast decision
                error = exc if isinstance(exc, EmbeddingError) else \
                    EmbeddingError(f"strong model failed: {exc}")
                for future in futures:
                    if not future.done():
                        future.set_exception(error)
            except BaseException:  # cancelled: nobody will answer these callers now
                for future in [*futures, *(f for _, f in self._queue),
                               *(f for _, f in self._chunks)]:
                    future.cancel()
                self._queue, self._chunks = [], deque()
                raise
            else:
                rows = [vectors[row:row + 1] for row in range(len(futures))] if per_row \
                    else [vectors]
                for future, result in zip(futures, rows, strict=True):
                    if not future.done():  # a caller that gave up is skipped
                        future.set_result(result)

    async def _pass(self, texts: list[str]) -> Vectors:
        await self.warm()
        assert self._embed is not None
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._embed, texts)

    async def embed_many(self, texts: Sequence[str]) -> Vectors:
        """Embed a batch (reference examples of the live route) outside the queue.

        Still in the worker thread, so it never overlaps a queued pass.
        """
        await self.warm()
        assert self._embed is not None
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._embed,
                                                                list(texts))

    async def aclose(self) -> None:
        if self._drainer is not None and not self._drainer.done():
            self._drainer.cancel()
        self._thread.shutdown(wait=False, cancel_futures=True)


class StrongEmbedder:
    """The `Embedder` over a `StrongWorker`.

    Live (the gateway's router): one prompt goes through the bounded queue (a
    full queue raises EmbeddingError reason "strong_shed"), a batch (reference
    examples) runs directly. `for_batches()` is the same model for batch work
    (eval, calibrate, playground): every call waits behind live prompts.
    """

    def __init__(self, worker: StrongWorker, fingerprint: str, batch_work: bool = False) -> None:
        self.worker = worker
        self.fingerprint = fingerprint
        self.batch_work = batch_work

    def for_batches(self) -> StrongEmbedder:
        return StrongEmbedder(self.worker, self.fingerprint, batch_work=True)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if self.batch_work:
            return await self.worker.embed_batch(texts)
        if len(texts) != 1:
            return await self.worker.embed_many(texts)
        await self.worker.warm()
        future = self.worker.submit(texts[0])
        if future is None:
            raise EmbeddingError("the strong model's queue is full", "strong_shed")
        return await future

    async def aclose(self) -> None:
        """Nothing to release: the worker may be shared (minilm_onnx.strong_worker)."""
