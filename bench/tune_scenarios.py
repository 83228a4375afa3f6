"""Does `semproxy tune` help on small labelled sets? Measured on the three scenario sets.

    PYTHONPATH=src python bench/tune_scenarios.py [--count 50] [--folds 5]

Each scenario's labelled prompts are dealt into two halves (stratified by label,
by a hash of the text, as `calibrate` deals folds). `tune` picks examples on one
half, a balancer threshold is fitted on the same half, and the route is judged on
the other half; then the halves swap, so every prompt is judged once. Arms:

    none        no examples added (threshold fitted all the same)
    greedy      every pick the greedy search proposes (what `--write` added before)
    supported   only the picks cross-validation on the tuning half supports

Accuracy counts every prompt (catchall ones included); 95% Wilson intervals.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from semproxy.config.loader import load_data
from semproxy.embeddings.factory import EmbedderPool
from semproxy.transport.http import AiohttpTransport
from semproxy.quality import calibrate as cal
from semproxy.quality.evaluate import evaluate
from semproxy.quality.labelled import LabelledPrompt
from semproxy.quality.rate import Rate
from semproxy.quality.scenarios import Scenario, find_scenarios, load_scenario
from semproxy.quality.tune import Proposal, propose_examples
from semproxy.quality.tuning import score_all
from semproxy.semantic.router import router_for

ROOT = Path(__file__).resolve().parents[1] / "tests/quality/data"
ARMS = ("none", "greedy", "supported")


def halves(items: Sequence[LabelledPrompt]) -> np.ndarray:
    names = sorted({i.instance or "" for i in items})
    return cal.folds([i.text for i in items], [names.index(i.instance or "") for i in items], 2)


def with_examples(document: dict[str, Any], added: dict[str, list[str]]) -> dict[str, Any]:
    out = copy.deepcopy(document)
    for route in out["routes"]:
        for inst in route["plugins"]["ai-proxy-multi"]["instances"]:
            if inst["name"] in added:
                inst["examples"] = [*inst.get("examples", []), *added[inst["name"]]][:64]
    return out


def with_threshold(document: dict[str, Any], threshold: float) -> dict[str, Any]:
    out = copy.deepcopy(document)
    for route in out["routes"]:
        multi = route["plugins"]["ai-proxy-multi"]
        multi["balancer"]["threshold"] = threshold
        for inst in multi["instances"]:
            inst.pop("threshold", None)
    return out


def picks_of(found: Proposal, arm: str) -> dict[str, list[str]]:
    if arm == "none":
        return {}
    if arm == "greedy":
        return found.by_instance(everything=True) if hasattr(found, "written") \
            else found.by_instance()
    return found.by_instance()


async def judged(scenario: Scenario, document: dict[str, Any], tune_on: list[LabelledPrompt],
                 judge_on: list[LabelledPrompt]) -> tuple[int, int]:
    """Fit a balancer threshold on `tune_on`, then count right picks on `judge_on`."""
    config = load_data(document, {})
    async with router_for(config, scenario.route) as router:
        scored = await score_all(router, tune_on)
        fitted = cal.fit(scored.labels, scored.scores, scored.expected,
                         cal.objective("balanced"), router.spec.min_margin, scored.negative)
    config = load_data(with_threshold(document, fitted.threshold), {})
    async with router_for(config, scenario.route) as router:
        ev = await evaluate(router, judge_on)
    right = sum(e == d.pick for e, d in zip(ev.expected, ev.decisions, strict=True))
    return right, len(judge_on)


async def run(count: int, folds: int) -> None:
    totals = {arm: [0, 0] for arm in ARMS}
    for folder in find_scenarios(ROOT):
        scenario = load_scenario(folder)
        route = scenario.config.routes[0]
        assert route.semantic is not None
        dealt = halves(scenario.items)
        clients = AiohttpTransport()
        embedder = EmbedderPool(clients).get(route.semantic.embeddings)
        for tune_half in (0, 1):
            tune_on = [i for i, h in zip(scenario.items, dealt, strict=True) if h == tune_half]
            judge_on = [i for i, h in zip(scenario.items, dealt, strict=True) if h != tune_half]
            found = await propose_examples(route, embedder, tune_on, count, folds)
            shown = getattr(found, "written", "-")
            print(f"{scenario.name} half {tune_half}: {len(found.picks)} picks, "
                  f"{shown} supported, tuned on {len(tune_on)}, judged on {len(judge_on)}")
            for arm in ARMS:
                document = with_examples(dict(scenario.config.document), picks_of(found, arm))
                right, n = await judged(scenario, document, tune_on, judge_on)
                totals[arm][0] += right
                totals[arm][1] += n
                print(f"  {arm:<10} {Rate(right, n).text()}")
        await clients.aclose()
    print("\npooled over the three sets, both halves:")
    for arm in ARMS:
        print(f"  {arm:<10} {Rate(*totals[arm]).text()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(run(args.count, args.folds))


if __name__ == "__main__":
    main()
