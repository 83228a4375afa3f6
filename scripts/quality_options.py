"""Measure each scoring option of semantic routing on CLINC150 and print a Markdown table.

    PYTHONPATH=src python scripts/quality_options.py oos-eval/data/data_full.json

For every variant: top-1 domain accuracy on the whole val split (no
threshold), then a balanced-objective threshold fitted on 70% of val and the
figures on the held-out 30% (the same split and search as `semproxy calibrate`).
CLINC150: Larson et al. 2019, CC BY 3.0.
"""

from __future__ import annotations

import asyncio
import random
import sys
from typing import Any

import numpy as np

from semproxy.config.loader import load_data
from semproxy.quality import calibrate as cal
from semproxy.quality.clinc150 import labelled_lines, load_dataset, route_config
from semproxy.quality.evaluate import evaluate
from semproxy.quality.labelled import parse_lines
from semproxy.quality.metrics import Confusion
from semproxy.semantic.router import router_for

VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("max", {"aggregation": "max"}),
    ("top_k_mean k=3", {"aggregation": "top_k_mean", "k": 3}),
    ("max_centroid", {"aggregation": "max_centroid"}),
    ("max + center", {"aggregation": "max", "center": True}),
    ("max_centroid + center", {"aggregation": "max_centroid", "center": True}),
    ("max_centroid + center, min_margin 0.02",
     {"aggregation": "max_centroid", "center": True, "min_margin": 0.02}),
    ("max_centroid + center, 16 oos negatives",
     {"aggregation": "max_centroid", "center": True, "negatives": 16}),
    ("max_local_centroid k=3 + center",
     {"aggregation": "max_local_centroid", "k": 3, "center": True}),
    ("max_local_centroid k=4 + center",
     {"aggregation": "max_local_centroid", "k": 4, "center": True}),
    ("max_local_centroid k=5 + center",
     {"aggregation": "max_local_centroid", "k": 5, "center": True}),
]


def config_for(dataset: dict[str, Any], k: int, options: dict[str, Any]) -> dict[str, Any]:
    config = route_config(dataset, k, 0, "max", False)
    multi = config["routes"][0]["plugins"]["ai-proxy-multi"]
    negatives = options.pop("negatives", 0)
    multi["balancer"].update(options)
    if negatives:
        # Out-of-scope *train* prompts as "not this" for every domain.
        oos = random.Random(0).sample(dataset["oos"]["train"], negatives)
        for inst in multi["instances"][:-1]:
            inst["negative_examples"] = oos
    return config


async def measure(dataset: dict[str, Any], k: int, options: dict[str, Any]) -> list[str]:
    items = parse_lines([x.decode() for x in labelled_lines(dataset)])
    config = load_data(config_for(dataset, k, dict(options)), {})
    async with router_for(config, "clinc150") as router:
        ev = await evaluate(router, items)
        labels = [*ev.names, ev.catchall]
        index = {n: i for i, n in enumerate(labels)}
        expected = np.array([index[e] for e in ev.expected], dtype=np.intp)
        scores, negative = await router.score_many([i.text for i in items])
    fit_rows, held = cal.split([i.text for i in items], expected.tolist(), 0.3)
    neg = None if negative is None else negative
    fitted = cal.fit(labels, scores[fit_rows], expected[fit_rows], cal.objective("balanced"),
                     router.spec.min_margin, None if neg is None else neg[fit_rows])
    got = cal.picks(scores[held], np.full(len(labels) - 1, fitted.threshold),
                    router.spec.min_margin, None if neg is None else neg[held])
    c = Confusion.from_codes(labels, expected[held], np.where(got < 0, len(labels) - 1, got))
    rate = ev.summary()["decisions_per_second"]
    return [f"{100 * (ev.top1_accuracy() or 0):.1f}", f"{fitted.threshold:.4f}",
            f"{100 * (c.accuracy() or 0):.1f}", f"{100 * (c.catchall_recall() or 0):.1f}",
            f"{100 * (c.balanced_accuracy() or 0):.1f}", f"{rate:,.0f}"]


def main() -> None:
    dataset = load_dataset(sys.argv[1])
    ks = [int(x) for x in sys.argv[2:]] or [16]
    print("| k | variant | top-1 domain acc. (val) | threshold | held-out acc. "
          "| held-out oos recall | held-out balanced | decisions/s |")
    print("|---|---|---|---|---|---|---|---|")
    for k in ks:
        for name, options in VARIANTS:
            row = asyncio.run(measure(dataset, k, options))
            print(f"| {k} | {name} | " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
