"""The semantic decision: given each instance's similarity, which instance serves.

Pure: no I/O, no embedding. `semantic/scorer.py` produces the scores; this
module applies thresholds, the margin rule and negative examples, and explains
its choice with a machine-readable reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from semproxy.semantic.similarity import format_scores, margin, rank

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


def to_catchall(catchall: str, reason: str) -> Decision:
    """The decision that serves the catchall without scores (`reason` says why)."""
    return Decision(pick=catchall, reason=reason)


def decide(
    names: Sequence[str],
    scores: np.ndarray,
    thresholds: Sequence[float],
    catchall: str,
    *,
    min_margin: float = 0.0,
    negative: np.ndarray | None = None,
) -> Decision:
    """Pick the best-scoring instance that clears its own threshold, else the catchall.

    An instance whose closest negative example beats its closest positive one is
    not a match (it keeps its score for display): the operator said "not this".
    The margin rule sends near-ties to the catchall, because a prompt that is
    equally close to two specialists is usually about neither.
    """
    cleared, ranking = rank(names, scores, thresholds)
    used = tuple(thresholds)
    if negative is not None:
        vetoed = {n for n, neg, pos in zip(names, negative, scores, strict=True) if neg >= pos}
        cleared = [(n, sc) for n, sc in cleared if n not in vetoed]
    ranked = tuple(ranking)
    if not cleared:
        return Decision(pick=catchall, reason=BELOW_THRESHOLD, ranking=ranked, thresholds=used)
    if min_margin > 0 and margin(ranking) < min_margin and cleared[0][0] == ranking[0][0]:
        return Decision(pick=catchall, reason=LOW_MARGIN, ranking=ranked, thresholds=used)
    return Decision(pick=cleared[0][0], reason=MATCHED,
                    cleared=tuple(n for n, _ in cleared), ranking=ranked, thresholds=used)
