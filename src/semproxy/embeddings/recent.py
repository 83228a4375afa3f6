"""The vectors of the last prompts an embedder embedded, for the response cache to reuse.

A semantic route embeds the last user turn to route it; its response cache
compares the same turn's vector. `RecentVectors` wraps the route's embedder
and keeps the vectors of the few texts each call embeds (one request's turn,
or a conversation's turns), so the cache asks `recall` for the vector routing
just made instead of embedding the text again. Batches (the route's examples,
an evaluation) pass through unrecorded. A text routing did not embed (its
decision came from the router's decision cache and its vector has left this
memory) is embedded once more by the cache through `embed`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from semproxy.embeddings import Embedder, Vectors
from semproxy.embeddings.cache import bounded_key

MAX_RECORDED_BATCH = 16  # a call of more texts is not one request's turns


class RecentVectors:
    """An `Embedder` that remembers the vectors of its last `size` small calls' texts."""

    def __init__(self, inner: Embedder, size: int) -> None:
        self.fingerprint = inner.fingerprint
        self._inner = inner
        self._size = max(1, size)
        self._vectors: OrderedDict[str | bytes, np.ndarray] = OrderedDict()

    def __len__(self) -> int:
        return len(self._vectors)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        vectors = await self._inner.embed(texts)
        if len(texts) <= MAX_RECORDED_BATCH and vectors.shape[0] == len(texts):
            for text, row in zip(texts, vectors, strict=True):
                self._keep(bounded_key(text), row)
        return vectors

    def recall(self, text: str) -> np.ndarray | None:
        """The vector of `text` if a recent call embedded it (it stays recent), else None."""
        key = bounded_key(text)
        row = self._vectors.get(key)
        if row is not None:
            self._vectors.move_to_end(key)
        return row

    def _keep(self, key: str | bytes, row: np.ndarray) -> None:
        self._vectors[key] = row
        self._vectors.move_to_end(key)
        if len(self._vectors) > self._size:
            self._vectors.popitem(last=False)

    async def aclose(self) -> None:
        self._vectors.clear()
