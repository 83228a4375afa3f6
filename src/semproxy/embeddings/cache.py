"""An LRU cache of prompt vectors in front of any embedder.

Users resend the same prompts (retries, agents looping, shared system
prompts), and an embedding is a pure function of (model, text); caching them
saves a remote round trip or local work. Concurrent requests for the same text
share one in-flight call instead of each paying for it.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from semproxy.embeddings import Embedder, Vectors
from semproxy.errors import EmbeddingError

Row = npt.NDArray[np.float32]
Key = tuple[str, str | bytes]

# Prompts longer than this are keyed by a 16-byte digest. A prompt may be 16 KiB
# of 4-byte characters (64 KiB as a str): 4,096 such keys held 330 MB more than
# short ones. Most prompts are shorter and keep their text as key (no hashing).
MAX_KEY_CHARS = 256


def bounded_key(text: str) -> str | bytes:
    """A cache key for `text` of at most MAX_KEY_CHARS characters or 16 bytes.

    A str and a bytes key never compare equal, so a digest cannot collide with
    a short text; two long texts collide only if BLAKE2b-128 does.
    """
    if len(text) <= MAX_KEY_CHARS:
        return text
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class CachedEmbedder:
    """Wraps `inner`; serves repeated texts from memory.

    `hits` counts distinct texts per call answered without this call asking
    `inner` (from the cache or from another caller's in-flight request);
    `misses` counts distinct texts sent to `inner`. Failures are never cached:
    every caller waiting on a failed call gets its error, and the next call
    tries again. `on_lookup` hears each of those lookups as it happens (hit or
    not), so a metric counts it without reading the counters across an await.
    """

    def __init__(self, inner: Embedder, max_entries: int = 4096,
                 on_lookup: Callable[[bool], None] | None = None) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.fingerprint = inner.fingerprint
        self.hits = 0
        self.misses = 0
        self._inner = inner
        self._max_entries = max_entries
        self._entries: OrderedDict[Key, Row] = OrderedDict()
        self._dim: int | None = None  # dimension of every cached row
        self._inflight: dict[Key, asyncio.Future[Row]] = {}
        self._on_lookup = on_lookup

    def __len__(self) -> int:
        return len(self._entries)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Vectors for `texts`, asking `inner` only for texts nobody has or is fetching."""
        if not texts:
            return await self._inner.embed(texts)
        rows: dict[str, Row] = {}
        shared: dict[str, asyncio.Future[Row]] = {}
        missing: list[str] = []
        for text in dict.fromkeys(texts):  # each distinct text once, in order
            self._classify(text, rows, shared, missing)
        if missing:
            rows.update(await self._fetch(missing))
        for text, future in shared.items():
            # shield: a cancelled waiter must not cancel the future other callers share.
            rows[text] = await asyncio.shield(future)
        return _stack(rows, texts)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def _classify(
        self,
        text: str,
        rows: dict[str, Row],
        shared: dict[str, asyncio.Future[Row]],
        missing: list[str],
    ) -> None:
        key = (self.fingerprint, bounded_key(text))
        row = self._entries.get(key)
        if row is not None:
            self._entries.move_to_end(key)
            rows[text] = row
            self.hits += 1
        elif key in self._inflight:
            shared[text] = self._inflight[key]
            self.hits += 1
        else:
            missing.append(text)
            self.misses += 1
        if self._on_lookup is not None:
            self._on_lookup(row is not None or text in shared)

    async def _fetch(self, texts: list[str]) -> dict[str, Row]:
        """One batched call to `inner` for `texts`, published to concurrent callers."""
        loop = asyncio.get_running_loop()
        futures = {text: loop.create_future() for text in texts}
        keys = {text: (self.fingerprint, bounded_key(text)) for text in texts}
        for text, future in futures.items():
            self._inflight[keys[text]] = future
        try:
            rows = _split(await self._inner.embed(texts), len(texts))
        except EmbeddingError as exc:
            _fail(futures.values(), exc)
            raise
        except BaseException as exc:
            # Cancelled or broken contract: waiters must not hang, and must not
            # see a CancelledError that would look like their own cancellation.
            _fail(futures.values(), EmbeddingError(f"shared embedding call failed: {exc!r}"))
            raise
        finally:
            for key in keys.values():
                self._inflight.pop(key, None)
        result = dict(zip(texts, rows, strict=True))
        self._check_dim(rows)
        for text, row in result.items():
            futures[text].set_result(row)
            self._store(keys[text], row)
        return result

    def _check_dim(self, rows: list[Row]) -> None:
        """A new dimension means the model changed behind the same fingerprint.

        Every cached row then belongs to the old model; serving them would keep
        rebuilt references in the old space forever, so the cache starts over.
        """
        dim = int(rows[0].shape[0]) if rows else self._dim
        if self._dim is not None and dim != self._dim:
            self._entries.clear()
        self._dim = dim

    def _store(self, key: Key, row: Row) -> None:
        self._entries[key] = row
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)


def _split(matrix: Vectors, count: int) -> list[Row]:
    """Check the inner result's shape and cut it into read-only row copies.

    Copies so a cached row does not pin the whole batch in memory; read-only so
    a caller mutating its result cannot corrupt the cache.
    """
    if not isinstance(matrix, np.ndarray) or matrix.ndim != 2 or matrix.shape[0] != count:
        raise EmbeddingError(f"embedder returned the wrong shape for {count} texts")
    rows = []
    for row in matrix.astype(np.float32, copy=False):
        owned = row.copy()
        owned.flags.writeable = False
        rows.append(owned)
    return rows


def _fail(futures: Iterable[asyncio.Future[Row]], exc: BaseException) -> None:
    for future in futures:
        if not future.done():
            future.set_exception(exc)
            # Mark it retrieved: with no waiter, asyncio would otherwise log
            # "Future exception was never retrieved" when it is collected.
            future.exception()


def _stack(rows: dict[str, Row], texts: Sequence[str]) -> Vectors:
    try:
        return np.stack([rows[text] for text in texts])
    except ValueError as exc:  # rows of different lengths: the model changed under us
        raise EmbeddingError(str(exc), reason="dimension_mismatch") from exc
