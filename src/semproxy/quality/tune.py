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
    """In-scope top-1 accuracy before and after adding the first `count` picks, pooled
    over the cross-validation folds."""

    folds: int
    before: Rate
    after: Rate
    fixed: int  # prompts the added examples turned right
    broken: int  # and turned wrong
    count: int = 0  # picks added in each fold (fewer where its greedy found fewer)

    @property
    def gain_interval(self) -> tuple[float, float]:
        """95% normal interval of the paired difference (each prompt -1, 0 or +1)."""
        n = max(1, self.before.n)
        mean = (self.fixed - self.broken) / n
        var = ((self.fixed + self.broken) / n - mean * mean) / n
        half = Z95 * math.sqrt(max(var, 0.0))
        return mean - half, mean + half

    @property
    def is_trusted(self) -> bool:
        """The gain's 95% interval lies above zero."""
        return self.count > 0 and self.gain_interval[0] > 0

    def prompts_needed(self) -> int | None:
        """About how many labelled in-scope prompts would put this gain's 95% interval
        above zero (the interval narrows as 1/sqrt(n)); None without a measured gain."""
        low, high = self.gain_interval
        mean = (low + high) / 2
        if mean <= 0:
            return None
        return math.ceil(self.before.n * ((high - low) / 2 / mean) ** 2)


@dataclass(frozen=True, slots=True)
class Proposal:
    names: tuple[str, ...]
    picks: tuple[Pick, ...]  # every pick that gains on all the labelled prompts, best first
    texts: tuple[str, ...]  # the picked prompts' text, in pick order
    misrouted: tuple[bool, ...]  # was the prompt routed wrong before any was added
    expected: Expected | None  # the effect of adding all the picks (None: not estimated)
    # The effect after 0, 1, ... picks, and how many of the picks cross-validation
    # supports (`supported`): the ones `--write` adds.
    curve: tuple[Expected, ...] = ()
    written: int = 0

    def by_instance(self, everything: bool = False) -> dict[str, list[str]]:
        """The picks to write, by instance: those cross-validation supports, or all."""
        out: dict[str, list[str]] = {}
        chosen = list(zip(self.picks, self.texts, strict=True))
        for pick, text in chosen[:None if everything else self.written]:
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


def expected_curve(examples: Sequence[np.ndarray], prompts: np.ndarray, labels: np.ndarray,
                   texts: Sequence[str], blocked: set[int], count: int, folds: int,
                   how: Scoring) -> list[Expected]:
    """`Expected` after adding 0, 1, ... `count` picks: in each fold the picks are chosen
    from the other folds, in greedy order, and judged on the fold."""
    dealt = cal.folds(texts, labels.tolist(), folds)
    right_before = n = 0
    right = [0] * (count + 1)
    fixed = [0] * (count + 1)
    broken = [0] * (count + 1)
    for fold in range(folds):
        train = np.flatnonzero(dealt != fold)
        held = np.flatnonzero((dealt == fold) & (labels >= 0))
        if not len(held):
            continue
        local = {int(r): i for i, r in enumerate(train)}
        picks = choose(examples, prompts[train], labels[train], count, how,
                       blocked={local[r] for r in blocked if r in local})
        before = _top1(examples, prompts[held], labels[held], how)
        right_before += int(before.sum())
        n += len(held)
        for c in range(count + 1):
            after = before if c == 0 else _top1(_with(examples, prompts[train], picks[:c]),
                                                 prompts[held], labels[held], how)
            right[c] += int(after.sum())
            fixed[c] += int((after & ~before).sum())
            broken[c] += int((before & ~after).sum())
            if c >= len(picks):  # no more picks in this fold: later counts add nothing
                for rest in range(c + 1, count + 1):
                    right[rest] += int(after.sum())
                    fixed[rest] += int((after & ~before).sum())
                    broken[rest] += int((before & ~after).sum())
                break
    return [Expected(folds, Rate(right_before, n), Rate(right[c], n), fixed[c], broken[c], c)
            for c in range(count + 1)]


def supported(curve: Sequence[Expected]) -> Expected:
    """The count cross-validation supports: the one with the largest net gain (the
    fewest picks on a tie), if that gain's 95% interval lies above zero; else none."""
    best = max(curve, key=lambda e: (e.fixed - e.broken, -e.count))
    return best if best.is_trusted else curve[0]


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
    picks = choose(examples, prompts, labels, count, how, blocked=blocked)
    right = _top1(examples, prompts, labels, how)
    curve = (expected_curve(examples, prompts, labels, texts, blocked, count, folds, how)
             if folds >= 2 else [])
    # Without the estimate (--folds 0) nothing checks the picks: all of them are written.
    written = min(supported(curve).count, len(picks)) if curve else len(picks)
    return Proposal(names, tuple(picks), tuple(texts[p.row] for p in picks),
                    tuple(not bool(right[p.row]) for p in picks),
                    curve[len(picks)] if curve else None, tuple(curve), written)


def render(proposal: Proposal, count: int) -> str:
    lines = [f"{len(proposal.picks)} of {count} requested prompts proposed as examples "
             "(greedy, most informative first; only prompts that fix more labelled prompts "
             "than they break):",
             f"  {'#':>3} {'instance':<20} {'gain':>5} {'was':<9} prompt"]
    for n, (pick, text, wrong) in enumerate(zip(proposal.picks, proposal.texts,
                                                proposal.misrouted, strict=True), start=1):
        lines.append(f"  {n:>3} {proposal.names[pick.instance]:<20} {pick.gain:>+5} "
                     f"{'misrouted' if wrong else 'right':<9} {text[:90]}")
    e = proposal.expected
    if e is not None:
        lines += ["", f"expected effect, {e.folds}-fold cross-validation (examples chosen "
                  "without the prompts they are judged on), in-scope top-1 accuracy:",
                  *_effect(e)]
        lines += ["", *_support(proposal)]
    lines.append("gains count labelled prompts fixed minus broken when the example was "
                 "added; thresholds are not changed: run `semproxy calibrate` afterwards")
    return "\n".join(lines)


def _effect(e: Expected) -> list[str]:
    low, high = e.gain_interval
    return [f"  before {e.before.text()}",
            f"  after  {e.after.text()}",
            f"  gain   {100 * ((e.after.value or 0) - (e.before.value or 0)):+.1f} "
            f"points (95% CI {100 * low:+.1f} to {100 * high:+.1f}); "
            f"{e.fixed} prompts fixed, {e.broken} broken"]


def _support(proposal: Proposal) -> list[str]:
    """How many picks cross-validation supports, and how many labelled prompts would
    make the estimate trustworthy when it does not."""
    best = max(proposal.curve, key=lambda x: (x.fixed - x.broken, -x.count))
    n = best.before.n
    if proposal.written:
        first = "the first pick" if proposal.written == 1 else \
            f"the first {proposal.written} picks"
        return [f"cross-validation supports {first} (gain interval above zero): "
                "`--write` adds those"]
    lines = [f"cross-validation supports none of them: with {n} labelled in-scope prompts "
             "no count of picks gains with a 95% interval above zero, so `--write` adds "
             "nothing (--allow-unsupported adds them all)"]
    needed = best.prompts_needed() if best.count else None
    if needed is not None:
        lines.append(f"the best count ({best.count}: {best.fixed - best.broken:+d} prompts "
                     f"net) would need about {needed} labelled in-scope prompts for its "
                     "interval to clear zero")
    else:
        lines.append("no count of picks gained on prompts held out from the choice")
    return lines
