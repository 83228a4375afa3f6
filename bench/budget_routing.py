"""Budget-aware routing on labelled prompts: what moves at each tier, and what stays.

For each labelled set, the route's decisions come from `semproxy eval`'s own
path (quality/evaluate.py: the gateway's scorer and decision rule, batched);
the budget rule (governance/tiers.py `budget_pick`) then reads every decision
whose pick is a dear instance, at each keep margin. Reported per margin:

- moved: the share of the dear instance's picks that go to a cheaper one;
- strongest kept: of the dear instance's strongest matches (the top quarter of
  its picks by strength, score minus threshold), the share that stay;
- right kept: of the dear picks that were right (the label is the dear
  instance), the share that stay; wrong moved: of the dear picks that were
  wrong, the share that move (the rule should shed mistakes first).

Every share with n and a 95% Wilson interval. Margins are fixed before the
sets are read (0.02 to 0.20); nothing is tuned here.

Sets: tests/quality/data/cost_routing (strong is dear: 2.5 / 10 per million;
cheap and default 0.15 / 0.6), and CLINC150 val (../shared/data) routed by
domain with `threshold: auto`, banking and credit_cards dear.

    PYTHONPATH=src python bench/budget_routing.py [--clinc PATH] [--markdown]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from semproxy.config.loader import load_data, load_file  # noqa: E402
from semproxy.governance.tiers import TierPolicy, blended, budget_pick  # noqa: E402
from semproxy.quality import clinc150  # noqa: E402
from semproxy.quality.evaluate import Evaluation, evaluate  # noqa: E402
from semproxy.quality.labelled import LabelledPrompt, load_jsonl  # noqa: E402
from semproxy.quality.rate import Rate  # noqa: E402
from semproxy.runtime.compile import router_for  # noqa: E402

MARGINS = (0.02, 0.05, 0.10, 0.15, 0.20)
DEAR = (2.5, 10.0)
CHEAP = (0.15, 0.6)
COST_SET = ROOT / "tests/quality/data/cost_routing"
CLINC = ROOT.parent / "shared/data/clinc150_train_val.json"
CLINC_DEAR = ("banking", "credit_cards")


@dataclass(frozen=True)
class Row:
    margin: float
    picks: int
    moved: Rate
    strongest_kept: Rate
    right_kept: Rate
    wrong_moved: Rate


async def decisions(config: dict[str, Any], items: list[LabelledPrompt]) -> Evaluation:
    gateway = load_data(config, env={})
    route = gateway.routes[0].id
    async with router_for(gateway, route) as router:
        await router.references()
        return await evaluate(router, items)


def priced(config: dict[str, Any], dear: tuple[str, ...]) -> TierPolicy:
    instances = config["routes"][0]["plugins"]["ai-proxy-multi"]["instances"]
    prices = {i["name"]: blended(*(DEAR if i["name"] in dear else CHEAP)) for i in instances}
    return TierPolicy(MARGINS, prices)


def rows(ev: Evaluation, policy: TierPolicy, dear: tuple[str, ...]) -> list[Row]:
    thresholds = ev.thresholds
    picked = [(d, item) for d, item in zip(ev.decisions, ev.items, strict=True)
              if d.matched and d.pick in dear]
    strength = {id(d): dict(d.ranking)[d.pick] - thresholds[d.pick] for d, _ in picked}
    ordered = sorted(picked, key=lambda p: -strength[id(p[0])])
    strongest = {id(d) for d, _ in ordered[:max(1, len(ordered) // 4)]}
    out = []
    for tier, margin in enumerate(MARGINS, start=1):
        moved = {id(d) for d, _ in picked
                 if (c := budget_pick(d.pick, d.ranking, thresholds, d.cleared, ev.catchall,
                                      tier, policy)) is not None and c.moved}
        right = [d for d, item in picked if item.instance == d.pick]
        wrong = [d for d, item in picked if item.instance != d.pick]
        out.append(Row(margin, len(picked), Rate(len(moved), len(picked)),
                       Rate(sum(id(d) not in moved for d, _ in ordered
                                if id(d) in strongest), len(strongest)),
                       Rate(sum(id(d) not in moved for d in right), len(right)),
                       Rate(sum(id(d) in moved for d in wrong), len(wrong))))
    return out


def cost_set() -> tuple[dict[str, Any], list[LabelledPrompt]]:
    config = load_file(COST_SET / "config.yaml").document
    return copy.deepcopy(dict(config)), load_jsonl(COST_SET / "prompts.jsonl")


def clinc_set(path: Path) -> tuple[dict[str, Any], list[LabelledPrompt]]:
    dataset = clinc150.load_dataset(path)
    config = clinc150.route_config(dataset, 20, 0, clinc150.DEFAULT_AGGREGATION, True,
                                   clinc150.DEFAULT_NEAREST)
    config["routes"][0]["plugins"]["ai-proxy-multi"]["balancer"]["threshold"] = "auto"
    items = [LabelledPrompt(text, domain) for text, _, domain in dataset["splits"]["val"]]
    items += [LabelledPrompt(text, None) for text in dataset["oos"]["val"]]
    return config, items


def table(name: str, found: list[Row]) -> str:
    lines = [f"### {name}", "",
             f"{found[0].picks} prompts picked by a dear instance (the base of `moved` and "
             "`strongest kept`).", "",
             "| keep margin | moved | strongest quarter kept | right picks kept "
             "| wrong picks moved |", "|---:|---|---|---|---|"]
    lines += [f"| {r.margin:.2f} | {r.moved.text()} | {r.strongest_kept.text()} "
              f"| {r.right_kept.text()} | {r.wrong_moved.text()} |" for r in found]
    return "\n".join(lines)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clinc", type=Path, default=CLINC)
    args = ap.parse_args()
    config, items = cost_set()
    ev = await decisions(config, items)
    print(table("cost_routing (strong is dear)", rows(ev, priced(config, ("strong",)),
                                                      ("strong",))), "\n")
    if args.clinc.is_file():
        config, items = clinc_set(args.clinc)
        ev = await decisions(config, items)
        print(table("CLINC150 val (banking and credit_cards are dear)",
                    rows(ev, priced(config, CLINC_DEAR), CLINC_DEAR)))
    else:
        print(f"CLINC150: skipped ({args.clinc} not found)")


if __name__ == "__main__":
    asyncio.run(main())
