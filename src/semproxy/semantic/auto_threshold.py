"""`threshold: auto`: per-instance thresholds learned from the route's own examples.

No labelled traffic is needed. Two samples describe each instance i:

- its examples, each scored against the route *without itself* (leave one
  out): how an in-scope prompt that the examples do not quite cover scores
  on i;
- a shipped background set of everyday off-topic prompts
  (`embeddings/data/background.txt`): how high a prompt about something else
  reaches on i.

The threshold is the mean of the lower quartile of the first sample and the
95th percentile of the second. Each alone measured worse on CLINC150
(docs/en/routing-quality.md, "Out-of-scope prompts"): the quartile of the
examples alone rejects too few off-topic prompts where examples are spread
out, the background percentile alone rejects too many in-scope prompts on
instances whose topic is close to everyday talk.

The same background set gives an optional per-prompt correction
(`balancer.background_weight`, `closeness` below): every instance's score
minus w times the prompt's mean cosine to its 10 nearest background prompts.
Ranking is unchanged (one constant per prompt); what changes is who clears a
threshold: a prompt that reads like everyday talk must score higher. On
CLINC150 with wordllama it kept 0.5-1 point more in-scope accuracy at equal
out-of-scope recall (docs/en/routing-quality.md, "Out-of-scope handling").
When it is on, the learned thresholds are learned on corrected scores.

Pure numpy; the caller supplies the scores (`instance_scores` of similarity.py
on the route's reference matrix), so the rule is the same for every model and
aggregation.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources

import numpy as np
import numpy.typing as npt

# Quantiles of the rule above; measured on CLINC150 val, k=16, seeds 0-2.
EXAMPLE_QUANTILE = 0.25
BACKGROUND_QUANTILE = 0.95
# How many nearest background prompts `closeness` averages: one near neighbour is
# noisy, many blur into the set's mean (5-20 measured alike on CLINC150).
NEAREST = 10

FloatArray = npt.NDArray[np.float64]
Score = Callable[[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.intp]],
                 FloatArray]


def background_prompts() -> list[str]:
    """The shipped background set: one prompt a line, `#` lines are comments."""
    text = resources.files("semproxy.embeddings").joinpath("data/background.txt").read_text(
        encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def closeness(prompts: npt.NDArray[np.float32], background: npt.NDArray[np.float32],
              skip_self: bool = False) -> FloatArray:
    """Each prompt's mean cosine to its `NEAREST` nearest background prompts.

    Rows are unit (or centred) vectors as the route compares them. With
    `skip_self`, `prompts` are the background itself and each skips its own row.
    """
    sims = np.asarray(prompts @ background.T, dtype=np.float64)
    if skip_self:
        np.fill_diagonal(sims, -np.inf)
    n = min(NEAREST, sims.shape[1] - int(skip_self))
    if n <= 0:
        return np.zeros(len(sims))
    nearest = -np.partition(-sims, n - 1, axis=1)[:, :n]
    return np.asarray(nearest.mean(axis=1), dtype=np.float64)


def leave_one_out(refs: npt.NDArray[np.float32], bounds: npt.NDArray[np.intp],
                  score: Score) -> FloatArray:
    """Each example's score on its own instance, against the route without that example.

    `score(prompts, refs, bounds)` returns (n_prompts, n_instances) scores, and
    an instance's column depends on its own examples only (true of every
    aggregation in similarity.py). So each example is scored against its
    siblings alone: one small call per example, at most 63 siblings, linear in
    the route's size. (Scoring against the whole route minus one example was
    quadratic: 8,192 examples took 79 s, with a reload waiting on it.) An
    instance with a single example has nothing left to compare with; its
    example gets NaN (ignored by `learn`).
    """
    out = np.full(len(refs), np.nan)
    for i in range(len(bounds) - 1):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        mine, size = refs[lo:hi], hi - lo
        if size < 2:
            continue
        alone = np.array([0, size - 1], dtype=np.intp)
        for j in range(size):
            siblings = mine[np.r_[0:j, j + 1:size]]
            out[lo + j] = score(mine[j:j + 1], siblings, alone)[0, 0]
    return out


def learn(own: FloatArray, bounds: npt.NDArray[np.intp], background: FloatArray,
          fallback: float) -> tuple[float, ...]:
    """One threshold per instance from leave-one-out scores `own` (one per example, in
    instance order) and `background` scores (n_background, n_instances).

    An instance without a usable leave-one-out score (a single example) gets
    `fallback` for that half of the rule; without background prompts the
    examples' quartile decides alone.
    """
    thresholds = []
    for i in range(len(bounds) - 1):
        mine = own[bounds[i]:bounds[i + 1]]
        mine = mine[np.isfinite(mine)]
        inside = float(np.quantile(mine, EXAMPLE_QUANTILE)) if len(mine) else fallback
        if len(background) == 0:
            thresholds.append(inside)
            continue
        outside = float(np.quantile(background[:, i], BACKGROUND_QUANTILE))
        thresholds.append(round((inside + outside) / 2, 6))
    return tuple(thresholds)


def complete(thresholds: tuple[float | None, ...], refs: npt.NDArray[np.float32],
             bounds: npt.NDArray[np.intp], background: npt.NDArray[np.float32],
             score: Score, fallback: float = 0.0, weight: float = 0.0) -> tuple[float, ...]:
    """`thresholds` with every None replaced by the learned threshold of that instance.

    `refs` and `background` are the route's unit (or centred) vectors, exactly
    as prompts are compared with them; `score` is the route's aggregation;
    `weight` the route's `background_weight` (both samples are corrected as
    prompts will be).
    """
    if all(t is not None for t in thresholds):
        return tuple(t for t in thresholds if t is not None)
    own = leave_one_out(refs, bounds, score)
    background_scores = score(background, refs, bounds) if len(background) else \
        np.zeros((0, len(bounds) - 1))
    if weight and len(background):
        own = own - weight * closeness(refs, background)
        background_scores = background_scores - weight * closeness(
            background, background, skip_self=True)[:, None]
    learned = learn(own, bounds, background_scores, fallback)
    return tuple(mine if mine is not None else auto
                 for mine, auto in zip(thresholds, learned, strict=True))
