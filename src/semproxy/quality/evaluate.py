"""Route labelled prompts exactly as the gateway would, in batches, and measure the result.

Decisions come from the route's `SemanticRouter.route_many`: the gateway's
own scorer and decision rule, with only the embedding batched. No LLM is
called. Unlike the gateway it does not fail open: an embedding error stops the
run, because figures computed from fallbacks would be meaningless.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from semproxy.quality.labelled import LabelledPrompt, check_labels
from semproxy.quality.metrics import Confusion
from semproxy.quality.progress import ProgressBar
from semproxy.quality.rate import Rate
from semproxy.semantic.decision import Decision
from semproxy.semantic.query import RoutingInput
from semproxy.semantic.router import SemanticRouter

CHUNK = 1024  # prompts per embedding call: big enough to amortise, small enough for a bar


async def route_batch(router: SemanticRouter, texts: Sequence[str]) -> list[Decision]:
    return await router.route_many([RoutingInput(text) for text in texts])


@dataclass(frozen=True, slots=True)
class Evaluation:
    route: str
    catchall: str
    names: tuple[str, ...]  # instances with examples, config order
    thresholds: dict[str, float]
    items: Sequence[LabelledPrompt]
    decisions: Sequence[Decision]
    seconds: float

    @property
    def expected(self) -> list[str]:
        return [i.instance or self.catchall for i in self.items]

    def confusion(self) -> Confusion:
        labels = [*self.names, self.catchall]
        return Confusion.from_names(labels, self.expected, [d.pick for d in self.decisions])

    def top1_accuracy(self) -> float | None:
        """In-scope prompts whose best-scoring instance is the right one, thresholds ignored."""
        pairs = [(e, d) for e, d in zip(self.expected, self.decisions, strict=True)
                 if e != self.catchall]
        if not pairs:
            return None
        return sum(bool(d.ranking) and d.ranking[0][0] == e for e, d in pairs) / len(pairs)

    def top1_rate(self) -> Rate:
        pairs = [(e, d) for e, d in zip(self.expected, self.decisions, strict=True)
                 if e != self.catchall]
        return Rate(sum(bool(d.ranking) and d.ranking[0][0] == e for e, d in pairs), len(pairs))

    def fallbacks(self) -> dict[str, float]:
        """Share of all prompts that fell back to the catchall, by reason."""
        reasons = Counter(d.reason for d in self.decisions if not d.matched)
        return {r: n / len(self.decisions) for r, n in sorted(reasons.items())}

    def summary(self) -> dict[str, Any]:
        c = self.confusion()
        return {
            "route": self.route, "prompts": len(self.items),
            "accuracy": c.accuracy(), "balanced_accuracy": c.balanced_accuracy(),
            "in_scope_accuracy": c.in_scope_accuracy(), "top1_accuracy": self.top1_accuracy(),
            "catchall_recall": c.catchall_recall(), "routed_precision": c.routed_precision(),
            "instances": {name: {"precision": c.precision(i), "recall": c.recall(i),
                                 "support": int(c.counts[i].sum())}
                          for i, name in enumerate(c.labels)},
            "confusion": {"labels": list(c.labels), "counts": c.counts.tolist()},
            "fallback_rate": self.fallbacks(),
            "rates": {name: r.as_dict() for name, r in c.rates().items()},
            "top1_rate": self.top1_rate().as_dict(),
            "warnings": c.warnings(),
            "decisions_per_second": len(self.items) / self.seconds if self.seconds else None,
        }


async def evaluate(router: SemanticRouter, items: Sequence[LabelledPrompt],
                   bar: ProgressBar | None = None) -> Evaluation:
    names = router.names
    check_labels(items, [*names, router.spec.catchall], "labelled data")
    await router.score_many(["warm up"])  # model load and reference build are not timed
    decisions: list[Decision] = []
    started = time.perf_counter()
    for start in range(0, len(items), CHUNK):
        chunk = items[start:start + CHUNK]
        decisions += await router.route_many([router.narrowed(i.routing_input())
                                              for i in chunk])
        if bar is not None:
            bar.advance(len(chunk))
    seconds = time.perf_counter() - started
    if bar is not None:
        bar.close()
    return Evaluation(router.route_id, router.spec.catchall, tuple(names),
                      dict(zip(names, router.thresholds, strict=True)), items, decisions, seconds)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:5.1f}%"


FIGURES = (("accuracy", "accuracy (catchall prompts included)"),
           ("balanced_accuracy", "balanced accuracy (mean recall)"),
           ("in_scope_accuracy", "in-scope accuracy"),
           ("catchall_recall", "out-of-scope recall (catchall)"),
           ("routed_precision", "routed precision"))


def rate_lines(c: Confusion, extra: tuple[tuple[str, Rate], ...] = ()) -> str:
    """One line per headline figure: value, successes/n and the 95% interval."""
    rates = c.rates()
    rows = [(label, rates[key].text()) for key, label in FIGURES]
    rows += [(label, rate.text()) for label, rate in extra]
    return "\n".join(f"  {label:<38} {text}" for label, text in rows)


def render(ev: Evaluation) -> str:
    s = ev.summary()
    c = ev.confusion()
    lines = [f"route {s['route']}: {s['prompts']} prompts, "
             f"{s['decisions_per_second'] or 0:,.0f} decisions/s, the route's own thresholds",
             rate_lines(c, (("top-1, thresholds ignored (in-scope)", ev.top1_rate()),)),
             "", f"{'instance':<24} {'precision':>9} {'recall':>8} {'support':>8}"]
    for name, row in s["instances"].items():
        lines.append(f"{name:<24} {_pct(row['precision']):>9} {_pct(row['recall']):>8} "
                     f"{row['support']:>8}")
    lines += ["", "confusion (rows: expected, columns: picked)", _matrix_text(c)]
    rates = ", ".join(f"{r} {_pct(v).strip()}" for r, v in s["fallback_rate"].items())
    lines.append(f"fallbacks: {rates or 'none'}")
    lines += [f"warning: {w}" for w in s["warnings"]]
    return "\n".join(lines)


# Instance names up to this long head their own column; longer ones are numbered,
# so a matrix of long names stays one screen wide and every name stays whole.
NAMED_COLUMNS = 12


def _matrix_text(c: Confusion) -> str:
    counts = np.asarray(c.counts).tolist()
    widest = max(len(n) for n in c.labels)
    if widest <= NAMED_COLUMNS:
        col = max(6, widest) + 1
        head = " " * (widest + 1) + "".join(f"{n:>{col}}" for n in c.labels)
        rows = [f"{name:<{widest + 1}}" + "".join(f"{v:>{col}}" for v in row)
                for name, row in zip(c.labels, counts, strict=True)]
        return "\n".join([head, *rows])
    col = max(6, *(len(str(v)) + 1 for row in counts for v in row))
    tag = len(str(len(c.labels)))
    head = " " * (tag + widest + 3) + "".join(f"{f'#{i}':>{col}}"
                                                for i in range(1, len(c.labels) + 1))
    rows = [f"#{i:<{tag}} {name:<{widest + 1}}" + "".join(f"{v:>{col}}" for v in row)
            for i, (name, row) in enumerate(zip(c.labels, counts, strict=True), start=1)]
    return "\n".join([head, *rows, "(columns numbered as the rows)"])
