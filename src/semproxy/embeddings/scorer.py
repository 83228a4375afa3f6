"""Turn a prompt into one similarity score per instance.

Reference vectors (every example of a route, embedded in one batch and
L2-normalised into one matrix) are built on first use or at config load and
kept by this object, which lives exactly as long as one (route, config version):
a new config version builds a new scorer, so stale vectors are never used. A
failed build is not kept; the next request tries again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from semproxy.balancer.similarity import instance_scores, normalize
from semproxy.embeddings import Embedder
from semproxy.errors import EmbeddingError


@dataclass(frozen=True, slots=True)
class References:
    names: tuple[str, ...]
    thresholds: tuple[float, ...]
    matrix: np.ndarray
    bounds: np.ndarray
    negatives: np.ndarray | None
    negative_bounds: np.ndarray | None

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])


@dataclass(frozen=True, slots=True)
class ScoredInstance:
    name: str
    examples: tuple[str, ...]
    negative_examples: tuple[str, ...]
    threshold: float


def _bounds(groups: Sequence[Sequence[str]]) -> np.ndarray:
    return np.cumsum([0, *(len(g) for g in groups)]).astype(np.intp)


class PromptScorer:
    def __init__(
        self,
        instances: Sequence[ScoredInstance],
        embedder: Embedder,
        aggregation: str = "max",
        k: int = 3,
    ) -> None:
        self.instances = tuple(i for i in instances if i.examples)
        self._embedder = embedder
        self._aggregation = aggregation
        self._k = k
        self._refs: References | None = None
        self._building: asyncio.Future[References] | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.instances)

    async def references(self) -> References:
        """The reference matrix, built once; concurrent first requests share one build."""
        if self._refs is not None:
            return self._refs
        if self._building is None:
            self._building = asyncio.ensure_future(self._build())
        building = self._building
        try:
            self._refs = await asyncio.shield(building)
            return self._refs
        finally:
            if building.done():
                self._building = None

    async def _build(self) -> References:
        positives = [i.examples for i in self.instances]
        negatives = [i.negative_examples for i in self.instances]
        texts = [t for group in positives for t in group]
        neg_texts = [t for group in negatives for t in group]
        vectors = await self._embedder.embed(texts + neg_texts)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts) + len(neg_texts):
            raise EmbeddingError("reference embeddings have the wrong shape")
        matrix = normalize(vectors)
        return References(
            names=self.names,
            thresholds=tuple(i.threshold for i in self.instances),
            matrix=np.ascontiguousarray(matrix[: len(texts)]),
            bounds=_bounds(positives),
            negatives=np.ascontiguousarray(matrix[len(texts):]) if neg_texts else None,
            negative_bounds=_bounds(negatives) if neg_texts else None,
        )

    async def score(self, text: str) -> tuple[References, np.ndarray, np.ndarray | None]:
        """Scores of every instance with examples (and of their negatives, if any)."""
        refs = await self.references()
        vectors = await self._embedder.embed([text])
        if vectors.ndim != 2 or vectors.shape[1] != refs.dim:
            # The model changed underneath (same name, other dimension): drop the
            # stale references so the next request rebuilds them with the new model.
            self._refs = None
            raise EmbeddingError(
                f"prompt embedding has dimension {vectors.shape[-1]}, references {refs.dim}",
                "dimension_mismatch",
            )
        prompt = normalize(vectors[0])
        scores = instance_scores(prompt, refs.matrix, refs.bounds, self._aggregation, self._k)
        negative = None
        if refs.negatives is not None and refs.negative_bounds is not None:
            negative = instance_scores(prompt, refs.negatives, refs.negative_bounds)
        return refs, scores, negative
