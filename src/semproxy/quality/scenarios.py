"""Hand-written scenario sets: a route with five examples per instance and labelled prompts.

A scenario is a folder holding `config.yaml` (one semantic route) and
`prompts.jsonl` (the labelled format `semproxy eval` reads). Each line also
carries a `kind`, which `eval` ignores and the figures here break down by:

    clear         plainly belongs to its instance (or plainly to the catchall)
    near_miss     shares words or topic with another instance but belongs here
    out_of_scope  belongs to no specialist: the catchall should serve it

Every rate comes with its sample size and a 95% Wilson interval, because a
set of ~200 prompts moves by half a point per prompt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from semproxy.config.loader import load_file
from semproxy.config.runtime import GatewayConfig
from semproxy.quality.evaluate import Evaluation, evaluate
from semproxy.quality.labelled import LabelledDataError, LabelledPrompt, load_jsonl
from semproxy.server.routes import open_selector

KINDS = ("clear", "near_miss", "out_of_scope")
Z95 = 1.959964  # two-sided 95% normal quantile


@dataclass(frozen=True, slots=True)
class Rate:
    """k successes out of n, with the 95% Wilson score interval."""

    k: int
    n: int

    @property
    def value(self) -> float | None:
        return self.k / self.n if self.n else None

    def interval(self) -> tuple[float, float]:
        # Wilson rather than value +- 1.96 se: it stays inside [0, 1] and keeps
        # its coverage near 0% and 100%, where small sets often sit.
        if not self.n:
            return 0.0, 1.0
        p, n, z2 = self.k / self.n, self.n, Z95 * Z95
        centre = (p + z2 / (2 * n)) / (1 + z2 / n)
        half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
        return max(0.0, centre - half), min(1.0, centre + half)

    def text(self) -> str:
        if not self.n:
            return "n/a (n=0)"
        low, high = self.interval()
        return f"{100 * self.k / self.n:5.1f}% [{100 * low:4.1f}, {100 * high:5.1f}] n={self.n}"


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    config: GatewayConfig
    route: str
    items: list[LabelledPrompt]
    kinds: list[str]


def load_scenario(folder: str | Path) -> Scenario:
    """The scenario in `folder`; its config must hold exactly one route."""
    path = Path(folder)
    config = load_file(path / "config.yaml")
    if len(config.routes) != 1:
        raise LabelledDataError(f"{path / 'config.yaml'}: a scenario has exactly one route")
    data = path / "prompts.jsonl"
    items = load_jsonl(data)
    kinds = [orjson.loads(line).get("kind", "clear")
             for line in data.read_text(encoding="utf-8").splitlines() if line.strip()]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise LabelledDataError(f"{data}: unknown kind {', '.join(unknown)}")
    return Scenario(path.name, config, config.routes[0].id, items, kinds)


def find_scenarios(root: str | Path) -> list[Path]:
    """Every folder under `root` that holds a scenario, sorted by name."""
    return sorted(p.parent for p in Path(root).glob("*/config.yaml")
                  if (p.parent / "prompts.jsonl").exists())


async def evaluate_scenario(scenario: Scenario) -> Evaluation:
    async with open_selector(scenario.config, scenario.route) as selector:
        return await evaluate(selector, scenario.items)


@dataclass(frozen=True, slots=True)
class ScenarioFigures:
    name: str
    accuracy: Rate
    in_scope: Rate  # prompts meant for a specialist that reached it
    top1: Rate  # the same, thresholds ignored
    catchall_recall: Rate
    by_kind: dict[str, Rate]


def figures(name: str, ev: Evaluation, kinds: Sequence[str]) -> ScenarioFigures:
    right = [e == d.pick for e, d in zip(ev.expected, ev.decisions, strict=True)]
    in_scope = [i for i, e in enumerate(ev.expected) if e != ev.catchall]
    top1 = [bool(ev.decisions[i].ranking) and ev.decisions[i].ranking[0][0] == ev.expected[i]
            for i in in_scope]
    catchall = [r for r, e in zip(right, ev.expected, strict=True) if e == ev.catchall]

    def rate(flags: Sequence[bool]) -> Rate:
        return Rate(sum(flags), len(flags))

    return ScenarioFigures(
        name, rate(right), rate([right[i] for i in in_scope]), rate(top1), rate(catchall),
        {kind: rate([r for r, k in zip(right, kinds, strict=True) if k == kind])
         for kind in KINDS})


def render_figures(f: ScenarioFigures) -> str:
    rows = [("accuracy", f.accuracy), ("in-scope", f.in_scope),
            ("top-1, no threshold", f.top1), ("catchall recall", f.catchall_recall),
            *((f"kind {kind}", f.by_kind[kind]) for kind in KINDS)]
    return "\n".join([f.name, *(f"  {label:<22}{rate.text()}" for label, rate in rows)])
