"""The strong model's worker: one thread, a bounded queue, shedding under overload.

The cascade (`cascade.py`) sends only its ambiguous prompts here. They wait
in a queue of at most `capacity` texts; one drain task at a time hands the
worker thread up to `batch` of them per forward pass (a batched pass costs
less per prompt than separate ones). The event loop never runs the model.

When the queue is full, `submit` refuses at once (returns None) and counts
the refusal in `shed`: the caller then keeps the fast model's decision. A
slow strong model so degrades routing quality, never latency: a request waits
at most for the texts already queued ahead of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from semproxy.embeddings import Vectors
from semproxy.errors import EmbeddingError

Embed = Callable[[Sequence[str]], Vectors]  # blocking, thread-compatible
Job = tuple[str, "asyncio.Future[Vectors]"]

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
        self._queue: list[Job] = []
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
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        return future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._queue:
            jobs, self._queue = self._queue[:self.batch], self._queue[self.batch:]
            try:
                await self.warm()
                assert self._embed is not None
                vectors = await loop.run_in_executor(self._thread, self._embed,
                                                     [text for text, _ in jobs])
            except Exception as exc:  # fail-open: callers fall back to the fast decision
                error = exc if isinstance(exc, EmbeddingError) else \
                    EmbeddingError(f"strong model failed: {exc}")
                for _, future in jobs:
                    if not future.done():
                        future.set_exception(error)
            except BaseException:  # cancelled: nobody will answer these callers now
                for _, future in jobs + self._queue:
                    future.cancel()
                self._queue = []
                raise
            else:
                for row, (_, future) in enumerate(jobs):
                    if not future.done():  # a caller that gave up is skipped
                        future.set_result(vectors[row:row + 1])

    async def embed_many(self, texts: Sequence[str]) -> Vectors:
        """Embed a batch (reference examples, offline evaluation) outside the queue.

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
    """The `Embedder` over a `StrongWorker`: one prompt goes through the bounded queue
    (a full queue raises EmbeddingError reason "strong_shed"), a batch runs directly."""

    def __init__(self, worker: StrongWorker, fingerprint: str) -> None:
        self.worker = worker
        self.fingerprint = fingerprint

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if len(texts) != 1:
            return await self.worker.embed_many(texts)
        await self.worker.warm()
        future = self.worker.submit(texts[0])
        if future is None:
            raise EmbeddingError("the strong model's queue is full", "strong_shed")
        return await future

    async def aclose(self) -> None:
        """Nothing to release: the worker may be shared (minilm_onnx.strong_worker)."""
