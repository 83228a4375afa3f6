"""Vector math for semantic routing: normalise, score instances, rank them.

Everything here is pure numpy on already-embedded vectors; embedding and
caching live elsewhere. The reference matrix holds every example of a route,
grouped by instance, so scoring one prompt (or a batch of prompts) costs one
matrix product.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import cast

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]


def normalize(matrix: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """L2-normalise each row of a matrix (or a single vector) as float32.

    Once every vector has unit length, a dot product *is* the cosine, so the
    hot path needs no divisions. float32 halves memory and is plenty for
    ranking. A zero vector has no direction; it stays zero instead of turning
    into NaN, so it scores 0 against everything and cannot poison a ranking.
    """
    values = np.asarray(matrix, dtype=np.float32)
    # What np.linalg.norm(values, axis=-1) computes for real input, minus its
    # Python-level dispatch (a few microseconds per prompt on the request path).
    norms = np.sqrt(np.add.reduce(values * values, axis=-1, keepdims=True))
    if not norms.all():
        # Zero rows are divided by 1 and stay zero; the check costs less than a
        # masked division on every call (this runs once per routed prompt).
        norms[norms == 0] = 1.0
    return cast("npt.NDArray[np.float32]", values / norms)  # float32 / float32 stays float32


_FLOAT32 = np.dtype(np.float32)
_sum = np.add.reduce  # looked up once: the per-request path calls it for every prompt


def normalize_one(vector: npt.NDArray[np.floating]) -> npt.NDArray[np.float32]:
    """`normalize` of one vector (1-D), to the same bits in fewer numpy calls (the
    per-request path): the squares are summed by the same pairwise reduction, and
    the length is one Python float. A float32 square root and a float64 one rounded
    to float32 agree (53 >= 2 * 24 + 2 bits), and a Python float is cast to the
    array's float32 before the division (NEP 50)."""
    if vector.dtype is not _FLOAT32:
        vector = vector.astype(np.float32)
    total = float(_sum(vector * vector))
    if not total:
        return cast("npt.NDArray[np.float32]", vector.copy())  # `normalize` divides by 1
    return cast("npt.NDArray[np.float32]", vector / math.sqrt(total))


def _segment_max(sims: FloatArray, starts: IntArray, k: int, sums: FloatArray,
                 refs: npt.NDArray[np.floating] | None = None) -> FloatArray:
    # Segments are contiguous, so reduceat computes every instance's maximum
    # in one vectorised pass (per prompt row when scoring a batch).
    return np.maximum.reduceat(sims, starts, axis=-1).astype(np.float64)


def _segment_top_k_mean(sims: FloatArray, starts: IntArray, k: int, sums: FloatArray,
                        refs: npt.NDArray[np.floating] | None = None) -> FloatArray:
    ends = np.append(starts[1:], sims.shape[-1])
    out = np.empty((*sims.shape[:-1], len(starts)), dtype=np.float64)
    for i, (start, end) in enumerate(zip(starts, ends, strict=True)):
        segment = sims[..., start:end]
        # k is capped by the example count: an instance with two examples is
        # judged on both rather than being rejected for having few.
        take = min(k, end - start)
        out[..., i] = np.partition(segment, end - start - take, axis=-1)[..., -take:].mean(-1)
    return out


def _segment_centroid(sims: FloatArray, starts: IntArray, sums: FloatArray) -> FloatArray:
    # cos(prompt, centroid) needs no second matrix product: the dot product
    # with the sum of an instance's examples is the sum of their cosines, and
    # dividing by that sum's length normalises it.
    # Examples that cancel out (sum of length 0) have no centroid direction.
    totals = np.add.reduceat(sims, starts, axis=-1)
    return np.divide(totals, sums, out=np.zeros_like(totals), where=sums > 0)


def _segment_max_centroid(sims: FloatArray, starts: IntArray, k: int, sums: FloatArray,
                          refs: npt.NDArray[np.floating] | None = None) -> FloatArray:
    return 0.5 * _segment_max(sims, starts, k, sums) + 0.5 * _segment_centroid(sims, starts, sums)


# Rows x nearest examples x dim gathered at once by `_segment_local_centroid`;
# bigger batches are cut into chunks so the gather stays a few MB.
_GATHER_LIMIT = 1 << 22


