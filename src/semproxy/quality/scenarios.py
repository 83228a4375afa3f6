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

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from semproxy.config.loader import load_file
from semproxy.config.spec import GatewayConfig
from semproxy.quality.evaluate import Evaluation, evaluate
from semproxy.quality.labelled import LabelledDataError, LabelledPrompt, load_jsonl
from semproxy.quality.rate import Rate
from semproxy.runtime.compile import router_for

KINDS = ("clear", "near_miss", "out_of_scope")


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
    async with router_for(scenario.config, scenario.route) as router:
        return await evaluate(router, scenario.items)


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
    catchall = [r for r, e in zip(right, ev.expected, strict=True) if e == ev.catchall]

    def rate(flags: Sequence[bool]) -> Rate:
        return Rate(sum(flags), len(flags))

    return ScenarioFigures(
        name, rate(right), rate([right[i] for i in in_scope]), ev.top1_rate(), rate(catchall),
        {kind: rate([r for r, k in zip(right, kinds, strict=True) if k == kind])
         for kind in KINDS})


def render_figures(f: ScenarioFigures) -> str:
    rows = [("accuracy", f.accuracy), ("in-scope", f.in_scope),
            ("top-1, no threshold", f.top1), ("catchall recall", f.catchall_recall),
            *((f"kind {kind}", f.by_kind[kind]) for kind in KINDS)]
    return "\n".join([f.name, *(f"  {label:<22}{rate.text()}" for label, rate in rows)])
