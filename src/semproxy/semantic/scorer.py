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
from dataclasses import dataclass, field
from typing import NoReturn

import numpy as np

from semproxy.embeddings import Embedder
from semproxy.errors import EmbeddingError
from semproxy.semantic.auto_threshold import background_prompts, closeness, complete
from semproxy.semantic.similarity import (
    AGGREGATIONS,
    instance_scores,
    normalize,
    normalize_one,
    segment_sum_norms,
)


@dataclass(frozen=True, slots=True)
class References:
    names: tuple[str, ...]
    thresholds: tuple[float, ...]
    matrix: np.ndarray
    bounds: np.ndarray
    negatives: np.ndarray | None
    negative_bounds: np.ndarray | None
    sum_norms: np.ndarray
    starts: np.ndarray  # bounds[:-1]: every instance here has examples, so none is empty
    center: np.ndarray | None = None
    aggregation: str = "max"
    k: int = 3
    followups: np.ndarray | None = None  # the shipped topic-free follow-ups (conversations)
    followup_norm: np.ndarray | None = None  # their sum's length (segment_sum_norms), shape (1,)
    # Per instance: how much more than the average instance the follow-ups score it.
    # An instance whose examples read like follow-ups ("repeat that", "cancel")
    # needs a turn to stand that much further above the follow-ups to lead.
    followup_bias: np.ndarray | None = None
    # balancer.background_weight: the shipped background set's vectors and the weight
    # of a prompt's closeness to them, taken off all of its scores (None / 0: off).
    background: np.ndarray | None = None
    background_weight: float = 0.0
    # Set from the above, once rather than per prompt: the vectors' dimension, whether
    # `score_one` takes its short path, and the transposed matrix (a view) it multiplies.
    dim: int = field(init=False, repr=False, compare=False)
    plain: bool = field(init=False, repr=False, compare=False)
    columns: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dim", int(self.matrix.shape[1]))
        object.__setattr__(self, "plain", self.aggregation == "max" and self.negatives is None
                           and self.followups is None and self.background is None)
        object.__setattr__(self, "columns", self.matrix.T)

    def score(self, vectors: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """`(n, n_instances)` scores of `n` embedded prompts, of the negatives if any, and
        each prompt's score against the shipped follow-ups (when they were loaded), taken
        as one more instance with the route's aggregation so it compares with the others.

        Every instance here has examples (the scorer keeps only those), so the
        segments are all non-empty and the aggregation runs without the masking
        `instance_scores` needs for the general case: one prompt costs a few
        numpy calls.
        """
        prompts = centered(vectors, self.center)
        sims = prompts @ self.matrix.T
        if self.aggregation != "max":
            # Sums of cosines are taken in float64, as `instance_scores` does; the
            # maximum needs no cast (it is exact in float32, cast after).
            sims = sims.astype(np.float64)
        scores = AGGREGATIONS[self.aggregation](sims, self.starts, self.k,
                                                 self.sum_norms, self.matrix)
        generic = None
        if self.followups is not None and self.followup_norm is not None:
            near = prompts @ self.followups.T
            if self.aggregation != "max":
                near = near.astype(np.float64)
            generic = AGGREGATIONS[self.aggregation](near, _ONE_SEGMENT, self.k,
                                                     self.followup_norm, self.followups)[..., 0]
        negative = None
        if self.negatives is not None and self.negative_bounds is not None:
            negative = np.atleast_2d(instance_scores(prompts, self.negatives,
                                                     self.negative_bounds))
        if self.background is None or not self.background_weight:
            return scores, negative, generic
        # One constant per prompt off every score it is compared by (negatives and
        # follow-ups too), so only the thresholds see the correction.
        shift = self.background_weight * closeness(prompts, self.background)
        return (scores - shift[:, None], None if negative is None else negative - shift[:, None],
                None if generic is None else generic - shift)

    def score_one(self, vector: np.ndarray) -> tuple[list[float], list[float] | None,
                                                    float | None]:
        """`score` of one embedded prompt, shape (1, dim), as Python floats: the same
        values to the last bit, since each step computes what a batch of one does.

        The default set-up (the `max` aggregation, no negatives, follow-ups or
        background) is one normalisation, one matrix product and one segmented
        maximum, with no per-instance Python loop; any other runs `score` itself.
        """
        if not self.plain:
            scores, negative, generic = self.score(vector)
            return (scores[0].tolist(), None if negative is None else negative[0].tolist(),
                    None if generic is None else float(generic[0]))
        prompt = normalize_one(vector[0])
        if self.center is not None and prompt.any():
            prompt = normalize_one(prompt - self.center)  # `centered`, for one prompt
        # np.dot of a vector and the transposed matrix is the matrix-vector product the
        # batch's `prompts @ matrix.T` makes for one row (same BLAS call, same bits). The
        # maximum is exact in float32; its Python floats are the float64 a batch casts.
        best: list[float] = _segment_maxima(_dot(prompt, self.columns), self.starts).tolist()
        return best, None, None


@dataclass(frozen=True, slots=True)
class ScoredInstance:
    name: str
    examples: tuple[str, ...]
    negative_examples: tuple[str, ...]
    threshold: float | None  # None: learned when the references are built (threshold: auto)


def centered(vectors: np.ndarray, center: np.ndarray | None) -> np.ndarray:
    """Unit vectors with the route's mean example direction taken out, renormalised.

    Averaged word embeddings share a large common component (every sentence is
    a bit like every other); removing the mean of the route's own examples
    spreads the cosines out. A zero vector (blank text) stays zero.
    """
    unit = normalize(vectors)
    if center is None:
        return unit
    shifted = np.where(np.any(unit != 0, axis=-1, keepdims=True), unit - center, 0.0)
    return normalize(shifted)


# Looked up once rather than per request: a prompt's product with the examples, and
# each instance's best example.
_dot = np.dot
_segment_maxima = np.maximum.reduceat
# The follow-ups are one segment starting at column 0.
_ONE_SEGMENT = np.zeros(1, dtype=np.intp)


def _bounds(groups: Sequence[Sequence[str]]) -> np.ndarray:
    return np.cumsum([0, *(len(g) for g in groups)]).astype(np.intp)


class PromptScorer:
    def __init__(
        self,
        instances: Sequence[ScoredInstance],
        embedder: Embedder,
        aggregation: str = "max",
        k: int = 3,
        center: bool = False,
        followups: Sequence[str] = (),
        background_weight: float = 0.0,
    ) -> None:
        self.instances = tuple(i for i in instances if i.examples)
        self._embedder = embedder
        self._aggregation = aggregation
        self._k = k
        self._center = center
        self._followups = tuple(followups)
        self._background_weight = background_weight
        self._refs: References | None = None
        self._building: asyncio.Future[References] | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.instances)

    @property
    def thresholds(self) -> tuple[float, ...]:
        """The thresholds in force: learned ones (threshold: auto) once the references exist."""
        if self._refs is not None:
            return self._refs.thresholds
        return tuple(0.0 if i.threshold is None else i.threshold for i in self.instances)

    @property
    def current(self) -> References | None:
        """The reference vectors in use now (None before the first build)."""
        return self._refs

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
        thresholds = tuple(i.threshold for i in self.instances)
        weight = self._background_weight
        background = background_prompts() if None in thresholds or weight else []
        extra = list(self._followups)
        vectors = await self._embedder.embed(texts + neg_texts + background + extra)
        if vectors.ndim != 2 or vectors.shape[0] != (len(texts) + len(neg_texts)
                                                     + len(background) + len(extra)):
            raise EmbeddingError("reference embeddings have the wrong shape")
        own = len(texts) + len(neg_texts)
        ours = own + len(background)  # then the shipped follow-ups, if any
        mean = normalize(vectors[: len(texts)]).mean(axis=0) if self._center and texts else None
        matrix = centered(vectors, mean)
        bounds = _bounds(positives)
        refs = np.ascontiguousarray(matrix[: len(texts)])
        bias = None
        if extra:
            liking = np.atleast_2d(self._score_fn(matrix[ours:], refs, bounds)).mean(axis=0)
            bias = liking - liking.mean()
        return References(
            names=self.names,
            # Learning runs one scoring pass per example: off the event loop.
            thresholds=await asyncio.get_running_loop().run_in_executor(
                None, complete, thresholds, refs, bounds,
                matrix[own:ours], self._score_fn, 0.0, weight),
            matrix=refs,
            bounds=bounds,
            negatives=np.ascontiguousarray(matrix[len(texts):own]) if neg_texts else None,
            negative_bounds=_bounds(negatives) if neg_texts else None,
            sum_norms=segment_sum_norms(matrix[: len(texts)], bounds),
            starts=bounds[:-1],
            center=mean,
            aggregation=self._aggregation,
            k=self._k,
            followups=np.ascontiguousarray(matrix[ours:]) if extra else None,
            followup_norm=segment_sum_norms(matrix[ours:], [0, len(extra)]) if extra else None,
            followup_bias=bias,
            background=np.ascontiguousarray(matrix[own:ours]) if weight else None,
            background_weight=weight,
        )

    def _score_fn(self, prompts: np.ndarray, refs: np.ndarray, bounds: np.ndarray
                  ) -> np.ndarray:
        """This scorer's aggregation as `auto_threshold` calls it (learning thresholds)."""
        return np.atleast_2d(instance_scores(prompts, refs, bounds, self._aggregation, self._k))

    async def score_turns(
        self, texts: Sequence[str]
    ) -> tuple[References, np.ndarray, np.ndarray | None, np.ndarray | None]:
        """`(n_texts, n_instances)` scores of every instance with examples for each text,
        those of their negatives, and each text's closeness to the shipped follow-ups
        (None when the route does not read conversations); see `References.score`.

        One embedding call and one matrix product for the whole batch; the
        gateway's per-request path is `score_one`, which gives the values a batch
        of one gives here.
        """
        refs = self._refs or await self.references()
        return refs, *refs.score(self._checked(refs, await self._embedder.embed(texts),
                                               len(texts)))

    async def score_one(self, text: str
                        ) -> tuple[References, list[float], list[float] | None, float | None]:
        """`score_turns` of one text (one request's prompt), as Python floats; see
        `References.score_one`."""
        refs = self._refs or await self.references()
        vectors = await self._embedder.embed((text,))
        if vectors.shape != (1, refs.dim):
            self._mismatch(refs, vectors)
        return refs, *refs.score_one(vectors)

    def _checked(self, refs: References, vectors: np.ndarray, count: int) -> np.ndarray:
        if vectors.shape != (count, refs.dim):
            self._mismatch(refs, vectors)
        return vectors

    def _mismatch(self, refs: References, vectors: np.ndarray) -> NoReturn:
        # The model changed underneath (same name, other dimension): drop the stale
        # references so the next request rebuilds them with the new model.
        self._refs = None
        raise EmbeddingError(
            f"prompt embedding has dimension {vectors.shape[-1]}, references {refs.dim}",
            "dimension_mismatch",
        )
