"""One calibration run end to end: score labelled prompts once, fit, measure, propose.

Shared by `semproxy calibrate` (which prints it) and the admin playground
(which returns it as JSON). Scoring is async (embedding); `propose` is plain
CPU work over the score matrix, so a server can run it in a thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from semproxy.config.spec import RouteSpec
from semproxy.quality import calibrate as cal
from semproxy.quality.evaluate import CHUNK
from semproxy.quality.labelled import LabelledPrompt
from semproxy.quality.metrics import Confusion
from semproxy.quality.progress import ProgressBar
from semproxy.semantic.router import SemanticRouter


@dataclass(frozen=True, slots=True)
class Scored:
    """Every labelled prompt scored against every instance (rows follow the items)."""

    labels: tuple[str, ...]  # instances with examples, then the catchall
    scores: np.ndarray
    negative: np.ndarray | None
    expected: np.ndarray  # label index per row


# The rows `propose` measures, in the order they are preferred on a tie: keeping the
# config beats a change that measures the same, a single threshold beats many.
BEFORE = "before (config)"
SINGLE = "threshold (cross-validated)"
PER_INSTANCE = "+ per-instance (cross-validated)"


@dataclass(frozen=True, slots=True)
class Proposal:
    """Thresholds fitted on every prompt, how such a fit does on prompts it did not see,
    and which row to write: the best-measured one (`chosen`), never one that measures
    worse than the config's own thresholds.

    `fitted` is the chosen row's thresholds (the config's own when nothing measures
    better); `fits` has every row's, for a caller that asks for one explicitly.
    """

    fitted: cal.Fit
    folds: int
    prompts: int
    fold_thresholds: tuple[float, ...]  # the single threshold each fold's fit chose
    measured: tuple[tuple[str, Confusion], ...]  # (name, pooled out-of-fold confusion)
    chosen: str = SINGLE
    fits: Mapping[str, cal.Fit] = field(default_factory=dict)
    scores: Mapping[str, cal.Score] = field(default_factory=dict)  # each row by the objective

    def is_worse(self, row: str) -> bool:
        """Whether `row` measures worse than the config's own thresholds."""
        return self.scores[row] < self.scores[BEFORE]


async def score_all(router: SemanticRouter, items: Sequence[LabelledPrompt],
                    bar: ProgressBar | None = None) -> Scored:
    """Blank prompts are scored as zero vectors: 0 everywhere, a catchall-like row.

    (The gateway never scores them at all; it answers `no_user_text`.)
    """
    texts = [i.text for i in items]
    parts, negs = [], []
    for start in range(0, len(texts), CHUNK):
        scores, negative = await router.score_many(texts[start:start + CHUNK])
        parts.append(scores)
        negs.append(negative)
        if bar is not None:
            bar.advance(len(scores))
    if bar is not None:
        bar.close()
    labels = (*router.names, router.spec.catchall)
    index = {name: i for i, name in enumerate(labels)}
    expected = np.array([index[i.instance or labels[-1]] for i in items], dtype=np.intp)
    negative = None if any(n is None for n in negs) else np.vstack(negs)  # type: ignore[arg-type]
    return Scored(labels, np.vstack(parts), negative, expected)


def measure(router: SemanticRouter, scored: Scored, thresholds: Sequence[float],
            rows: np.ndarray) -> Confusion:
    """The decisions the router's own rule makes with these thresholds, as a confusion matrix."""
    labels, neg = scored.labels, scored.negative
    got = [router.rule(scored.scores[i], None if neg is None else neg[i], thresholds).pick
           for i in rows]
    return Confusion.from_names(labels, [labels[e] for e in scored.expected[rows]], got)


def propose(router: SemanticRouter, scored: Scored, texts: Sequence[str],
            goal: Callable[[Confusion], cal.Score], folds: int = 5) -> Proposal:
    """Fit on all prompts; measure the fit by k-fold cross-validation.

    "before (config)" is the route's own thresholds on every prompt (nothing
    is fitted). The other two rows pool the folds: each fold decided with the
    thresholds fitted on the rest, so every prompt counts once, unseen.
    """
    neg, n = scored.negative, len(scored.expected)
    k = max(2, min(folds, n))
    dealt = cal.folds(texts, scored.expected.tolist(), k)

    def fit_on(rows: np.ndarray) -> cal.Fit:
        return cal.fit(scored.labels, scored.scores[rows], scored.expected[rows], goal,
                       router.spec.min_margin, None if neg is None else neg[rows])

    every = np.arange(n)
    before = list(router.thresholds)
    single = per = Confusion.from_codes(scored.labels, np.empty(0, np.intp),
                                        np.empty(0, np.intp))
    chosen = []
    for fold in range(k):
        held, rest = np.flatnonzero(dealt == fold), np.flatnonzero(dealt != fold)
        if not len(held) or not len(rest):  # tiny data: a fold took every prompt
            continue
        part = fit_on(rest)
        chosen.append(part.threshold)
        single += measure(router, scored, [part.threshold] * len(before), held)
        per += measure(router, scored, list(part.thresholds), held)
    measured = ((BEFORE, measure(router, scored, before, every)), (SINGLE, single),
                (PER_INSTANCE, per))
    full = fit_on(every)
    fits = {BEFORE: cal.Fit(router.spec.threshold, tuple(before), per_instance=True),
            SINGLE: full, PER_INSTANCE: replace(full, per_instance=True)}
    scores = {name: goal(c) for name, c in measured}
    best = BEFORE
    for name in (SINGLE, PER_INSTANCE):  # strictly better only: ties keep the simpler
        if scores[name] > scores[best]:
            best = name
    return Proposal(fits[best], k, n, tuple(chosen), measured, best, fits, scores)


def thresholds_to_write(route: RouteSpec, fitted: cal.Fit, names: Sequence[str],
                        per_instance: bool) -> dict[str, float]:
    """The per-instance thresholds a config must carry to behave as measured.

    A single-threshold fit without `per_instance` sets explicit instance
    thresholds to the new balancer threshold too (else they would keep
    overriding it); a per-instance fit (or the config's own row) writes each.
    """
    explicit = {i.name for i in route.instances if i.threshold is not None}
    chosen = fitted.thresholds if per_instance or fitted.per_instance \
        else [fitted.threshold] * len(names)
    return {n: t for n, t in zip(names, chosen, strict=True)
            if n in explicit or abs(t - fitted.threshold) > 1e-9}
