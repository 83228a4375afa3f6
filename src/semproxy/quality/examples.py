"""Which labelled prompts to add as examples: greedy, on already-embedded vectors.

`semproxy tune` embeds the route's examples and the labelled prompts once and
then works on numbers only. Scores are those of the gateway's scorer (the same
centring and `instance_scores`; a test holds the two equal). The measure is
in-scope top-1 accuracy: the share of prompts meant for a specialist whose
best-scoring instance is that specialist, thresholds aside (recalibrate after
adding examples: they shift every score a little).

Greedy: at each step every candidate (a labelled in-scope prompt not yet an
example, misrouted ones and the narrowest wins first) is tried as a new example
of its own instance, and the one that fixes the most other labelled prompts,
net of the ones it breaks, is taken, if that is more than none: an example that
fixes nothing only moves scores (`tune --count 10` once wrote 9 such). A
candidate is never credited for fixing itself. Ties go to the candidate closest
to many still-misrouted prompts of its instance (a typical phrasing fixes more
unseen prompts than an odd one).
Only the rows whose decision can change are re-scored: the new example enters
the instance's best k for them, and the instance owns or contests them.

On CLINC150 (k=16, 50 picks from val, measured on test) capping each instance
at its share of the picks did worse than letting the gains decide (+4.4 to
+4.8 points against +5.1 to +5.3), so there is no cap but the config's 64.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from semproxy.semantic.scorer import centered
from semproxy.semantic.similarity import (
    AGGREGATIONS,
    instance_scores,
    normalize,
    segment_sum_norms,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
SHORTLIST = 200  # candidates tried per step, most informative first
CLOSE = 0.5  # cosine at which a misrouted prompt counts as near a candidate


@dataclass(frozen=True, slots=True)
class Scoring:
    """How the route scores: what `instance_scores` and `centered` need."""

    aggregation: str = "max"
    k: int = 3
    center: bool = False


@dataclass(frozen=True, slots=True)
class Pick:
    row: int  # index into the labelled prompts
    instance: int
    gain: int  # labelled prompts fixed minus broken when it was picked


def score_route(examples: Sequence[np.ndarray], prompts: np.ndarray, how: Scoring
                ) -> FloatArray:
    """(prompts, instances) scores, as the gateway's scorer computes them."""
    refs, unit, _ = _space(examples, prompts, how)
    bounds = _bounds(examples)
    return np.asarray(instance_scores(unit, refs, bounds, how.aggregation, how.k,
                                      segment_sum_norms(refs, bounds)), dtype=np.float64)


def _bounds(examples: Sequence[np.ndarray]) -> IntArray:
    return np.cumsum([0, *(len(e) for e in examples)]).astype(np.intp)


