"""Choose thresholds on labelled prompts, judged on a part of them kept out of the fit.

The search needs the decision for thousands of candidate thresholds, so it
uses `picks`, a vectorised copy of `semantic.decision.decide` (a test holds
the two equal). Figures shown to the user come from `decide` itself.

Method: the best single threshold from a grid of score quantiles, then
coordinate ascent over the per-instance thresholds, keeping a change only if
it strictly helps. Figures come from k-fold cross-validation: each fold is
decided with thresholds fitted on the other folds, so every labelled prompt
is judged once by a fit that did not see it (`folds` deals the prompts, by a
hash of each text, per label, so every run and machine deals alike). On
CLINC150 the per-instance step gained on the fitting part and lost on the
held-out part, so `calibrate` writes it only when asked (`--per-instance`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from semproxy.quality.metrics import Confusion

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
GRID = 101
ROUNDS = 2
Score = tuple[float, float]  # compared as a tuple: (constraint met, value)


def folds(texts: Sequence[str], codes: Sequence[int], k: int) -> IntArray:
    """The cross-validation fold (0..k-1) of every row, stratified by label.

    Within each label, prompts are ordered by a hash of their text and dealt
    round-robin into the folds, so every fold holds about 1/k of every label
    (the 100 out-of-scope prompts of a file are spread over all folds, and all
    of them are judged once) and every run and machine deals alike.
    """
    if k < 2:
        raise ValueError("--folds must be at least 2")
    out = np.zeros(len(codes), dtype=np.intp)
    for code in sorted(set(codes)):
        members = [i for i, c in enumerate(codes) if c == code]
        members.sort(key=lambda i: hashlib.sha1(texts[i].encode()).hexdigest())
        for rank, i in enumerate(members):
            out[i] = rank % k
    return out


def picks(scores: FloatArray, thresholds: FloatArray, min_margin: float = 0.0,
          negative: FloatArray | None = None) -> IntArray:
    """`decide` for a batch: the picked instance index per row, -1 for the catchall."""
    cleared = scores >= thresholds
    if negative is not None:
        cleared &= negative < scores
    best = np.where(cleared, scores, -np.inf).argmax(axis=1)
    out = np.where(cleared.any(axis=1), best, -1)
    if min_margin > 0 and scores.shape[1] > 1:
        top2 = -np.partition(-scores, 1, axis=1)[:, :2]
        narrow = (top2[:, 0] - top2[:, 1] < min_margin) & (best == scores.argmax(axis=1))
        out = np.where(narrow & (out >= 0), -1, out)
    return out.astype(np.intp)


OBJECTIVES = "balanced, accuracy, precision=P, oos_recall=R"


def objective(spec: str) -> Callable[[Confusion], Score]:
    """`balanced`, `accuracy`, `precision=P` or `oos_recall=R` as a function to maximise."""
    if spec == "balanced":
        return lambda c: (1.0, c.balanced_accuracy() or 0.0)
    if spec == "accuracy":
        return lambda c: (1.0, c.accuracy() or 0.0)
    name, _, value = spec.partition("=")
    if value and name in CONSTRAINED:
        letter, constrained = CONSTRAINED[name]
        target = _share(spec, value, f"{name}={letter}")
        return lambda c: constrained(c, target)
    raise ValueError(f"unknown objective {spec!r} ({OBJECTIVES})")


def _share(spec: str, text: str, form: str) -> float:
    """`text`, the number after `=` in objective `spec` (of the form `form`), as a share
    from 0 to 1."""
    try:
        share = float(text)
    except ValueError:
        raise ValueError(f"bad objective {spec!r}: {form} needs a number") from None
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"bad objective {spec!r}: {form[-1]} is a share from 0 to 1")
    return share


def _precision_at(c: Confusion, target: float) -> Score:
    # Meet the precision target first; among thresholds that do, route as many
    # in-scope prompts correctly as possible. Below it, get as close as we can.
    precision = c.routed_precision()
    if precision is not None and precision >= target:
        return (1.0, c.in_scope_accuracy() or 0.0)
    return (0.0, precision or 0.0)


def _oos_recall_at(c: Confusion, target: float) -> Score:
    # Send at least `target` of the labelled out-of-scope prompts to the catchall;
    # among thresholds that do, route as many in-scope prompts correctly as
    # possible. The operator states how much off-topic traffic a specialist may
    # take, and gives up no more in-scope accuracy than that costs.
    recall = c.catchall_recall()
    if recall is None or recall >= target:
        return (1.0, c.in_scope_accuracy() or 0.0)
    return (0.0, recall)


# `name=X` objectives: the letter the help text uses for X, and the rule.
CONSTRAINED: dict[str, tuple[str, Callable[[Confusion, float], Score]]] = {
    "precision": ("P", _precision_at),
    "oos_recall": ("R", _oos_recall_at),
}


@dataclass(frozen=True, slots=True)
class Fit:
    threshold: float
    thresholds: tuple[float, ...]  # per instance
    # Whether a config carries `thresholds` (per instance) or `threshold` alone.
    per_instance: bool = False


def _confusion(labels: Sequence[str], expected: IntArray, got: IntArray) -> Confusion:
    catch = len(labels) - 1
    return Confusion.from_codes(labels, expected, np.where(got < 0, catch, got))


def candidates(scores: FloatArray, catchall: npt.NDArray[np.bool_]) -> FloatArray:
    """The thresholds tried: -1 (never fall back), quantiles of the top scores, and
    just above each catchall prompt's top score.

    The quantiles step over 1% of all prompts at a time, a coarse step when
    out-of-scope prompts are a few percent of the file; the points just above
    them (rounded up to the 4 places written to config) are where a constraint
    on out-of-scope recall is met with the fewest in-scope prompts lost.
    """
    top = scores.max(axis=1)
    quantiles = np.round(np.quantile(top, np.linspace(0, 1, GRID)), 4)
    above = np.floor(top[catchall] * 1e4 + 1) / 1e4
    return np.concatenate([[-1.0], np.unique(np.concatenate([quantiles, above]))])


def fit(labels: Sequence[str], scores: FloatArray, expected: IntArray,
        goal: Callable[[Confusion], Score], min_margin: float = 0.0,
        negative: FloatArray | None = None) -> Fit:
    """Thresholds (rounded to 4 places, as written to config) that maximise `goal`."""
    grid = candidates(scores, expected == len(labels) - 1)

    def score_of(thresholds: FloatArray) -> Score:
        return goal(_confusion(labels, expected, picks(scores, thresholds, min_margin, negative)))

    n = scores.shape[1]
    results = [(score_of(np.full(n, t)), -i, t) for i, t in enumerate(grid)]
    best_score, _, best_t = max(results)
    current = np.full(n, best_t)
    for _ in range(ROUNDS):
        for j in range(n):
            for t in grid:
                trial = current.copy()
                trial[j] = t
                value = score_of(trial)
                if value > best_score:
                    best_score, current = value, trial
    return Fit(float(best_t), tuple(float(t) for t in current))
