"""Text embeddings for semantic routing: the contract every embedder meets.

Implementations live beside this file: `local` (in-process wordllama, the
default), `minilm` (the optional all-MiniLM-L6-v2, run by the numpy BERT in
`bert`), `cache` (an LRU in front of any embedder) and `breaker` (a circuit
breaker in front of a remote one). `registry` names the in-process models a
config can choose. `parse` validates OpenAI-shaped /v1/embeddings responses.

This module imports nothing heavy on purpose: importing the contract must not
load a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

#: A float32 matrix with one row per input text.
Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into vectors.

    `fingerprint` names the model and endpoint; two embedders with the same
    fingerprint must give the same vector for the same text, so it is safe to
    use as part of a cache key.

    `embed` returns float32 of shape (len(texts), dim), not necessarily
    L2-normalised, and never containing NaN or infinity. Every failure is
    raised as `semproxy.errors.EmbeddingError`.
    """

    fingerprint: str

    async def embed(self, texts: Sequence[str]) -> Vectors: ...

    async def aclose(self) -> None: ...


__all__ = ["Embedder", "Vectors"]