def _space(examples: Sequence[np.ndarray], prompts: np.ndarray, how: Scoring
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    raw = np.vstack(examples)
    mean = normalize(raw).mean(axis=0) if how.center else None
    return centered(raw, mean), centered(prompts, mean), mean


class GreedyPicker:
    """The state of one greedy run: per-instance example vectors and the score matrix."""

    def __init__(self, examples: Sequence[np.ndarray], prompts: np.ndarray,
                 labels: IntArray, how: Scoring, limit: int = 64,
                 blocked: set[int] | None = None) -> None:
        refs, self.unit, _ = _space(examples, prompts, how)
        bounds = _bounds(examples)
        self.refs = [refs[bounds[i]:bounds[i + 1]] for i in range(len(examples))]
        self.labels = labels  # instance index per prompt, -1: the catchall
        self.how = how
        self.limit = limit
        self.inside = np.flatnonzero(labels >= 0)
        # Cosines of every in-scope prompt to every example, per instance: a
        # trial example adds one column instead of a new matrix product.
        self.inner = self.unit[self.inside]
        self.sims = [(self.inner @ r.T).astype(np.float64) for r in self.refs]
        self.scores = np.column_stack([self._column(self.sims[i], self.refs[i])
                                       for i in range(len(examples))])
        self.taken: set[int] = set()
        self.blocked = blocked or set()
        self._top2 = np.zeros((len(self.inside), 2), dtype=np.intp)
        self._kths: list[FloatArray] = []
        self._contested: list[np.ndarray] = []

    def _column(self, sims: FloatArray, refs: np.ndarray) -> FloatArray:
        """One instance's scores from its prompts-by-examples cosines (`instance_scores`
        after its matrix product)."""
        edges = np.array([0, len(refs)], dtype=np.intp)
        out = AGGREGATIONS[self.how.aggregation](sims, edges[:1], self.how.k,
                                                 segment_sum_norms(refs, edges), refs)
        return np.asarray(out, dtype=np.float64).reshape(len(sims))

    def _state(self) -> tuple[np.ndarray, FloatArray]:
        """Per in-scope prompt: is it right, and its own score minus the best other."""
        own_col = self.labels[self.inside]
        rows = np.arange(len(self.inside))
        own = self.scores[rows, own_col]
        others = self.scores.copy()
        others[rows, own_col] = -np.inf
        return self.scores.argmax(axis=1) == own_col, own - others.max(axis=1)

    def _shortlist(self, right: np.ndarray, margin: FloatArray, allowed: np.ndarray
                   ) -> IntArray:
        free = np.array([j for j in range(len(self.inside))
                         if int(self.inside[j]) not in self.taken
                         and int(self.inside[j]) not in self.blocked
                         and allowed[self.labels[self.inside[j]]]], dtype=np.intp)
        if not len(free):
            return free
        return free[np.argsort(margin[free], kind="stable")[:SHORTLIST]]

    def _kth(self, instance: int) -> FloatArray:
        """Per prompt, the cosine a new example must beat to enter the instance's best k."""
        sims = self.sims[instance]
        take = min(self.how.k if self.how.aggregation != "max" else 1, sims.shape[1])
        return np.partition(sims, sims.shape[1] - take, axis=1)[:, sims.shape[1] - take]

    def _gain(self, j: int, right: np.ndarray) -> int:
        """Prompts fixed minus broken if in-scope prompt j became an example.

        Only prompts for which the new example enters the instance's best k
        (the best one for `max`) are re-scored: for the others it moves the
        instance centroid alone, by about one part in the number of examples,
        which the greedy ignores (the final figures do not).
        """
        instance = int(self.labels[self.inside[j]])
        new = self.inner[j]
        fresh = self.inner @ new
        rows = np.flatnonzero((fresh > self._kths[instance]) & self._contested[instance])
        rows = rows[rows != j]
        if not len(rows):
            return 0
        refs = np.vstack([self.refs[instance], new[None, :]])
        sims = np.column_stack([self.sims[instance][rows], fresh[rows]])
        trial = self.scores[rows].copy()
        trial[:, instance] = self._column(sims, refs)
        now = trial.argmax(axis=1) == self.labels[self.inside[rows]]
        return int(now.sum()) - int(right[rows].sum())

    def _closeness(self, j: int, right: np.ndarray) -> int:
        instance = self.labels[self.inside[j]]
        missed = self.inside[(~right) & (self.labels[self.inside] == instance)]
        if not len(missed):
            return 0
        return int((self.unit[missed] @ self.unit[self.inside[j]] > CLOSE).sum())

    def step(self) -> Pick | None:
        right, margin = self._state()
        sizes = np.array([len(r) for r in self.refs])
        candidates = self._shortlist(right, margin, sizes < self.limit)
        if not len(candidates):
            return None
        self._top2 = np.argsort(-self.scores, axis=1)[:, :2]
        self._kths = [self._kth(i) for i in range(len(self.refs))]
        own_col = self.labels[self.inside]
        self._contested = [(own_col == i) | (self._top2 == i).any(axis=1)
                           for i in range(len(self.refs))]
        gains = np.array([self._gain(int(j), right) for j in candidates])
        if gains.max() <= 0:  # no candidate fixes more than it breaks: adding it gains nothing
            return None
        tied = np.flatnonzero(gains == gains.max())
        best = int(candidates[max(tied, key=lambda i: self._closeness(int(candidates[i]),
                                                                       right))])
        self._add(best)
        return Pick(int(self.inside[best]), int(self.labels[self.inside[best]]),
                    int(gains.max()))

    def _add(self, j: int) -> None:
        row = int(self.inside[j])
        instance = int(self.labels[row])
        self.taken.add(row)
        self.refs[instance] = np.vstack([self.refs[instance], self.unit[row][None, :]])
        self.sims[instance] = np.column_stack([self.sims[instance],
                                               self.inner @ self.unit[row]])
        self.scores[:, instance] = self._column(self.sims[instance], self.refs[instance])


def choose(examples: Sequence[np.ndarray], prompts: np.ndarray, labels: IntArray,
           count: int, how: Scoring, limit: int = 64,
           blocked: set[int] | None = None) -> list[Pick]:
    """Up to `count` labelled in-scope prompts to add, best first; each fixes more
    labelled prompts than it breaks when it is added (fewer when none is left that does).

    `examples[i]` are instance i's example vectors (raw, as embedded), `prompts`
    the labelled prompts' vectors, `labels[r]` the instance prompt r belongs to
    (-1: the catchall; never a candidate). `limit` caps examples per instance;
    `blocked` rows are never picked (blank prompts, existing examples, repeats).
    """
    picker = GreedyPicker(examples, prompts, labels, how, limit, blocked)
    picks: list[Pick] = []
    while len(picks) < count:
        pick = picker.step()
        if pick is None:
            break
        picks.append(pick)
    return picks
