"""The semantic decision: given each instance's similarity, which instance serves.

Pure: no I/O, no embedding. `semantic/scorer.py` produces the scores; this
module applies thresholds, the margin rule and negative examples, and explains
its choice with a machine-readable reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from semproxy.semantic.similarity import format_scores, order

MATCHED = "matched"
BELOW_THRESHOLD = "below_threshold"
LOW_MARGIN = "low_margin"
NO_USER_TEXT = "no_user_text"


@dataclass(frozen=True)
class Decision:
    """What semantic routing chose and why.

    `cleared` are the instances whose score met their threshold, best first;
    `ranking` every instance with examples and its score (empty when no score
    could be computed, e.g. the embedding failed).
    """

    pick: str
    reason: str
    cleared: tuple[str, ...] = ()
    ranking: tuple[tuple[str, float], ...] = ()
    # `context: conversation`: each user turn's weight, oldest first (empty otherwise).
    context: tuple[float, ...] = ()
    # The thresholds the decision was made with, in the router's instance order (empty
    # when nothing was scored). Under `model: accurate` with `threshold: auto` they are
    # those of the stage that scored the prompt, which differ between the two models.
    thresholds: tuple[float, ...] = ()

    @property
    def matched(self) -> bool:
        return self.reason == MATCHED

    @property
    def route_label(self) -> str:
        return self.pick if self.matched else "fallback"

    @property
    def top_score(self) -> float | None:
        return self.ranking[0][1] if self.ranking else None

    @cached_property
    def scores_text(self) -> str:
        """``name:score`` pairs, rendered once: a remembered decision serves many
        requests, and each may put the text in a header and a warning."""
        return format_scores(self.ranking)

    @property
    def context_text(self) -> str:
        """Per-turn weights, oldest first: ``0,1,0`` (the middle turn decided)."""
        return ",".join(f"{w:g}" for w in self.context)

    @classmethod
    def scored(cls, pick: str, reason: str, cleared: tuple[str, ...],
               ranking: tuple[tuple[str, float], ...], thresholds: tuple[float, ...]
               ) -> Decision:
        """A decision on scores (no `context`), equal to `Decision(...)` with the same
        fields. The dataclass `__init__` of a frozen class sets each field through
        `object.__setattr__`, a sixth of a one-prompt decision's cost; this fills the new
        instance's `__dict__` in one call instead (tests/semantic/test_one_prompt.py
        checks it sets every field)."""
        made = object.__new__(cls)
        made.__dict__.update(pick=pick, reason=reason, cleared=cleared, ranking=ranking,
                             context=(), thresholds=thresholds)
        return made


def to_catchall(catchall: str, reason: str) -> Decision:
    """The decision that serves the catchall without scores (`reason` says why)."""
    return Decision(pick=catchall, reason=reason)


def decide(
    names: Sequence[str],
    scores: np.ndarray | list[float],
    thresholds: Sequence[float],
    catchall: str,
    *,
    min_margin: float = 0.0,
    negative: np.ndarray | list[float] | None = None,
) -> Decision:
    """Pick the best-scoring instance that clears its own threshold, else the catchall.

    An instance whose closest negative example beats its closest positive one is
    not a match (it keeps its score for display): the operator said "not this".
    The margin rule sends near-ties to the catchall, because a prompt that is
    equally close to two specialists is usually about neither.

    `scores` (and `negative`) is one row: an array, or its Python floats (the
    one-prompt path). The ranking is `similarity.rank`'s: best first, ties in
    configuration order, non-finite scores left out.
    """
    values = scores if isinstance(scores, list) else np.asarray(scores, np.float64).tolist()
    if not len(names) == len(values) == len(thresholds):
        raise ValueError("names, scores and thresholds must have the same length")
    against = negative if negative is None or isinstance(negative, list) else negative.tolist()
    if against is not None and len(against) != len(values):
        raise ValueError("negative scores and scores must have the same length")
    return decide_row(names, values, thresholds, catchall, min_margin, against)


def decide_row(names: Sequence[str], values: list[float], thresholds: Sequence[float],
               catchall: str, min_margin: float, negative: list[float] | None) -> Decision:
    """`decide` on Python floats whose lengths are known to match (the one-prompt path:
    names, thresholds and scores all come from one set of references)."""
    # Python floats and one sort: for a handful of instances each numpy call would
    # cost more than the whole rule. A finite sum means every score is finite.
    kept = (sorted(range(len(values)), key=values.__getitem__, reverse=True)
            if math.isfinite(sum(values)) else order(values))
    ranking = tuple([(names[i], values[i]) for i in kept])
    if negative is None:
        cleared = [names[i] for i in kept if values[i] >= thresholds[i]]
    else:
        cleared = [names[i] for i in kept
                   if values[i] >= thresholds[i] and not negative[i] >= values[i]]
    used = tuple(thresholds)
    if not cleared:
        return Decision.scored(catchall, BELOW_THRESHOLD, (), ranking, used)
    if min_margin > 0 and len(kept) > 1 and cleared[0] == ranking[0][0] \
            and values[kept[0]] - values[kept[1]] < min_margin:
        return Decision.scored(catchall, LOW_MARGIN, (), ranking, used)
    return Decision.scored(cleared[0], MATCHED, tuple(cleared), ranking, used)
