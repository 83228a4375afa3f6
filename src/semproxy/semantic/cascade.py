"""`model: accurate`: the fast model decides clear prompts, the strong one re-scores the rest.

A prompt is *ambiguous* under the fast model when its best instance leads
the runner-up by less than `margin`, or when the best score lies within
`near_threshold` of that instance's threshold: those are the prompts a
small change of score would route elsewhere. On CLINC150 (k=16) about 40%
of the prompts are ambiguous at the defaults, and they hold most of the fast
model's mistakes, so re-scoring them gets the strong model's in-scope
accuracy at 40% of its cost (docs/en/routing-quality.md).

Each stage has its own reference vectors and thresholds (cosine scales
differ between models); the stage that decides supplies both. When the
strong worker's queue is full, or the strong model fails or is not loaded
yet, the fast scores decide: the outcome says which (`Stage`), so the
caller can count it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from semproxy.errors import EmbeddingError
from semproxy.semantic.scorer import References

Stage = Literal["fast", "strong", "shed", "strong_unavailable"]
# The stages that decide as the route asks: a turn decided otherwise (the strong
# stage shed it, failed or was not ready) holds the fast model's guess, which a
# repeat of the prompt must not inherit.
COMPLETE_STAGES: frozenset[Stage] = frozenset({"fast", "strong"})
# Whether the strong stage can decide: its references are built ("ready"), are
# being built ("loading"), or the last build failed ("failed").
StrongState = Literal["ready", "loading", "failed"]
# References, scores, negatives, and each row's score against the shipped follow-ups
# (None off conversations).
Turned = tuple[References, np.ndarray, np.ndarray | None, np.ndarray | None]

# Measured on CLINC150 (docs/en/routing-quality.md, "Accurate mode"): at these
# values about 40% of prompts are re-scored and the cascade routes within half a
# point of the strong model alone; smaller values re-score less and lose more.
DEFAULT_MARGIN = 0.10
DEFAULT_NEAR_THRESHOLD = 0.05


class Scorer(Protocol):
    """What `semantic.scorer.PromptScorer` offers (and the cascade needs)."""

    @property
    def current(self) -> References | None: ...

    async def references(self) -> References: ...

    async def score_turns(self, texts: Sequence[str]) -> Turned: ...


@dataclass(frozen=True, slots=True)
class CascadeRule:
    margin: float = DEFAULT_MARGIN
    near_threshold: float = DEFAULT_NEAR_THRESHOLD

    def ambiguous(self, scores: np.ndarray, thresholds: Sequence[float]) -> np.ndarray:
        """Which rows of (n_prompts, n_instances) `scores` the strong model should re-score."""
        rows = np.atleast_2d(scores)
        if rows.shape[1] < 2:
            second = np.full(len(rows), -np.inf)
        else:
            second = np.partition(rows, -2, axis=1)[:, -2]
        best_at = rows.argmax(axis=1)
        best = rows[np.arange(len(rows)), best_at]
        limits = np.asarray(thresholds, dtype=np.float64)[best_at]
        return np.asarray((best - second < self.margin)
                          | (np.abs(best - limits) < self.near_threshold))


class CascadeScorer:
    """Two scorers over the same instances, fast first; see the module docstring.

    `strong` embeds through the strong worker (one thread, bounded queue): a
    full queue raises EmbeddingError with reason "strong_shed".
    """

    def __init__(self, fast: Scorer, strong: Scorer, rule: CascadeRule = CascadeRule()) -> None:
        self.fast = fast
        self.strong = strong
        self.rule = rule
        self._warming: asyncio.Future[References] | None = None
        self._failed = False  # a build of the strong references has failed

    @property
    def current(self) -> References | None:
        """The fast stage's references: what a remembered decision is checked against."""
        return self.fast.current

    async def references(self) -> References:
        refs = await self.fast.references()
        self._warm_strong()
        return refs

    async def load(self) -> References:
        """Both stages' references, built now: what a gateway waits for before it serves.

        The fast stage's errors are raised; the strong stage's are not (the route
        then serves on the fast model, and `strong_state` says "failed").
        """
        refs = await self.fast.references()
        self._warm_strong()
        if self._warming is not None:
            await asyncio.wait([self._warming])
        return refs

    @property
    def strong_state(self) -> StrongState:
        """"failed" from the first failed build until one succeeds (retries included),
        so a health check does not flap while a broken model is retried."""
        if self.strong.current is not None:
            return "ready"
        return "failed" if self._failed else "loading"

    def _warm_strong(self) -> None:
        """Build the strong references in the background (a failure is retried later)."""
        if self.strong.current is None and (self._warming is None or self._warming.done()):
            self._warming = asyncio.ensure_future(self.strong.references())
            self._warming.add_done_callback(self._built)

    def _built(self, task: asyncio.Future[References]) -> None:
        """Note a failed background build (retrieving its exception; a later prompt retries)."""
        if task.cancelled() or task.exception() is not None:
            self._failed = True

    async def score_turn(self, text: str) -> tuple[Turned, Stage]:
        """One prompt (the gateway): `(n=1, n_instances)` scores, negatives and follow-up
        score from the stage that decided, and that stage."""
        fast = await self.fast.score_turns((text,))
        refs, scores = fast[0], fast[1]
        if not self.rule.ambiguous(scores, refs.thresholds)[0]:
            return fast, "fast"
        if self.strong.current is None:
            self._warm_strong()
            return fast, "strong_unavailable"
        try:
            return await self.strong.score_turns((text,)), "strong"
        except EmbeddingError as exc:
            return fast, "shed" if exc.reason == "strong_shed" else "strong_unavailable"

    async def score_turns(self, texts: Sequence[str]) -> tuple[Turned, list[Stage]]:
        """Offline scoring (eval, calibrate): the ambiguous rows re-scored in one batch.

        Rows decided by the strong stage carry its scores (and follow-up scores);
        `stages` says which. Thresholds differ by stage, so callers decide row by
        row with the references of that row's stage: `refs_for(stage)`.
        """
        refs, scores, negative, generic = await self.fast.score_turns(texts)
        stages: list[Stage] = ["fast"] * len(texts)
        redo = np.flatnonzero(self.rule.ambiguous(scores, refs.thresholds)).tolist()
        if redo:
            _, strong_scores, strong_negative, strong_generic = await self.strong.score_turns(
                [texts[i] for i in redo])
            scores = scores.copy()
            scores[redo] = strong_scores
            negative = _patched(negative, strong_negative, redo)
            # A stage without follow-ups leaves its rows unchecked (NaN), never the fast
            # model's follow-up score next to the strong model's scores.
            generic = _patched(generic, strong_generic, redo, np.nan)
            for i in redo:
                stages[i] = "strong"
        return (refs, scores, negative, generic), stages

    def refs_for(self, stage: Stage) -> References | None:
        return self.strong.current if stage == "strong" else self.fast.current


def _patched(rows: np.ndarray | None, strong: np.ndarray | None, redo: list[int],
             missing: float | None = None) -> np.ndarray | None:
    """`rows` with the re-scored ones replaced by the strong stage's values (or by
    `missing` when that stage has none; None: kept)."""
    if rows is None or (strong is None and missing is None):
        return rows
    rows = rows.astype(np.float64) if missing is not None else rows.copy()
    rows[redo] = strong if strong is not None else missing
    return rows
