"""Routing quality and decision time of `model: fast` and `model: accurate` with
`threshold: auto`, on CLINC150 (10 domains, k examples per domain from train,
the whole val split as the labelled prompts).

With `threshold: auto` nothing is fitted on the labelled prompts (thresholds
come from the examples and the shipped background set), so every val prompt
is held out. Figures are pooled over the seeds, with Wilson 95% intervals;
"test-like overall" weights in-scope and out-of-scope as CLINC's test split
does (4500 : 1000).

    .venv/bin/python bench/accurate_quality.py \
        --clinc150 oos-eval/data/data_full.json --seeds 0 1 2

`--background-weight W` sets the route's `balancer.background_weight`;
`--split test` judges CLINC's test split instead (data_full.json only).

Decision time: `--timing N` routes N val prompts one at a time through the
selector's per-request path (first sight of each prompt, so no decision cache),
after the references are built, and reports the mean and p99 per prompt
(the routers of `router_for` keep a decision cache, as the gateway's do).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import time
from pathlib import Path
from typing import Any

from semproxy.config.loader import load_data
from semproxy.quality.clinc150 import CATCHALL, load_dataset, route_config
from semproxy.quality.evaluate import evaluate
from semproxy.quality.labelled import LabelledPrompt
from semproxy.runtime.compile import router_for
from semproxy.semantic.query import RoutingInput

TEST_IN, TEST_OOS = 4500, 1000  # CLINC150 test split, in-scope and out-of-scope prompts


def wilson(hits: int, n: int) -> tuple[float, float]:
    """95% Wilson score interval of a proportion."""
    if n == 0:
        return (math.nan, math.nan)
    p, z = hits / n, 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def config(dataset: dict[str, Any], k: int, seed: int, model: str,
           background_weight: float = 0.0) -> dict[str, Any]:
    data = route_config(dataset, k, seed, "max_local_centroid", center=True, nearest=4,
                        model=model, background_weight=background_weight)
    data["routes"][0]["plugins"]["ai-proxy-multi"]["balancer"]["threshold"] = "auto"
    return data


def items(dataset: dict[str, Any], split: str = "val") -> list[LabelledPrompt]:
    rows = [LabelledPrompt(text, domain) for text, _, domain in dataset["splits"][split]]
    return rows + [LabelledPrompt(text, None) for text in dataset["oos"][split]]


async def one_run(dataset: dict[str, Any], k: int, seed: int, model: str,
                  timing: int, background_weight: float = 0.0, split: str = "val"
                  ) -> dict[str, Any]:
    labelled = items(dataset, split)
    async with router_for(load_data(config(dataset, k, seed, model, background_weight), env={}),
                          "clinc150") as selector:
        ev = await evaluate(selector, labelled)
        right_in = sum(d.pick == i.instance for i, d in zip(labelled, ev.decisions, strict=True)
                       if i.instance is not None)
        right_oos = sum(d.pick == CATCHALL for i, d in zip(labelled, ev.decisions, strict=True)
                        if i.instance is None)
        out = {"in": (right_in, sum(i.instance is not None for i in labelled)),
               "oos": (right_oos, sum(i.instance is None for i in labelled))}
        if timing:
            out["times"] = await decision_times(selector, [i.text for i in labelled], timing)
            out["stages"] = dict(selector.stages)
            out["cpu"] = selector.cpu_per_decision
        return out


async def decision_times(selector: Any, texts: list[str], count: int) -> list[float]:
    if selector.cascade is not None:  # the strong references, built in the background
        await selector.cascade.strong.references()
    times = []
    cpu = time.process_time()
    for text in texts[::max(1, len(texts) // count)][:count]:
        started = time.perf_counter()
        await selector.route(RoutingInput(text + " "))  # not in the decision cache
        times.append(time.perf_counter() - started)
    # CPU time of the process (both threads) per decision: what the decision costs
    # when the machine is not shared; wall time above includes waiting for a core.
    selector.cpu_per_decision = (time.process_time() - cpu) / len(times)
    return times


def report(model: str, runs: list[dict[str, Any]]) -> None:
    hin, nin = (sum(r["in"][j] for r in runs) for j in (0, 1))
    hoos, noos = (sum(r["oos"][j] for r in runs) for j in (0, 1))
    lo_in, hi_in = wilson(hin, nin)
    lo_oos, hi_oos = wilson(hoos, noos)
    acc_in, rec_oos = hin / nin, hoos / noos
    overall = (hin + hoos) / (nin + noos)
    test_like = (TEST_IN * acc_in + TEST_OOS * rec_oos) / (TEST_IN + TEST_OOS)
    print(f"{model}: in-scope {acc_in:.1%} [{lo_in:.1%}, {hi_in:.1%}] (n={nin}), "
          f"out-of-scope recall {rec_oos:.1%} [{lo_oos:.1%}, {hi_oos:.1%}] (n={noos}), "
          f"overall {overall:.1%} (val proportions), {test_like:.1%} (test proportions)")
    for seed, r in enumerate(runs):
        print(f"  run {seed}: in-scope {r['in'][0] / r['in'][1]:.1%}, "
              f"out-of-scope {r['oos'][0] / r['oos'][1]:.1%}")
    times = sorted(t for r in runs for t in r.get("times", []))
    if times:
        stages = {k: sum(r["stages"].get(k, 0) for r in runs) for k in runs[0]["stages"]}
        print(f"  decision time on new prompts: mean {sum(times) / len(times) * 1e3:.2f} ms, "
              f"p99 {times[int(0.99 * (len(times) - 1))] * 1e3:.2f} ms (n={len(times)}); "
              f"stages {stages}; CPU per decision "
              f"{sum(r['cpu'] for r in runs) / len(runs) * 1e3:.2f} ms")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clinc150", required=True, type=Path)
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--models", nargs="+", default=["fast", "accurate"])
    parser.add_argument("--timing", type=int, default=0, help="prompts timed per run")
    parser.add_argument("--background-weight", type=float, default=0.0,
                        help="the route's balancer.background_weight (0: off)")
    parser.add_argument("--split", default="val", choices=["val", "test"],
                        help="labelled prompts: val, or test (data_full.json only)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # one "no instance cleared" line per fallback
    dataset = load_dataset(args.clinc150)
    for model in args.models:
        runs = [await one_run(dataset, args.k, seed, model, args.timing, args.background_weight,
                              args.split) for seed in args.seeds]
        report(model, runs)


if __name__ == "__main__":
    asyncio.run(main())
