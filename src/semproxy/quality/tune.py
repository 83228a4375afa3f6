"""`semproxy tune`: propose labelled prompts to add as examples, and what they are worth.

Everything is embedded once with the route's own embedder; the choice runs on
vectors (`quality.examples`). The expected gain is measured by k-fold
cross-validation: for each fold, prompts are chosen from the other folds only
and the route with them is judged on the fold, so the figure is what adding
examples chosen this way does for prompts that were not chosen from. The
proposal itself is then chosen from all the labelled prompts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from semproxy.config.spec import RouteSpec
from semproxy.embeddings import Embedder
from semproxy.quality import calibrate as cal
from semproxy.quality.examples import Pick, Scoring, choose, score_route
from semproxy.quality.labelled import LabelledDataError, LabelledPrompt, check_labels
from semproxy.quality.rate import Z95, Rate


@dataclass(frozen=True, slots=True)
class Expected:
    """In-scope top-1 accuracy before and after, pooled over the cross-validation folds."""

    folds: int
    before: Rate
    after: Rate
    fixed: int  # prompts the added examples turned right
    broken: int  # and turned wrong

    @property
    def gain_interval(self) -> tuple[float, float]:
        """95% normal interval of the paired difference (each prompt -1, 0 or +1)."""
        n = max(1, self.before.n)
        mean = (self.fixed - self.broken) / n
        var = ((self.fixed + self.broken) / n - mean * mean) / n
        half = Z95 * math.sqrt(max(var, 0.0))
        return mean - half, mean + half


@dataclass(frozen=True, slots=True)
class Proposal:
    names: tuple[str, ...]
    picks: tuple[Pick, ...]
    texts: tuple[str, ...]  # the picked prompts' text, in pick order
    misrouted: tuple[bool, ...]  # was the prompt routed wrong before any was added
    expected: Expected | None

    def by_instance(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for pick, text in zip(self.picks, self.texts, strict=True):
            out.setdefault(self.names[pick.instance], []).append(text)
        return out


def scoring_of(route: RouteSpec) -> Scoring:
    spec = route.semantic
    if spec is None:
        raise LabelledDataError(f"route {route.id!r} does not use semantic balancing")
    return Scoring(spec.aggregation, spec.k, spec.center)


def _top1(examples: Sequence[np.ndarray], prompts: np.ndarray, labels: np.ndarray,
          how: Scoring) -> np.ndarray:
    right: np.ndarray = score_route(examples, prompts, how).argmax(axis=1) == labels
    return right


def _with(examples: Sequence[np.ndarray], prompts: np.ndarray, picks: Sequence[Pick]
          ) -> list[np.ndarray]:
    return [np.vstack([e, *(prompts[p.row][None, :] for p in picks if p.instance == i)])
            for i, e in enumerate(examples)]


def expected_gain(examples: Sequence[np.ndarray], prompts: np.ndarray, labels: np.ndarray,
                  texts: Sequence[str], blocked: set[int], count: int, folds: int,
                  how: Scoring) -> Expected:
    dealt = cal.folds(texts, labels.tolist(), folds)
    right_before = right_after = n = fixed = broken = 0
    for fold in range(folds):
        train = np.flatnonzero(dealt != fold)
        held = np.flatnonzero((dealt == fold) & (labels >= 0))
        if not len(held):
            continue
        local = {int(r): i for i, r in enumerate(train)}
        picks = choose(examples, prompts[train], labels[train], count, how,
                       blocked={local[r] for r in blocked if r in local})
        before = _top1(examples, prompts[held], labels[held], how)
        after = _top1(_with(examples, prompts[train], picks), prompts[held], labels[held], how)
        right_before += int(before.sum())
        right_after += int(after.sum())
        fixed += int((after & ~before).sum())
        broken += int((before & ~after).sum())
        n += len(held)
    return Expected(folds, Rate(right_before, n), Rate(right_after, n), fixed, broken)


async def propose_examples(route: RouteSpec, embedder: Embedder,
                           items: Sequence[LabelledPrompt], count: int, folds: int
                           ) -> Proposal:
    """The `count` prompts to add (fewer if none helps), with their CV-measured worth."""
    how = scoring_of(route)
    holders = [i for i in route.instances if i.examples]
    names = tuple(i.name for i in holders)
    catchall = route.semantic.catchall if route.semantic else ""
    check_labels(items, [*names, catchall], "labelled data")
    index = {name: i for i, name in enumerate(names)}
    labels = np.array([index.get(i.instance or "", -1) for i in items], dtype=np.intp)
    texts = [i.text for i in items]
    vectors = await embedder.embed([t for h in holders for t in h.examples] + texts)
    bounds = np.cumsum([0, *(len(h.examples) for h in holders)])
    examples = [vectors[bounds[i]:bounds[i + 1]] for i in range(len(holders))]
    prompts = vectors[bounds[-1]:]
    known = {t for h in holders for t in h.examples}
    seen: set[str] = set()
    blocked = set()
    for row, text in enumerate(texts):  # blanks, existing examples and repeats stay out
        if not text.strip() or text in known or text in seen:
            blocked.add(row)
        seen.add(text)
    expected = (expected_gain(examples, prompts, labels, texts, blocked, count, folds, how)
                if folds >= 2 else None)
    picks = choose(examples, prompts, labels, count, how, blocked=blocked)
    right = _top1(examples, prompts, labels, how)
    return Proposal(names, tuple(picks), tuple(texts[p.row] for p in picks),
                    tuple(not bool(right[p.row]) for p in picks), expected)


def render(proposal: Proposal, count: int) -> str:
    lines = [f"{len(proposal.picks)} of {count} requested prompts proposed as examples "
             "(greedy, most informative first):",
             f"  {'#':>3} {'instance':<20} {'gain':>5} {'was':<9} prompt"]
    for n, (pick, text, wrong) in enumerate(zip(proposal.picks, proposal.texts,
                                                proposal.misrouted, strict=True), start=1):
        lines.append(f"  {n:>3} {proposal.names[pick.instance]:<20} {pick.gain:>+5} "
                     f"{'misrouted' if wrong else 'right':<9} {text[:90]}")
    e = proposal.expected
    if e is not None:
        low, high = e.gain_interval
        lines += ["", f"expected effect, {e.folds}-fold cross-validation (examples chosen "
                  "without the prompts they are judged on), in-scope top-1 accuracy:",
                  f"  before {e.before.text()}",
                  f"  after  {e.after.text()}",
                  f"  gain   {100 * ((e.after.value or 0) - (e.before.value or 0)):+.1f} "
                  f"points (95% CI {100 * low:+.1f} to {100 * high:+.1f}); "
                  f"{e.fixed} prompts fixed, {e.broken} broken"]
    lines.append("gains count labelled prompts fixed minus broken when the example was "
                 "added; thresholds are not changed: run `semproxy calibrate` afterwards")
    return "\n".join(lines)