@functools.lru_cache(maxsize=256)
def _nearest_layout(starts: tuple[int, ...], k: int, width: int
                    ) -> tuple[FloatArray, IntArray, npt.NDArray[np.float32]]:
    """Sort-key offsets, the sorted positions to keep, and which instance each one counts for.

    Depends only on the route's shape (and k), so the per-request path reuses it.
    """
    edges = np.array([*starts, width], dtype=np.intp)
    sizes = np.diff(edges)
    takes = np.minimum(k, sizes)
    # The first kept segment always starts at column 0 (empty ones before it have no width).
    keys = 4.0 * np.repeat(np.arange(len(starts)), sizes).astype(np.float64)
    picks = np.concatenate([np.arange(s, s + t) for s, t in zip(edges[:-1], takes, strict=True)])
    owner = np.zeros((len(starts), len(picks)), dtype=np.float32)
    owner[np.repeat(np.arange(len(starts)), takes), np.arange(len(picks))] = 1.0
    for array in (keys, picks, owner):
        array.flags.writeable = False
    return keys, picks.astype(np.intp, copy=False), owner


def _segment_local_centroid(sims: FloatArray, starts: IntArray, k: int,
                            refs: npt.NDArray[np.floating]) -> FloatArray:
    """Cosine between each prompt and the centroid of its k nearest examples, per instance.

    One sort per prompt row ranks every instance's examples at once: keys
    `4 * instance - cosine` keep instances in order (cosines lie in [-1, 1])
    and sort each one's examples best first, so the k nearest of instance i
    sit at sorted positions starts[i] .. starts[i] + k. The dot product with
    their sum is the sum of their cosines; only the sum's length needs the
    vectors. Sums are products with a 0/1 owner matrix (BLAS), which measured
    3x faster than `np.add.reduceat` over the gathered vectors.
    """
    rows, width = sims.shape
    keys, picks, owner = _nearest_layout(tuple(starts.tolist()), k, width)
    if rows == 1:  # the per-request case: plain 2-D products, ~30% faster than the 3-D ones
        row = sims[0]
        nearest = np.argsort(keys - row)[picks]
        dots = owner @ row[nearest]
        sums = owner @ refs[nearest]
        lengths = np.sqrt(np.square(sums, dtype=np.float64).sum(axis=-1))
        single: FloatArray = np.divide(dots, lengths, out=np.zeros(len(dots)), where=lengths > 0)
        return single[None]
    out = np.empty((rows, len(starts)), dtype=np.float64)
    step = max(1, _GATHER_LIMIT // max(1, len(picks) * refs.shape[1]))
    for lo in range(0, rows, step):
        block = sims[lo:lo + step]
        # The default (unstable) sort is 3-4x faster than a stable one. It only
        # matters for exact ties between different examples, and it orders a
        # given row the same way in a batch as alone.
        nearest = np.argsort(keys - block, axis=-1)[:, picks]
        dots = np.take_along_axis(block, nearest, axis=-1) @ owner.T
        lengths = np.linalg.norm(owner @ refs[nearest], axis=-1).astype(np.float64)
        out[lo:lo + step] = np.divide(dots, lengths, out=np.zeros_like(dots), where=lengths > 0)
    return out


def _segment_max_local_centroid(sims: FloatArray, starts: IntArray, k: int, sums: FloatArray,
                                refs: npt.NDArray[np.floating] | None = None) -> FloatArray:
    # Equal thirds of: the best example, the centroid of all examples, the
    # centroid of the k nearest examples. The local centroid sits between the
    # two: it follows the sub-topic the prompt is about without trusting a
    # single lucky phrase.
    if refs is None:
        raise ValueError("max_local_centroid needs the reference matrix")
    return (_segment_max(sims, starts, k, sums) + _segment_centroid(sims, starts, sums)
            + _segment_local_centroid(sims, starts, k, refs)) / 3.0


# How one instance's example cosines collapse into a single score.
# "max" is the default: an instance is as relevant as its closest example.
# A mean would punish instances whose examples deliberately cover several
# distinct topics (code *and* SQL *and* shell), since any prompt is far from
# most of them. "top_k_mean" is a middle ground that resists one lucky
# outlier example while still not averaging over unrelated topics.
# "max_centroid" averages the best example's cosine with the cosine to the
# normalised mean of all examples: the centroid alone blurs sub-topics, the
# best example alone trusts one lucky phrase; together they were the most
# accurate on CLINC150 (docs/en/routing-quality.md) until "max_local_centroid"
# added a third part, the centroid of the k examples nearest to the prompt.
Aggregate = Callable[[FloatArray, IntArray, int, FloatArray, npt.NDArray[np.floating] | None],
                     FloatArray]
AGGREGATIONS: dict[str, Aggregate] = {
    "max": _segment_max,
    "top_k_mean": _segment_top_k_mean,
    "max_centroid": _segment_max_centroid,
    "max_local_centroid": _segment_max_local_centroid,
}
CENTROID_AGGREGATIONS = frozenset({"max_centroid", "max_local_centroid"})


def segment_sum_norms(refs: npt.ArrayLike, bounds: npt.ArrayLike) -> FloatArray:
    """Length of the sum of each instance's example vectors (0 for an instance without any)."""
    matrix = np.asarray(refs, dtype=np.float64)
    edges = np.asarray(bounds, dtype=np.intp)
    out = np.zeros(len(edges) - 1, dtype=np.float64)
    for i in range(len(out)):
        out[i] = np.linalg.norm(matrix[edges[i]:edges[i + 1]].sum(axis=0))
    return out


def instance_scores(
    prompt: npt.ArrayLike,
    refs: npt.ArrayLike,
    bounds: npt.ArrayLike,
    aggregation: str = "max",
    k: int = 3,
    sum_norms: npt.ArrayLike | None = None,
) -> FloatArray:
    """Score each instance against a normalised prompt vector, or a batch of them.

    ``refs`` is the normalised ``(n_examples, dim)`` matrix, rows grouped by
    instance; instance ``i`` owns rows ``bounds[i]:bounds[i + 1]`` and
    ``bounds[-1] == len(refs)``. A ``(dim,)`` prompt gives ``(n_instances,)``
    float64 scores, an ``(n_prompts, dim)`` batch one such row per prompt,
    from one matrix product. An instance without examples scores ``-inf`` so
    it sorts last and is dropped by :func:`rank` (it cannot be matched, only
    be a catchall). ``sum_norms`` (from :func:`segment_sum_norms`) may be
    passed precomputed; only the centroid aggregations read it.
    """
    aggregate = AGGREGATIONS.get(aggregation)
    if aggregate is None:
        raise ValueError(f"unknown aggregation {aggregation!r} (known: {sorted(AGGREGATIONS)})")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    edges = np.asarray(bounds, dtype=np.intp)
    ref_matrix = np.asarray(refs)
    if edges.ndim != 1 or len(edges) < 1 or edges[-1] != len(ref_matrix):
        raise ValueError("bounds must be 1-D segment starts ending with len(refs)")
    prompts = np.asarray(prompt)
    sims = (np.atleast_2d(prompts) @ ref_matrix.T).astype(np.float64)
    starts = edges[:-1]
    has_examples = np.diff(edges) > 0
    scores = np.full((len(sims), len(starts)), -np.inf, dtype=np.float64)
    if has_examples.any():
        if sum_norms is None:
            sum_norms = (segment_sum_norms(ref_matrix, edges)
                         if aggregation in CENTROID_AGGREGATIONS else np.ones(len(starts)))
        norms = np.asarray(sum_norms, dtype=np.float64)
        # Empty segments are skipped: reduceat would otherwise return the
        # next instance's first cosine for them. Without them, each kept
        # start runs exactly to the next kept start.
        scores[:, has_examples] = aggregate(sims, starts[has_examples], k, norms[has_examples],
                                            ref_matrix)
    return scores[0] if prompts.ndim == 1 else scores


def order(values: Sequence[float]) -> list[int]:
    """Indices of the finite values, largest first; a stable sort keeps configuration
    order on ties, so equal scores resolve the same way on every request. Non-finite
    values are dropped: NaN would break the sort."""
    finite = [i for i, value in enumerate(values) if math.isfinite(value)]
    return sorted(finite, key=values.__getitem__, reverse=True)  # reverse keeps it stable


def rank(
    names: Sequence[str], scores: npt.ArrayLike, thresholds: Sequence[float]
) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """Order instances by score and keep those that clear their own threshold.

    Returns ``(cleared, ranking)``. ``ranking`` holds every instance with a
    finite score, best first (see `order`). ``cleared`` is the part of
    ``ranking`` whose score is >= that instance's threshold.
    The threshold is per instance because cosine scales differ by topic: a
    narrow domain may need 0.7 to be trusted while a broad one is fine at 0.4.
    """
    # Python floats from here on: a handful of values, and numpy scalars would
    # cost more per comparison than the whole sort.
    values: list[float] = np.asarray(scores, dtype=np.float64).tolist()
    if not len(names) == len(values) == len(thresholds):
        raise ValueError("names, scores and thresholds must have the same length")
    kept = order(values)
    ranking = [(names[i], values[i]) for i in kept]
    cleared = [(names[i], values[i]) for i in kept if values[i] >= thresholds[i]]
    return cleared, ranking


def format_scores(ranking: Sequence[tuple[str, float]]) -> str:
    """Render ``name:score`` pairs as ``code:0.8213,translate:0.1904``."""
    return ",".join(f"{name}:{score:.4f}" for name, score in ranking)


def margin(ranking: Sequence[tuple[str, float]]) -> float:
    """Winner's lead over the runner-up; ``inf`` when there is no runner-up.

    A small margin means the router barely preferred one instance, which is
    what ``semproxy calibrate`` looks at when proposing thresholds.
    """
    if len(ranking) < 2:
        return float("inf")
    return ranking[0][1] - ranking[1][1]
